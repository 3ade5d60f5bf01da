package messages

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/tidwall/gjson"
)

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v: %s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

// The requests are Anthropic's documented examples, at the URL beside
// each, with the model renamed to a gateway model.
func TestToChat(t *testing.T) {
	for _, tc := range []struct {
		name, source, in, want string
	}{
		{
			name:   "basic",
			source: "https://docs.claude.com/en/api/messages",
			in:     `{"model":"test/chat","max_tokens":1024,"messages":[{"role":"user","content":"Hello, world"}]}`,
			want:   `{"model":"test/chat","max_tokens":1024,"messages":[{"role":"user","content":"Hello, world"}]}`,
		},
		{
			name:   "system blocks, sampling, stop sequences, metadata, ignored fields",
			source: "https://docs.claude.com/en/api/messages",
			in: `{"model":"test/chat","max_tokens":512,"system":[{"type":"text","text":"You are terse."},{"type":"text","text":"Answer in French.","cache_control":{"type":"ephemeral"}}],
				"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["\n\nHuman:"],"metadata":{"user_id":"13803d75"},
				"service_tier":"auto","context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]},
				"messages":[{"role":"user","content":[{"type":"text","text":"Hi","cache_control":{"type":"ephemeral"}}]}]}`,
			want: `{"model":"test/chat","max_tokens":512,"temperature":0.5,"top_p":0.9,"top_k":40,"stop":["\n\nHuman:"],"user":"13803d75",
				"messages":[{"role":"system","content":"You are terse.\n\nAnswer in French."},{"role":"user","content":"Hi"}]}`,
		},
		{
			name:   "tool use round trip, ids byte for byte",
			source: "https://docs.claude.com/en/docs/agents-and-tools/tool-use/implement-tool-use",
			in: `{"model":"test/chat","max_tokens":1024,
				"tools":[{"name":"get_weather","description":"Get the current weather in a given location","input_schema":{"type":"object","properties":{"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"}},"required":["location"]}}],
				"tool_choice":{"type":"any","disable_parallel_tool_use":true},
				"messages":[{"role":"user","content":"What's the weather like in San Francisco?"},
				{"role":"assistant","content":[{"type":"text","text":"<thinking>I need to use get_weather</thinking>"},{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"location":"San Francisco, CA"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A09q90qw90lq917835lq9","content":"15 degrees"}]}]}`,
			want: `{"model":"test/chat","max_tokens":1024,
				"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the current weather in a given location","parameters":{"type":"object","properties":{"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"}},"required":["location"]}}}],
				"tool_choice":"required","parallel_tool_calls":false,
				"messages":[{"role":"user","content":"What's the weather like in San Francisco?"},
				{"role":"assistant","content":"<thinking>I need to use get_weather</thinking>","tool_calls":[{"id":"toolu_01A09q90qw90lq917835lq9","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"San Francisco, CA\"}"}}]},
				{"role":"tool","tool_call_id":"toolu_01A09q90qw90lq917835lq9","content":"15 degrees"}]}`,
		},
		{
			name:   "parallel tool results in order, error result, then the user's text",
			source: "https://docs.claude.com/en/docs/agents-and-tools/tool-use/implement-tool-use",
			in: `{"model":"test/chat","max_tokens":100,"tool_choice":{"type":"tool","name":"get_time"},
				"tools":[{"name":"get_time","input_schema":{"type":"object"}}],
				"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_time","input":{}},{"type":"tool_use","id":"toolu_2","name":"get_time","input":{"tz":"UTC"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"12:00"}]},{"type":"tool_result","tool_use_id":"toolu_2","content":"ConnectionError: the weather service API is not available (HTTP 500)","is_error":true},{"type":"text","text":"and now?"}]}]}`,
			want: `{"model":"test/chat","max_tokens":100,"tool_choice":{"type":"function","function":{"name":"get_time"}},
				"tools":[{"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}}],
				"messages":[{"role":"assistant","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_time","arguments":"{}"}},{"id":"toolu_2","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"UTC\"}"}}]},
				{"role":"tool","tool_call_id":"toolu_1","content":"12:00"},
				{"role":"tool","tool_call_id":"toolu_2","content":"Error: ConnectionError: the weather service API is not available (HTTP 500)"},
				{"role":"user","content":"and now?"}]}`,
		},
		{
			name:   "images: base64 and url sources",
			source: "https://docs.claude.com/en/docs/build-with-claude/vision",
			in: `{"model":"test/chat","max_tokens":1024,"messages":[{"role":"user","content":[
				{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQSkZJRg=="}},
				{"type":"image","source":{"type":"url","url":"https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg"}},
				{"type":"text","text":"Describe this image."}]}]}`,
			want: `{"model":"test/chat","max_tokens":1024,"messages":[{"role":"user","content":[
				{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQSkZJRg=="}},
				{"type":"image_url","image_url":{"url":"https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg"}},
				{"type":"text","text":"Describe this image."}]}]}`,
		},
		{
			name:   "documents: a base64 PDF and a plain-text document",
			source: "https://docs.claude.com/en/docs/build-with-claude/pdf-support",
			in: `{"model":"test/chat","max_tokens":1024,"messages":[{"role":"user","content":[
				{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQ="}},
				{"type":"document","title":"Notes","source":{"type":"text","media_type":"text/plain","data":"The grass is green."},"citations":{"enabled":true}},
				{"type":"text","text":"Summarise them."}]}]}`,
			want: `{"model":"test/chat","max_tokens":1024,"messages":[{"role":"user","content":[
				{"type":"file","file":{"filename":"document.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjQ="}},
				{"type":"text","text":"Notes\n\nThe grass is green."},
				{"type":"text","text":"Summarise them."}]}]}`,
		},
		{
			name:   "extended thinking; earlier thinking blocks dropped",
			source: "https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
			in: `{"model":"test/chat","max_tokens":16000,"thinking":{"type":"enabled","budget_tokens":10000},"stream":true,
				"messages":[{"role":"user","content":"Are there an infinite number of prime numbers such that n mod 4 == 3?"},
				{"role":"assistant","content":[{"type":"thinking","thinking":"Let me analyze this step by step...","signature":"WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEBLLqIOMfFG/UvLEczmEsUjavL...."},{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"},{"type":"text","text":"Yes."}]},
				{"role":"user","content":"Why?"}]}`,
			want: `{"model":"test/chat","max_tokens":16000,"reasoning":{"max_tokens":10000},"stream":true,"stream_options":{"include_usage":true},
				"messages":[{"role":"user","content":"Are there an infinite number of prime numbers such that n mod 4 == 3?"},{"role":"assistant","content":"Yes."},{"role":"user","content":"Why?"}]}`,
		},
		{
			name:   "adaptive thinking; the gateway's own fields pass",
			source: "https://docs.claude.com/en/docs/build-with-claude/adaptive-thinking",
			in: `{"model":"test/chat","max_tokens":100,"thinking":{"type":"adaptive"},"models":["test/chat","test/other"],"provider":{"order":["alpha"]},"session_id":"s-1",
				"messages":[{"role":"user","content":"hi"}]}`,
			want: `{"model":"test/chat","max_tokens":100,"reasoning":{"enabled":true},"models":["test/chat","test/other"],"provider":{"order":["alpha"]},"session_id":"s-1",
				"messages":[{"role":"user","content":"hi"}]}`,
		},
		{
			// What Claude Code 2.1.332 sends (recorded on loopback,
			// /work/shared/design/front-doors.md): adaptive thinking with
			// output_config.effort, and its environment as a system
			// message after the user's.
			name:   "Claude Code: system message in the conversation, effort",
			source: "https://docs.claude.com/en/docs/build-with-claude/effort",
			in: `{"model":"test/chat","max_tokens":32000,"thinking":{"type":"adaptive"},"output_config":{"effort":"high"},
				"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"metadata":{"user_id":"{\"session_id\":\"s\"}"},
				"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.332"},{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
				"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>\nbe careful\n</system-reminder>\n"},{"type":"text","text":"please call:Bash now"}]},
				{"role":"system","content":[{"type":"text","text":"# Environment"}]}]}`,
			want: `{"model":"test/chat","max_tokens":32000,"reasoning":{"enabled":true,"effort":"high"},"user":"{\"session_id\":\"s\"}",
				"messages":[{"role":"system","content":"x-anthropic-billing-header: cc_version=2.1.332\n\nYou are Claude Code."},
				{"role":"user","content":[{"type":"text","text":"<system-reminder>\nbe careful\n</system-reminder>\n"},{"type":"text","text":"please call:Bash now"}]},
				{"role":"system","content":"# Environment"}]}`,
		},
		{
			name:   "structured output",
			source: "https://docs.claude.com/en/docs/build-with-claude/structured-outputs",
			in: `{"model":"test/chat","max_tokens":1024,"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}}},
				"messages":[{"role":"user","content":"Extract the name: John Smith"}]}`,
			want: `{"model":"test/chat","max_tokens":1024,"response_format":{"type":"json_schema","json_schema":{"name":"output","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}}},
				"messages":[{"role":"user","content":"Extract the name: John Smith"}]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, aerr := ToChat([]byte(tc.in))
			if aerr != nil {
				t.Fatalf("%v (fixture from %s)", aerr, tc.source)
			}
			if !sameJSON(t, r.Chat, tc.want) {
				t.Fatalf("got  %s\nwant %s", r.Chat, tc.want)
			}
			if r.Model != "test/chat" || r.Stream != gjson.Get(tc.in, "stream").Bool() {
				t.Fatalf("model %q stream %v", r.Model, r.Stream)
			}
		})
	}
}

// models alone names the models, as on chat.
func TestToChatModelsWithoutModel(t *testing.T) {
	r, aerr := ToChat([]byte(`{"models":["test/a","test/b"],"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"session_id":"s","plugins":[]}`))
	if aerr != nil {
		t.Fatal(aerr)
	}
	if want := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"models":["test/a","test/b"],"plugins":[],"session_id":"s"}`; string(r.Chat) != want {
		t.Fatalf("got  %s\nwant %s", r.Chat, want)
	}
}

func TestToChatCountNeedsNoMaxTokens(t *testing.T) {
	r, aerr := ToChatCount([]byte(`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"Hello, world"}]}`))
	if aerr != nil {
		t.Fatal(aerr)
	}
	if !sameJSON(t, r.Chat, `{"model":"test/chat","messages":[{"role":"user","content":"Hello, world"}]}`) {
		t.Fatalf("got %s", r.Chat)
	}
	if _, aerr := ToChat([]byte(`{"model":"test/chat","messages":[{"role":"user","content":"Hello, world"}]}`)); aerr == nil {
		t.Fatal("a Messages request without max_tokens passed")
	}
}

func TestToChatRefuses(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct{ name, in, msg string }{
		{"empty", ``, "empty"},
		{"not JSON", `{"model":`, "JSON"},
		{"not an object", `[1]`, "object"},
		{"no model", `{"max_tokens":1,` + msgs + `}`, "model"},
		{"no messages", `{"model":"m","max_tokens":1}`, "messages"},
		{"max_tokens zero", `{"model":"m","max_tokens":0,` + msgs + `}`, "max_tokens"},
		{"max_tokens fraction", `{"model":"m","max_tokens":1.5,` + msgs + `}`, "max_tokens"},
		{"unknown field", `{"model":"m","max_tokens":1,"frobnicate":true,` + msgs + `}`, "frobnicate"},
		{"developer role", `{"model":"m","max_tokens":1,"messages":[{"role":"developer","content":"x"}]}`, "role"},
		{"system message with an image", `{"model":"m","max_tokens":1,"messages":[{"role":"system","content":[{"type":"image","source":{"type":"url","url":"u"}}]}]}`, "system"},
		{"effort", `{"model":"m","max_tokens":1,"output_config":{"effort":"extreme"},` + msgs + `}`, "effort"},
		{"output_config member", `{"model":"m","max_tokens":1,"output_config":{"verbosity":"low"},` + msgs + `}`, "verbosity"},
		{"output format", `{"model":"m","max_tokens":1,"output_config":{"format":{"type":"text"}},` + msgs + `}`, "format"},
		{"unknown block", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"search_result"}]}]}`, "search_result"},
		{"document by url", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://x/a.pdf"}}]}]}`, "source.type"},
		{"base64 document not a PDF", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"text/csv","data":"YQ=="}}]}]}`, "PDF"},
		{"tool_use from the user", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]}]}`, "tool_use"},
		{"tool_result from the assistant", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t"}]}]}`, "tool_result"},
		{"tool_use input not an object", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":[1]}]}]}`, "input"},
		{"image source", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]}`, "source"},
		{"server tool", `{"model":"m","max_tokens":1,"tools":[{"type":"web_search_20250305","name":"web_search"}],` + msgs + `}`, "web_search_20250305"},
		{"tool without schema", `{"model":"m","max_tokens":1,"tools":[{"name":"x"}],` + msgs + `}`, "input_schema"},
		{"tool_choice type", `{"model":"m","max_tokens":1,"tool_choice":{"type":"some"},` + msgs + `}`, "tool_choice"},
		{"thinking budget", `{"model":"m","max_tokens":1,"thinking":{"type":"enabled"},` + msgs + `}`, "budget_tokens"},
		{"stop_sequences", `{"model":"m","max_tokens":1,"stop_sequences":"x",` + msgs + `}`, "stop_sequences"},
		{"thinking and reasoning", `{"model":"m","max_tokens":1,"thinking":{"type":"adaptive"},"reasoning":{"effort":"low"},` + msgs + `}`, "reasoning"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, aerr := ToChat([]byte(tc.in))
			if aerr == nil {
				t.Fatal("accepted")
			}
			if aerr.Status != 400 || !strings.Contains(aerr.Error(), tc.msg) {
				t.Fatalf("%d %q, want 400 mentioning %q", aerr.Status, aerr.Error(), tc.msg)
			}
		})
	}
}

func TestFromChat(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{
			name: "text, cached prompt tokens apart",
			in: `{"id":"gen-abc","object":"chat.completion","model":"test/chat","choices":[{"index":0,"message":{"role":"assistant","content":"Hi! My name is Claude.","reasoning":"private"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":12,"completion_tokens":6,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":2,"cache_write_tokens":3}}}`,
			// The shape of https://docs.claude.com/en/api/messages's response example.
			want: `{"id":"msg_abc","type":"message","role":"assistant","model":"test/chat","content":[{"type":"text","text":"Hi! My name is Claude."}],
				"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":6,"cache_creation_input_tokens":3,"cache_read_input_tokens":2}}`,
		},
		{
			name: "tool calls",
			in: `{"id":"gen-t","model":"test/chat","choices":[{"index":0,"message":{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"toolu_01A09q90qw90lq917835lq9","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"San Francisco, CA\"}"}},{"id":"call_2","type":"function","function":{"name":"broken","arguments":"{not json"}}]},"finish_reason":"tool_calls"}],
				"usage":{"prompt_tokens":5,"completion_tokens":9}}`,
			want: `{"id":"msg_t","type":"message","role":"assistant","model":"test/chat","content":[{"type":"text","text":"Let me check."},
				{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"location":"San Francisco, CA"}},
				{"type":"tool_use","id":"call_2","name":"broken","input":{"arguments":"{not json"}}],
				"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":9,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`,
		},
		{
			name: "length, no model named",
			in:   `{"id":"gen-l","choices":[{"index":0,"message":{"role":"assistant","content":"cut"},"finish_reason":"length"}]}`,
			want: `{"id":"msg_l","type":"message","role":"assistant","model":"asked/model","content":[{"type":"text","text":"cut"}],
				"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, aerr := FromChat([]byte(tc.in), "asked/model")
			if aerr != nil {
				t.Fatal(aerr)
			}
			if !sameJSON(t, got, tc.want) {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if _, aerr := FromChat([]byte(`{"choices":[]}`), "m"); aerr == nil || aerr.Status != 502 {
		t.Fatalf("no choice: %v", aerr)
	}
}

func TestStopReasonAndErrorType(t *testing.T) {
	for finish, want := range map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal", "": "end_turn"} {
		if got := StopReason(finish); got != want {
			t.Errorf("StopReason(%q) = %q, want %q", finish, got, want)
		}
	}
	for status, want := range map[int]string{400: "invalid_request_error", 422: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
		403: "permission_error", 404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 502: "api_error",
		503: "overloaded_error", 529: "overloaded_error", 504: "timeout_error"} {
		if got := ErrorType(status); got != want {
			t.Errorf("ErrorType(%d) = %q, want %q", status, got, want)
		}
	}
	if got := string(Envelope(&apierr.Error{Status: 429, Message: "slow down"})); got != `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}` {
		t.Fatalf("envelope %s", got)
	}
}

// A chat stream as the gateway writes it: a text, a parallel pair of
// tool calls, the final usage chunk, [DONE]; a keep-alive between.
const chatStream = `data: {"id":"gen-s","model":"test/chat","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}

data: {"id":"gen-s","model":"test/chat","choices":[{"index":0,"delta":{"content":"Hello"}}]}

: SWITCHYARD PROCESSING
data: {"id":"gen-s","model":"test/chat","choices":[{"index":0,"delta":{"reasoning":"hidden","content":" world"}}]}

data: {"id":"gen-s","model":"test/chat","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}

data: {"id":"gen-s","model":"test/chat","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\":"}}]}}]}

data: {"id":"gen-s","model":"test/chat","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]}}]}

data: {"id":"gen-s","model":"test/chat","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}

data: {"id":"gen-s","model":"test/chat","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,"cost":0.0001}}

data: [DONE]

`

// The events of chatStream, in the shapes of
// https://docs.claude.com/en/docs/build-with-claude/streaming.
const wantEvents = `event: message_start
data: {"type":"message_start","message":{"id":"msg_s","type":"message","role":"assistant","model":"test/chat","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

event: ping
data: {"type":"ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_a","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call_b","name":"get_time","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{}"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":10,"output_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}

event: message_stop
data: {"type":"message_stop"}

`

func TestStream(t *testing.T) {
	// Whole, and one byte at a time: the translation does not depend on
	// how the bytes arrive.
	s := NewStream("asked/model")
	if got := string(s.Close(s.Feed(nil, []byte(chatStream)))); got != wantEvents {
		t.Fatalf("got\n%s\nwant\n%s", got, wantEvents)
	}
	s = NewStream("asked/model")
	var got []byte
	for i := range len(chatStream) {
		got = s.Feed(got, []byte(chatStream[i:i+1]))
	}
	if got = s.Close(got); string(got) != wantEvents {
		t.Fatalf("fed one byte at a time:\n%s", got)
	}
	// Event by event, as a pushed stream writes it.
	s = NewStream("asked/model")
	got = got[:0]
	for _, piece := range strings.SplitAfter(chatStream, "\n\n") {
		got = s.Feed(got, []byte(piece))
	}
	if got = s.Close(got); string(got) != wantEvents {
		t.Fatalf("fed event by event:\n%s", got)
	}
}

func TestStreamEnds(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{
			name: "an error chunk is an error event, and the end",
			in: `data: {"id":"gen-e","choices":[{"index":0,"delta":{"content":"Hi"}}]}

data: {"id":"gen-e","choices":[{"index":0,"delta":{},"finish_reason":"error"}],"error":{"code":502,"message":"upstream failed"}}

data: [DONE]

`,
			want: `message_start content_block_start content_block_delta error:{"type":"error","error":{"type":"api_error","message":"upstream failed"}}`,
		},
		{
			name: "overloaded before any content",
			in: `data: {"id":"gen-e","choices":[{"index":0,"delta":{},"finish_reason":"error"}],"error":{"code":529,"message":"busy"}}

`,
			want: `error:{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`,
		},
		{
			name: "a stream cut off is an error",
			in: `data: {"id":"gen-c","choices":[{"index":0,"delta":{"content":"Hi"}}]}

`,
			want: `message_start content_block_start content_block_delta error:{"type":"error","error":{"type":"api_error","message":"the stream ended before the answer was complete"}}`,
		},
		{
			name: "an empty answer still has message_start, length as max_tokens",
			in: `data: {"id":"gen-x","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}

data: [DONE]`,
			want: `message_start message_delta:max_tokens message_stop`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStream("m")
			out := string(s.Close(s.Feed(nil, []byte(tc.in))))
			var got []string
			for _, ev := range strings.Split(strings.TrimSpace(out), "\n\n") {
				name, data, _ := strings.Cut(ev, "\n")
				name, data = strings.TrimPrefix(name, "event: "), strings.TrimPrefix(data, "data: ")
				switch name {
				case "error":
					name += ":" + data
				case "message_delta":
					name += ":" + gjson.Get(data, "delta.stop_reason").Str
				}
				got = append(got, name)
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), tc.want)
			}
		})
	}
}

// Native is the client's body without the gateway's own fields, the rest
// byte for byte (the native mode's upstream body).
func TestNative(t *testing.T) {
	body := `{"model":"test/claude", "models":["a/b","c/d"],"max_tokens":10,"provider":{"order":["x"]},
 "messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig=="},{"type":"redacted_thinking","data":"abc"}]},
  {"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],"session_id":"s","cache_control":{"type":"ephemeral"}}`
	got := string(Native([]byte(body)))
	want := `{"model":"test/claude","max_tokens":10,
 "messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig=="},{"type":"redacted_thinking","data":"abc"}]},
  {"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],"cache_control":{"type":"ephemeral"}}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	plain := `{"model":"m","max_tokens":1,"messages":[]}`
	if got := string(Native([]byte(plain))); got != plain {
		t.Fatalf("got %s", got)
	}
}
