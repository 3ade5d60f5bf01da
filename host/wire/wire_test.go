package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestIsChunk(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{`{"id":"x","choices":[{"index":0,"delta":{"content":"a"}}]}`, true},
		{`{"choices":[]}`, true},
		{"{\"choices\":[],\r\n\"x\":1}", true},
		{`"a string"`, false},
		{`{"choices":{}}`, false},
		{`{"choices":["x"]}`, false},
		{`{"id":"x"}`, false},
		{`[]`, false},
		{`{"choices":[]`, false},
		{``, false},
	}
	for _, tc := range cases {
		if got := IsChunk([]byte(tc.in)); got != tc.want {
			t.Errorf("IsChunk(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestAdapterCtx(t *testing.T) {
	b := AdapterCtx{Model: `up"model`, Provider: "p", Stream: true, Drop: []string{"top_k", "seed"},
		GenerationID: "gen-1", CatalogModel: "v/m"}.JSON()
	var got struct {
		Model, Provider string
		Stream          bool
		Drop            []string
		GenerationID    string `json:"generation_id"`
		CatalogModel    string `json:"catalog_model"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if got.Model != `up"model` || got.Provider != "p" || !got.Stream || len(got.Drop) != 2 || got.GenerationID != "gen-1" || got.CatalogModel != "v/m" {
		t.Fatalf("%s", b)
	}
	if b := (AdapterCtx{}).JSON(); !gjson.ValidBytes(b) || !gjson.GetBytes(b, "drop").IsArray() || gjson.GetBytes(b, "native").Exists() {
		t.Fatalf("empty ctx %s", b)
	}
	// A native attempt names its API and the client's beta header.
	b = AdapterCtx{Model: "m", Native: "messages", Beta: `a,"b"`}.JSON()
	if !gjson.ValidBytes(b) || gjson.GetBytes(b, "native").Str != "messages" || gjson.GetBytes(b, "beta").Str != `a,"b"` {
		t.Fatalf("native ctx %s", b)
	}
}

func TestChunkAndCompletionIdentity(t *testing.T) {
	id := Identity{GenID: "gen-1", Model: "v/m", Provider: "p"}
	ch := Chunk([]byte(`{"id":"up-1","model":"upstream","choices":[]}`), id)
	for path, want := range map[string]string{"id": "gen-1", "model": "v/m", "provider": "p"} {
		if got := gjson.GetBytes(ch, path).Str; got != want {
			t.Errorf("chunk %s = %q, want %q", path, got, want)
		}
	}
	if !gjson.GetBytes(ch, "created").Exists() {
		t.Error("chunk without created")
	}
	c := Completion([]byte(`{"choices":[]}`), id, "chat.completion")
	if gjson.GetBytes(c, "system_fingerprint").Type != gjson.Null || gjson.GetBytes(c, "object").Str != "chat.completion" {
		t.Errorf("completion %s", c)
	}
	// A plugin's answer: no provider served it.
	r := PluginResult([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`), Identity{GenID: "gen-2", Model: "v/m"})
	if gjson.GetBytes(r, "provider").Exists() || gjson.GetBytes(r, "usage.cost").Raw != "0" {
		t.Errorf("plugin result %s", r)
	}
	chunks := ResultChunks(r, Identity{GenID: "gen-2", Model: "v/m"})
	if len(chunks) != 3 || gjson.GetBytes(chunks[0], "choices.0.delta.content").Str != "hi" ||
		gjson.GetBytes(chunks[1], "choices.0.finish_reason").Str != "stop" || !gjson.GetBytes(chunks[2], "usage").IsObject() {
		t.Errorf("chunks %s", chunks)
	}
	// Tool calls travel in the content delta, each with its index, as
	// OpenAI streams them (a replayed cached answer that called tools).
	r = PluginResult([]byte(`{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[`+
		`{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},`+
		`{"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]}}]}`), Identity{GenID: "gen-3", Model: "v/m"})
	chunks = ResultChunks(r, Identity{GenID: "gen-3", Model: "v/m"})
	d := gjson.GetBytes(chunks[0], "choices.0.delta")
	if d.Get("tool_calls.#").Int() != 2 || d.Get("tool_calls.1.index").Int() != 1 || d.Get("tool_calls.0.function.arguments").Str != `{"city":"Paris"}` ||
		d.Get("tool_calls.1.id").Str != "call_2" || gjson.GetBytes(chunks[1], "choices.0.finish_reason").Str != "tool_calls" {
		t.Errorf("tool call chunks %s", chunks)
	}
}

func TestMetadataNil(t *testing.T) {
	var m *Metadata
	if m.JSON() != nil || string(m.Set([]byte(`{}`))) != `{}` || m.WithStages([]map[string]any{{}}) != nil {
		t.Fatal("a nil metadata must change nothing")
	}
	b := PluginAnswered("v/m", nil).Set([]byte(`{}`))
	if !gjson.GetBytes(b, "service_metadata.pipeline").IsArray() || gjson.GetBytes(b, "service_metadata.strategy").Str != "plugin" {
		t.Fatalf("%s", b)
	}
}

// Completion rewrites the identity in one pass: upstream id, model, object
// (and provider when one served) are replaced, everything else is kept as
// sent, created and system_fingerprint are added only when missing, and
// the result is valid JSON with each key once.
func TestCompletionIdentity(t *testing.T) {
	id := Identity{GenID: "gen-1", Model: "v/m", Provider: "p"}
	for _, tc := range []struct {
		name, in string
		id       Identity
		want     map[string]string // path → raw JSON
	}{
		{"replaces the upstream's", `{"id":"up","object":"x","model":"up-m","provider":"up-p","created":7,"system_fingerprint":"fp","choices":[{"index":0}],"usage":{"prompt_tokens":1}}`, id,
			map[string]string{"id": `"gen-1"`, "object": `"chat.completion"`, "model": `"v/m"`, "provider": `"p"`, "created": `7`, "system_fingerprint": `"fp"`, "choices.0.index": `0`, "usage.prompt_tokens": `1`}},
		{"adds what is missing", `{"choices":[]}`, id,
			map[string]string{"id": `"gen-1"`, "provider": `"p"`, "system_fingerprint": `null`}},
		{"keeps a provider field when none served", `{"provider":"x","choices":[]}`, Identity{GenID: "g", Model: "m"},
			map[string]string{"provider": `"x"`, "id": `"g"`}},
		{"escapes", `{"choices":[]}`, Identity{GenID: "g\"1", Model: "a\\b"},
			map[string]string{"id": `"g\"1"`, "model": `"a\\b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := Completion([]byte(tc.in), tc.id, "chat.completion")
			if !gjson.ValidBytes(out) {
				t.Fatalf("invalid JSON %s", out)
			}
			for path, want := range tc.want {
				if got := gjson.GetBytes(out, path).Raw; got != want {
					t.Errorf("%s = %s, want %s (in %s)", path, got, want, out)
				}
			}
			seen := map[string]bool{}
			gjson.ParseBytes(out).ForEach(func(k, _ gjson.Result) bool {
				if seen[k.Str] {
					t.Errorf("key %q twice in %s", k.Str, out)
				}
				seen[k.Str] = true
				return true
			})
			if !seen["created"] {
				t.Errorf("no created in %s", out)
			}
		})
	}
}

// TestCompletionFacts: what CompletionFacts found in its pass is what
// reading the written completion back finds, duplicates and odd shapes
// included.
func TestCompletionFacts(t *testing.T) {
	for _, in := range append(repairShapes,
		`{"usage":{"prompt_tokens":1,"completion_tokens":2},"usage":{"prompt_tokens":9},"choices":[{"finish_reason":"length"}],"choices":[{"finish_reason":"stop"}]}`,
		`{"id":"x","model":"m","provider":"p","usage":{"total_tokens":5,"completion_tokens":2},"choices":[{"index":0,"finish_reason":null}]}`,
		`{"choices":{"0":{"finish_reason":"stop"}},"usage":null}`,
		`{"usage":{"prompt_tokens":1e40},"choices":[]}`,
	) {
		if gjson.Valid(in) {
			sameFacts(t, in)
		}
	}
}

func FuzzCompletionFacts(f *testing.F) {
	for _, in := range repairShapes {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if gjson.Valid(in) { // what Completion is given: a repaired answer
			sameFacts(t, in)
		}
	})
}

func sameFacts(t *testing.T, in string) {
	t.Helper()
	for _, id := range []Identity{{GenID: "gen-1", Model: "a/b", Provider: "p"}, {GenID: "gen-2", Model: "a/b"}} {
		out, f := CompletionFacts([]byte(in), id, "chat.completion")
		u, ok := f.Usage()
		wu, wok := ParseUsage(out)
		if u != wu || ok != wok {
			t.Fatalf("%q: usage %+v %v, read back %+v %v", in, u, ok, wu, wok)
		}
		if got, want := f.FinishReason(), gjson.GetBytes(out, "choices.0.finish_reason").Str; got != want {
			t.Fatalf("%q: finish %q, read back %q", in, got, want)
		}
	}
}

// BenchmarkCompletionFacts is what the gateway does with a non-streaming
// answer after its repair: the completion written with our identity, its
// usage and finish reason read — in one pass (facts) and by reading the
// written completion back (readBack, as before).
func BenchmarkCompletionFacts(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1763856000,"model":"gpt-4o-mini-2024-07-18",` +
		`"system_fingerprint":"fp_fake","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("hello ", 20) +
		`","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":250,"completion_tokens":20,"total_tokens":270}}`)
	id := Identity{GenID: "gen-08DrvsAbCdEfGhIjKlMnOpQr", Model: "bench/chat", Provider: "fake"}
	b.Run("facts", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, f := CompletionFacts(body, id, "chat.completion")
			if _, ok := f.Usage(); !ok || f.FinishReason() != "stop" {
				b.Fatal("no usage or finish reason")
			}
		}
	})
	b.Run("readBack", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out := Completion(body, id, "chat.completion")
			if _, ok := ParseUsage(out); !ok || gjson.GetBytes(out, "choices.0.finish_reason").Str != "stop" {
				b.Fatal("no usage or finish reason")
			}
		}
	})
}

// BenchmarkResponseSizes is the non-streaming answer's path at the request
// path's sizes (docs/performance.md): the repair check, then the
// completion written with our identity and its usage and finish reason
// read. An agent's answer with a long content or many tool calls; the
// cost per byte must not grow with the size.
func BenchmarkResponseSizes(b *testing.B) {
	id := Identity{GenID: "gen-08DrvsAbCdEfGhIjKlMnOpQr", Model: "bench/chat", Provider: "fake"}
	for _, size := range []int{1 << 10, 32 << 10, 128 << 10, 1 << 20} {
		body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1763856000,"model":"gpt-4o-mini",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("the fix \\\"works\\\" now\\n", size/24) +
			`","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":250,"completion_tokens":20,"total_tokens":270}}`)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				fixed, _, ok := repair(body, "message")
				if !ok {
					b.Fatal("repair refused a valid completion")
				}
				if fixed == nil {
					fixed = body
				}
				_, f := CompletionFacts(fixed, id, "chat.completion")
				if _, ok := f.Usage(); !ok || f.FinishReason() != "stop" {
					b.Fatal("no usage or finish reason")
				}
			}
		})
	}
}

// OpenRouter's native_finish_reason (issue 32): beside every finish_reason
// an upstream gave without one, in a completion and in a finishing chunk;
// an adapter's own is kept.
func TestNativeFinishReason(t *testing.T) {
	id := Identity{GenID: "gen-1", Model: "v/m"}
	for _, tc := range []struct{ in, want string }{
		{`{"choices":[{"index":0,"message":{"content":"a\nb"},"finish_reason":"stop"},{"index":1,"finish_reason":null}]}`,
			`[{"index":0,"message":{"content":"a\nb"},"finish_reason":"stop","native_finish_reason":"stop"},{"index":1,"finish_reason":null,"native_finish_reason":null}]`},
		{`{"choices":[{"index":0,"finish_reason":"stop","native_finish_reason":"end_turn"}]}`,
			`[{"index":0,"finish_reason":"stop","native_finish_reason":"end_turn"}]`},
		{`{"choices":[{"index":0}]}`, `[{"index":0}]`},
		{`{"choices":[]}`, `[]`},
	} {
		out := Completion([]byte(tc.in), id, "chat.completion")
		if got := gjson.GetBytes(out, "choices").Raw; got != tc.want || !gjson.ValidBytes(out) {
			t.Errorf("%s: choices %s, want %s", tc.in, got, tc.want)
		}
		ch := NativeFinishReasons([]byte(`{"id":"x","choices":` + gjson.Get(tc.in, "choices").Raw + `,"usage":null}`))
		if got := gjson.GetBytes(ch, "choices").Raw; got != tc.want || !gjson.ValidBytes(ch) {
			t.Errorf("chunk %s: choices %s, want %s", tc.in, got, tc.want)
		}
	}
	if out := Completion([]byte(`{"data":[{"finish_reason":"x"}],"choices":[{"finish_reason":"stop"}]}`), id, "list"); gjson.GetBytes(out, "choices.0.native_finish_reason").Exists() {
		t.Errorf("added outside a chat completion: %s", out)
	}
}
