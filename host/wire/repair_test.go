package wire

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

func TestRepairChunk(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
		// want maps gjson paths to the raw JSON expected ("" = absent).
		want  map[string]string
		fixed bool
	}{
		{name: "healthy", in: `{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`, ok: true,
			want: map[string]string{"choices.0.delta.content": `"hi"`}},
		{name: "content a number", in: `{"choices":[{"index":0,"delta":{"content":123}}]}`, ok: true, fixed: true,
			want: map[string]string{"choices.0.delta.content": ""}},
		{name: "choices an object", in: `{"choices":{"index":0,"delta":{"content":"x"}}}`, ok: false, fixed: true},
		{name: "delta a string", in: `{"choices":[{"index":0,"delta":"oops"}]}`, ok: true, fixed: true,
			want: map[string]string{"choices.0.delta": `{}`}},
		{name: "choice not an object", in: `{"choices":[7,{"index":1,"delta":{"content":"x"}}]}`, ok: true, fixed: true,
			want: map[string]string{"choices.#": `1`, "choices.0.delta.content": `"x"`}},
		{name: "invalid UTF-8", in: "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"caf\xe9\"}}]}", ok: true, fixed: true,
			want: map[string]string{"choices.0.delta.content": `"caf` + "\uFFFD" + `"`}},
		{name: "usage only", in: `{"usage":{"prompt_tokens":1}}`, ok: true,
			want: map[string]string{"choices": `[]`}},
		{name: "usage a string", in: `{"choices":[],"usage":"lots"}`, ok: true, fixed: true, want: map[string]string{"usage": ""}},
		{name: "no index, no delta", in: `{"choices":[{"finish_reason":"stop"}]}`, ok: true,
			want: map[string]string{"choices.0.index": `0`, "choices.0.delta": `{}`}},
		{name: "finish_reason a number", in: `{"choices":[{"index":0,"delta":{},"finish_reason":1}]}`, ok: true, fixed: true,
			want: map[string]string{"choices.0.finish_reason": ""}},
		{name: "tool call arguments an object", in: `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":{"a":1}}}]}}]}`,
			ok: true, fixed: true, want: map[string]string{"choices.0.delta.tool_calls.0.function.arguments": "", "choices.0.delta.tool_calls.0.function.name": `"f"`}},
		{name: "tool_calls an object", in: `{"choices":[{"index":0,"delta":{"tool_calls":{"a":1}}}]}`, ok: true, fixed: true,
			want: map[string]string{"choices.0.delta.tool_calls": ""}},
		{name: "not JSON", in: `{"choices":[`, ok: false, fixed: true},
		{name: "an array", in: `[1,2]`, ok: false, fixed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, fixes, ok := RepairChunk([]byte(tc.in))
			if ok != tc.ok || (len(fixes) > 0) != tc.fixed {
				t.Fatalf("ok %v fixes %q; want ok %v, fixed %v", ok, fixes, tc.ok, tc.fixed)
			}
			if !ok {
				return
			}
			if !utf8.Valid(out) || !json.Valid(out) || !IsChunk(out) {
				t.Fatalf("repaired chunk is not a valid chunk: %q", out)
			}
			for path, want := range tc.want {
				if got := gjson.GetBytes(out, path).Raw; got != want {
					t.Errorf("%s = %s, want %s (chunk %s)", path, got, want, out)
				}
			}
		})
	}
}

func TestRepairCompletion(t *testing.T) {
	for _, tc := range []struct {
		name, in, path, want string
		ok                   bool
	}{
		{"content a number", `{"choices":[{"index":0,"message":{"role":"assistant","content":123},"finish_reason":"stop"}]}`, "choices.0.message.content", "", true},
		{"content parts", `{"choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}`, "choices.0.message.content", `"ab"`, true},
		{"message a string", `{"choices":[{"index":0,"message":"hi"}]}`, "choices.0.message.content", `null`, true},
		{"invalid UTF-8", "{\"choices\":[{\"index\":0,\"message\":{\"content\":\"\xff\xfe ok\"}}]}", "choices.0.message.content", "\"\uFFFD ok\"", true},
		{"no choices", `{"id":"x"}`, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, fixes, ok := RepairCompletion([]byte(tc.in))
			if ok != tc.ok || len(fixes) == 0 {
				t.Fatalf("ok %v fixes %q", ok, fixes)
			}
			if !ok {
				return
			}
			if got := gjson.GetBytes(out, tc.path).Raw; got != tc.want || !utf8.Valid(out) {
				t.Fatalf("%s = %s, want %s (%s)", tc.path, got, tc.want, out)
			}
			if strings.Contains(string(out), "123") {
				t.Fatalf("the wrong-typed field survived: %s", out)
			}
		})
	}
}
