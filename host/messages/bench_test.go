package messages

import (
	"fmt"
	"strings"
	"testing"
)

// benchChatStream is a gateway chat stream of n text chunks, a tool call
// in pieces, the usage chunk and [DONE]: what a Messages client's stream
// is translated from, event by event.
func benchChatStream(n int) []byte {
	var b strings.Builder
	b.WriteString(`data: {"id":"gen-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for i := range n {
		fmt.Fprintf(&b, `data: {"id":"gen-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"word %d, \"quoted\" "},"finish_reason":null}]}`+"\n\n", i)
	}
	b.WriteString(`data: {"id":"gen-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}` + "\n\n")
	b.WriteString(`data: {"id":"gen-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}` + "\n\n")
	b.WriteString(`data: {"id":"gen-1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":40,"total_tokens":51,"cost":0.0001}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// BenchmarkStream: the chat stream of a 20-chunk answer translated into
// Messages events (per stream; bytes are the chat stream's).
func BenchmarkStream(b *testing.B) {
	chat := benchChatStream(20)
	b.SetBytes(int64(len(chat)))
	b.ReportAllocs()
	var out []byte
	for b.Loop() {
		s := NewStream("m")
		out = s.Feed(out[:0], chat)
		out = s.Close(out)
	}
}

// BenchmarkToChat: a Messages request of about 1 KB and 32 KB (a system
// prompt, tools, a tool round trip) translated into the chat request.
func BenchmarkToChat(b *testing.B) {
	for _, size := range []int{1 << 10, 32 << 10} {
		system := strings.Repeat("You are a careful assistant. ", size/29)
		body := []byte(`{"model":"m","max_tokens":1024,"stream":true,"system":[{"type":"text","text":` + fmt.Sprintf("%q", system) + `,"cache_control":{"type":"ephemeral"}}],` +
			`"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],` +
			`"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"18°C"}]}]}`)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ToChat(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
