package responses

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkStream: a gateway chat stream of 20 text chunks and a tool
// call translated into Responses events (per stream; bytes are the chat
// stream's).
func BenchmarkStream(b *testing.B) {
	var sb strings.Builder
	for i := range 20 {
		fmt.Fprintf(&sb, `data: {"id":"gen-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"word %d, \"quoted\" "},"finish_reason":null}]}`+"\n\n", i)
	}
	sb.WriteString(`data: {"id":"gen-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}` + "\n\n")
	sb.WriteString(`data: {"id":"gen-1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":40,"total_tokens":51,"cost":0.0001}}` + "\n\n")
	sb.WriteString("data: [DONE]\n\n")
	chat := []byte(sb.String())
	b.SetBytes(int64(len(chat)))
	b.ReportAllocs()
	for b.Loop() {
		s := NewStream(Echo{})
		_ = s.Feed(chat)
		_ = s.End()
	}
}

// BenchmarkToChat: a Responses request of about 1 KB and 32 KB
// (instructions, a function tool, a tool round trip as input items)
// translated into the chat request.
func BenchmarkToChat(b *testing.B) {
	for _, size := range []int{1 << 10, 32 << 10} {
		instr := strings.Repeat("You are a careful assistant. ", size/29)
		body := []byte(`{"model":"m","stream":true,"instructions":` + fmt.Sprintf("%q", instr) + `,` +
			`"tools":[{"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],` +
			`"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in Paris?"}]},` +
			`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
			`{"type":"function_call_output","call_id":"call_1","output":"18°C"}]}`)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ToChat(body, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
