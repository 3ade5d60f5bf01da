package flow

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/agentbody"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// stripChatNullsOneByOne is what stripChatNulls did before issue 29: one
// sjson delete (a parse and a copy of the whole body) per null. It stays
// as the reference the one-pass walk must agree with.
func stripChatNullsOneByOne(body []byte) []byte {
	del := func(path string) { body, _ = sjson.DeleteBytes(body, path) }
	for _, k := range validate.ChatNullable {
		if r := gjson.GetBytes(body, k); r.Exists() && r.Type == gjson.Null {
			del(k)
		}
	}
	gjson.GetBytes(body, "tools").ForEach(func(i, t gjson.Result) bool {
		for _, kind := range []string{"function", "custom"} {
			t.Get(kind).ForEach(func(k, v gjson.Result) bool {
				if v.Type == gjson.Null && k.Str != "strict" {
					del("tools." + i.String() + "." + kind + "." + k.Str)
				}
				return true
			})
		}
		return true
	})
	// Backwards, so that a delete does not move the next one's index.
	msgs := gjson.GetBytes(body, "messages").Array()
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, k := range []string{"function_call", "name"} {
			if r := msgs[i].Get(k); r.Exists() && r.Type == gjson.Null {
				del(fmt.Sprintf("messages.%d.%s", i, k))
			}
		}
	}
	if gjson.GetBytes(body, "stream_options.include_obfuscation").Exists() {
		del("stream_options.include_obfuscation")
	}
	return body
}

func TestStripChatNulls(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","stream":null,"messages":[{"role":"user","content":"hi","name":null}],"user":null}`,
		`{"stream":null,"stream_options":null,"metadata":null,"modalities":null,"response_format":null,"tools":null,"tool_choice":null,"user":null,"model":"m","messages":[]}`,
		`{"model":"m","messages":[{"role":"assistant","content":null,"name":null,"function_call":null},{"name":null,"role":"user","content":"x"}],"temperature":null}`,
		`{"model":"m","tools":[{"type":"function","function":{"name":"f","description":null,"parameters":null,"strict":null}},{"type":"custom","custom":{"name":"c","format":null}}],"messages":[{"role":"user","content":"null"}]}`,
		"{\n  \"model\": \"m\",\n  \"user\": null,\n  \"messages\": [ { \"role\": \"user\", \"content\": \"x\", \"name\": null } ]\n}",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false},"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","stream":true,"stream_options":{"include_obfuscation":null},"user":null,"messages":[{"role":"user","content":"x"}]}`,
		string(agentbody.Chat("m", false, 32<<10)),
	} {
		want := string(stripChatNullsOneByOne([]byte(body)))
		got := string(stripChatNulls([]byte(body)))
		if got != want && gjson.Parse(got).String() != gjson.Parse(want).String() {
			t.Errorf("stripChatNulls(%.200s)\n got %.200s\nwant %.200s", body, got, want)
		}
		if !gjson.Valid(got) {
			t.Errorf("stripChatNulls(%.200s) = invalid JSON %.200s", body, got)
		}
	}
}

// A body of many nulls is stripped in work linear in its size: the bytes
// allocated (a count, not a time) stay a small multiple of the body's.
// Deleting them one by one allocated the body's size once per null: 10 MB
// times 100,000.
func TestStripChatNullsLinear(t *testing.T) {
	for _, n := range []int{1000, 100000} {
		body := []byte(`{"model":"m","messages":[` + strings.Repeat(`{"role":"user","content":"x","name":null},`, n-1) +
			`{"role":"user","content":"x","name":null}]}`)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out := stripChatNulls(body)
		runtime.ReadMemStats(&after)
		if strings.Contains(string(out), "null") || !gjson.ValidBytes(out) {
			t.Fatalf("%d nulls: not stripped: %.100s", n, out)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(8*len(body))+1<<20 {
			t.Fatalf("%d nulls in %d bytes: %d bytes allocated", n, len(body), alloc)
		}
	}
}

func BenchmarkStripChatNulls(b *testing.B) {
	for _, size := range agentbody.Sizes {
		body := agentbody.Chat("m", false, size)
		b.Run(agentbody.Name(size), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				stripChatNulls(body)
			}
		})
	}
}
