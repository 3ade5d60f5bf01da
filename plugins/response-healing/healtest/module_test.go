//go:build !wasip1

// Package healtest runs the built response-healing module (make wasm):
// the same answers as its native tests, through the Wasm boundary and
// through a gateway on loopback, and its per-call cost.
package healtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/switchyard/switchyard/plugins/response-healing/heal"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

type row struct {
	ID      string          `json:"id"`
	Format  string          `json:"format"`
	Schema  json.RawMessage `json:"schema"`
	Content string          `json:"content"`
}

func rows(t testing.TB) []row {
	var rs []row
	for _, split := range []string{"dev", "heldout"} {
		f, err := os.Open(filepath.Join(gatewaytest.Root(), "plugins", "response-healing", "heal", "testdata", "eval", split+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r row
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		f.Close()
	}
	return rs
}

func request(r row) string {
	b := `{"model":"test/chat","messages":[{"role":"user","content":"JSON please"}]}`
	switch r.Format {
	case "":
	case "json_schema":
		b, _ = sjson.Set(b, "response_format", map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "a"}})
		if len(r.Schema) > 0 {
			b, _ = sjson.SetRaw(b, "response_format.json_schema.schema", string(r.Schema))
		}
	default:
		b, _ = sjson.Set(b, "response_format.type", r.Format)
	}
	return b
}

const ctx0 = `{"config":{"id":"response-healing"},"model":"test/chat","scope":"global"}`

// withState is ctx with the state pre_request returned, as the host
// passes it.
func withState(fields [][]byte) []byte {
	if len(fields) > 3 && len(fields[3]) > 0 {
		return []byte(ctx0[:len(ctx0)-1] + `,"state":` + string(fields[3]) + `}`)
	}
	return []byte(ctx0)
}

func result(content string) []byte {
	b, _ := sjson.Set(`{"id":"gen-1","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":""}}]}`, "choices.0.message.content", content)
	return []byte(b)
}

// The module answers exactly what package heal answers natively (the
// tests of which are the healer's), on every case of the evaluation set.
func TestModuleMatchesNative(t *testing.T) {
	mod := gatewaytest.BuiltModule(t, "response-healing", nil)
	for _, r := range rows(t) {
		req := []byte(request(r))
		pre, err := mod.Call(context.Background(), abi.HookPreRequest, []byte(ctx0), req)
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		npre, err := sdk.Run(heal.PreRequest, []byte(ctx0), req)
		if err != nil {
			t.Fatal(err)
		}
		same(t, r.ID+" pre_request", pre, npre)
		res := result(r.Content)
		post, err := mod.Call(context.Background(), abi.HookPostResponse, withState(pre.Fields), res)
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		npost, err := sdk.Run(heal.PostResponse, withState(npre), res)
		if err != nil {
			t.Fatal(err)
		}
		same(t, r.ID+" post_response", post, npost)
	}
}

func same(t *testing.T, what string, got *wasm.Output, want [][]byte) {
	t.Helper()
	if len(got.Fields) != len(want) {
		t.Fatalf("%s: %d fields from the module, %d natively", what, len(got.Fields), len(want))
	}
	for i := range want {
		if !bytes.Equal(got.Field(i), want[i]) {
			t.Fatalf("%s field %d: module %q, native %q", what, i, got.Field(i), want[i])
		}
	}
}

// Through a gateway: an answer to a request for JSON is repaired and the
// stage says what was repaired; the same answer to a request that did not
// ask for JSON, or to a stream, reaches the client untouched.
func TestGatewayHealsOnlyWhenJSONRequested(t *testing.T) {
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	reply := "Sure! Here it is:\n```json\n{name: 'Ada', \"age\": 36,}\n```"
	g.Upstreams["alpha"].SetFaults(demo.Faults{Reply: reply})
	post := func(body string) gjson.Result {
		t.Helper()
		resp, b, err := g.Request("POST", "/chat/completions", body, "X-Service-Metadata", "enabled")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v %d %s", err, resp.StatusCode, b)
		}
		return gjson.ParseBytes(b)
	}
	base := `{"model":"test/chat","messages":[{"role":"user","content":"Ada as JSON"}],"plugins":[{"id":"response-healing"}]`
	schema := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]}`
	body := post(base + `,"response_format":{"type":"json_schema","json_schema":{"name":"person","schema":` + schema + `}}}`)
	if got := body.Get("choices.0.message.content").Str; got != `{"name": "Ada", "age": 36}` {
		t.Fatalf("healed %q", got)
	}
	var stage gjson.Result
	body.Get("service_metadata.pipeline").ForEach(func(_, s gjson.Result) bool {
		if s.Get("name").Str == "response-healing" && s.Get("hook").Str == "post_response" {
			stage = s
		}
		return true
	})
	if d := stage.Get("data"); d.Get("repaired").Int() != 1 || d.Get("repairs").Raw != `["fence","trailing_comma","unquoted_key","single_quotes"]` || !d.Get("schema_valid").Bool() {
		t.Fatalf("stage %s", stage.Raw)
	}
	for _, rf := range []string{``, `,"response_format":{"type":"text"}`} {
		body = post(base + rf + `}`)
		if got := body.Get("choices.0.message.content").Str; got != reply {
			t.Fatalf("response_format %q: the answer changed to %q", rf, got)
		}
	}
	// A stream asked for JSON: its chunks pass as they came.
	resp, b, err := g.Request("POST", "/chat/completions", base+`,"stream":true,"response_format":{"type":"json_object"}}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %s", err, b)
	}
	var text strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
			text.WriteString(gjson.Get(data, "choices.0.delta.content").Str)
		}
	}
	if text.String() != reply {
		t.Fatalf("streamed %q", text.String())
	}
}

// BenchmarkResponseHealingModule is the module's per-call cost through the
// host: post_response on a broken answer of 1, 10 and 100 KB (a fenced
// object with trailing commas, unquoted keys and single quotes), asked for
// as json_object and as json_schema (repaired value checked against the
// schema), and on a valid one.
func BenchmarkResponseHealingModule(b *testing.B) {
	mod := gatewaytest.BuiltModule(b, "response-healing", nil)
	schema := `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","required":["id","name"]}}},"required":["items"]}`
	for _, kb := range []int{1, 10, 100} {
		var broken, valid strings.Builder
		broken.WriteString("Here you go:\n```json\n{items: [")
		valid.WriteString(`{"items": [`)
		for i := 0; broken.Len() < kb<<10; i++ {
			if i > 0 {
				valid.WriteString(", ")
			}
			broken.WriteString(`{id: 1, 'name': 'an item with a name', "tags": ["a", "b",],}, `)
			valid.WriteString(`{"id": 1, "name": "an item with a name", "tags": ["a", "b"]}`)
		}
		broken.WriteString("]}\n```\nAnything else?")
		valid.WriteString("]}")
		for _, c := range []struct{ name, state, content string }{
			{"json_object/broken", `{"format":"json_object"}`, broken.String()},
			{"json_schema/broken", `{"format":"json_schema","schema":` + schema + `}`, broken.String()},
			{"json_object/valid", `{"format":"json_object"}`, valid.String()},
		} {
			ctx := []byte(ctx0[:len(ctx0)-1] + `,"state":` + c.state + `}`)
			res := result(c.content)
			b.Run(c.name+"/"+strconv.Itoa(kb)+"KB", func(b *testing.B) {
				out, err := mod.Call(context.Background(), abi.HookPostResponse, ctx, res)
				if err != nil || (len(out.Field(1)) > 0) != strings.HasSuffix(c.name, "broken") {
					b.Fatalf("%v %s", err, out.Field(2))
				}
				b.SetBytes(int64(len(res)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := mod.Call(context.Background(), abi.HookPostResponse, ctx, res); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
