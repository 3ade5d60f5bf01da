package responses

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Request fixtures are OpenAI's documented payloads (model names kept),
// from:
//   - https://platform.openai.com/docs/api-reference/responses/create
//     (text input, image input, functions, reasoning examples)
//   - https://platform.openai.com/docs/guides/function-calling (the
//     function_call / function_call_output round trip)
//   - https://platform.openai.com/docs/guides/structured-outputs
//     (text.format json_schema)
func TestToChat(t *testing.T) {
	cases := []struct {
		name, body string
		want       map[string]string // gjson path in the chat body → value ("<absent>": must not exist)
	}{
		{"text input", `{"model":"gpt-4.1","input":"Tell me a three sentence bedtime story about a unicorn."}`, map[string]string{
			"model": "gpt-4.1", "messages.#": "1", "messages.0.role": "user",
			"messages.0.content": "Tell me a three sentence bedtime story about a unicorn.", "input": "<absent>", "stream": "<absent>",
		}},
		{"image input", `{"model":"gpt-4.1","input":[{"role":"user","content":[{"type":"input_text","text":"what is in this image?"},{"type":"input_image","image_url":"https://upload.wikimedia.org/wikipedia/commons/thumb/d/dd/Gfp-wisconsin-madison-the-nature-boardwalk.jpg/2560px-Gfp-wisconsin-madison-the-nature-boardwalk.jpg"}]}]}`, map[string]string{
			"messages.0.content.0.type": "text", "messages.0.content.0.text": "what is in this image?",
			"messages.0.content.1.type": "image_url", "messages.0.content.1.image_url.url": "https://upload.wikimedia.org/wikipedia/commons/thumb/d/dd/Gfp-wisconsin-madison-the-nature-boardwalk.jpg/2560px-Gfp-wisconsin-madison-the-nature-boardwalk.jpg",
		}},
		{"functions", `{"model":"gpt-4.1","input":"What is the weather like in Boston today?","tools":[{"type":"function","name":"get_current_weather","description":"Get the current weather in a given location","parameters":{"type":"object","properties":{"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location","unit"]}}],"tool_choice":"auto"}`, map[string]string{
			"tools.0.type": "function", "tools.0.function.name": "get_current_weather",
			"tools.0.function.description":           "Get the current weather in a given location",
			"tools.0.function.parameters.required.0": "location", "tool_choice": "auto",
		}},
		{"reasoning", `{"model":"o3-mini","input":"How much wood would a woodchuck chuck?","reasoning":{"effort":"high"}}`, map[string]string{
			"reasoning.effort": "high", "reasoning.summary": "<absent>",
		}},
		{"round trip", `{"model":"gpt-4.1","input":[{"role":"user","content":"What's the weather like in Paris today?"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA"},{"type":"function_call","id":"fc_12345xyz","call_id":"call_12345xyz","name":"get_weather","arguments":"{\"latitude\":48.8566,\"longitude\":2.3522}"},{"type":"function_call_output","call_id":"call_12345xyz","output":"{\"temperature\": 14}"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":true}]}`, map[string]string{
			"messages.#": "3", "messages.1.role": "assistant", "messages.1.content": "",
			"messages.1.tool_calls.0.id": "call_12345xyz", "messages.1.tool_calls.0.function.name": "get_weather",
			"messages.1.tool_calls.0.function.arguments": `{"latitude":48.8566,"longitude":2.3522}`,
			"messages.2.role": "tool", "messages.2.tool_call_id": "call_12345xyz", "messages.2.content": `{"temperature": 14}`,
			"tools.0.function.strict": "true",
		}},
		{"structured output", `{"model":"gpt-4o-2024-08-06","input":[{"role":"system","content":"Extract the event information."},{"role":"user","content":"Alice and Bob are going to a science fair on Friday."}],"text":{"format":{"type":"json_schema","name":"calendar_event","schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false},"strict":true}}}`, map[string]string{
			"response_format.type": "json_schema", "response_format.json_schema.name": "calendar_event",
			"response_format.json_schema.strict": "true", "response_format.json_schema.schema.required.0": "name",
			"messages.0.role": "system", "text": "<absent>",
		}},
		{"instructions, limits, gateway fields", `{"model":"a/b","models":["c/d"],"instructions":"Talk like a pirate.","input":"Are semicolons optional in JavaScript?","max_output_tokens":100,"stream":true,"store":true,"include":["reasoning.encrypted_content"],"prompt_cache_key":"k","truncation":"auto","provider":{"sort":"price"},"plugins":[{"id":"web"}],"session_id":"s1","temperature":0.2,"top_p":0.9,"user":"u","metadata":{"a":"b"},"parallel_tool_calls":false}`, map[string]string{
			"messages.0.role": "system", "messages.0.content": "Talk like a pirate.", "messages.1.role": "user",
			"max_tokens": "100", "stream": "true", "models.0": "c/d", "provider.sort": "price", "plugins.0.id": "web",
			"session_id": "s1", "temperature": "0.2", "top_p": "0.9", "user": "u", "metadata.a": "b", "parallel_tool_calls": "false",
			"store": "<absent>", "include": "<absent>", "prompt_cache_key": "<absent>", "truncation": "<absent>", "max_output_tokens": "<absent>",
		}},
		{"assistant history and developer", `{"model":"m","input":[{"role":"developer","content":"dev"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"one "},{"type":"output_text","text":"two"}]},{"role":"user","content":"go on"}]}`, map[string]string{
			"messages.0.role": "developer", "messages.1.role": "assistant", "messages.1.content": "one two", "messages.2.content": "go on",
		}},
		{"assistant text then calls are one turn", `{"model":"m","input":[{"role":"user","content":"q"},{"role":"assistant","content":"let me look"},{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call","call_id":"b","name":"g","arguments":"{}"},{"type":"function_call_output","call_id":"a","output":"1"},{"type":"function_call_output","call_id":"b","output":"2"}]}`, map[string]string{
			"messages.#": "4", "messages.1.content": "let me look", "messages.1.tool_calls.#": "2", "messages.1.tool_calls.1.id": "b",
			"messages.3.tool_call_id": "b",
		}},
		{"a namespace's functions flattened, cached-only web search left out", `{"model":"m","input":"x","tools":[{"type":"function","name":"a"},{"type":"namespace","name":"ns","description":"d","tools":[{"type":"function","name":"b","parameters":{"type":"object"}},{"type":"function","name":"c"}]},{"type":"web_search","external_web_access":false}]}`, map[string]string{
			"tools.#": "3", "tools.0.function.name": "a", "tools.1.function.name": "b", "tools.1.function.parameters.type": "object", "tools.2.function.name": "c",
		}},
		{"instructions as items", `{"model":"m","instructions":[{"role":"developer","content":"rules"}],"input":"x"}`, map[string]string{
			"messages.#": "2", "messages.0.role": "developer", "messages.0.content": "rules", "messages.1.content": "x",
		}},
		{"named tool choice and web search", `{"model":"m","input":"x","tools":[{"type":"web_search_preview"},{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}}`, map[string]string{
			"tools.0.type": "service:web_search", "tools.1.function.name": "f", "tool_choice.function.name": "f",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ToChat([]byte(tc.body), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !gjson.ValidBytes(r.Chat) {
				t.Fatalf("chat body is not JSON: %s", r.Chat)
			}
			chat := gjson.ParseBytes(r.Chat)
			for path, want := range tc.want {
				got := chat.Get(path)
				if want == "<absent>" {
					if got.Exists() {
						t.Errorf("%s = %s, want it absent", path, got.Raw)
					}
					continue
				}
				if got.String() != want {
					t.Errorf("%s = %q, want %q (%s)", path, got.String(), want, r.Chat)
				}
			}
			if r.Stream != chat.Get("stream").Bool() {
				t.Errorf("Stream %v", r.Stream)
			}
		})
	}
}

func TestToChatRefuses(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"empty", ``, "empty"},
		{"not an object", `[1]`, "JSON object"},
		{"no input", `{"model":"m"}`, "input: required"},
		{"conversation", `{"model":"m","input":"x","conversation":"conv_1"}`, "conversation"},
		{"background", `{"model":"m","input":"x","background":true}`, "background"},
		{"item_reference", `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].type"},
		{"file_id image", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`, "input[0].content[0].file_id"},
		{"hosted tool", `{"model":"m","input":"x","tools":[{"type":"code_interpreter"}]}`, "tools[0].type"},
		{"call without id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id"},
		{"output without id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id"},
		{"bad format", `{"model":"m","input":"x","text":{"format":{"type":"yaml"}}}`, "text.format.type"},
		{"hosted tool in a namespace", `{"model":"m","input":"x","tools":[{"type":"namespace","name":"n","tools":[{"type":"web_search"}]}]}`, "tools[0].tools[0].type"},
		{"bad instructions item", `{"model":"m","instructions":[{"role":"robot","content":"x"}],"input":"x"}`, "instructions[0].role"},
		{"bad tool choice", `{"model":"m","input":"x","tool_choice":"sometimes"}`, "tool_choice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToChat([]byte(tc.body), nil)
			if err == nil || err.Status != 400 || !strings.Contains(err.Message, tc.want) {
				t.Fatalf("error %v, want a 400 naming %q", err, tc.want)
			}
		})
	}
}

func TestFromChat(t *testing.T) {
	echo := Echo{Instructions: `"be brief"`, Tools: `[{"type":"function","name":"f"}]`, MaxOutputTokens: "5"}
	cases := []struct {
		name, chat string
		want       map[string]string
	}{
		{"text", `{"id":"gen-abc","object":"chat.completion","created":1741476542,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":1},"cost":0.5}}`, map[string]string{
			"id": "resp_abc", "object": "response", "created_at": "1741476542", "status": "completed", "model": "m",
			"output.0.id": "msg_abc_0", "output.0.content.0.text": "Hi", "output.0.content.0.annotations.#": "0",
			"usage.input_tokens": "10", "usage.output_tokens": "2", "usage.total_tokens": "12",
			"usage.input_tokens_details.cached_tokens": "4", "usage.output_tokens_details.reasoning_tokens": "1", "usage.cost": "0.5",
			"instructions": "be brief", "tools.0.name": "f", "max_output_tokens": "5", "incomplete_details": "", "error": "",
		}},
		{"calls", `{"id":"gen-x","created":1,"model":"m","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"call_2","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, map[string]string{
			"output.#": "2", "output.0.type": "function_call", "output.0.id": "fc_x_0", "output.0.call_id": "call_1",
			"output.0.arguments": `{"a":1}`, "output.1.call_id": "call_2", "output.1.status": "completed",
		}},
		{"reasoning", `{"id":"gen-r","created":1,"model":"m","choices":[{"message":{"role":"assistant","content":"42","reasoning":"Six times seven."},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":9,"total_tokens":10,"completion_tokens_details":{"reasoning_tokens":7}}}`, map[string]string{
			"output.#": "2", "output.0.type": "reasoning", "output.0.id": "rs_r_0", "output.0.summary.0.type": "summary_text",
			"output.0.summary.0.text": "Six times seven.", "output.0.encrypted_content": "", "output.1.type": "message",
			"output.1.content.0.text": "42", "usage.output_tokens_details.reasoning_tokens": "7",
		}},
		{"cut by the limit", `{"id":"gen-y","created":1,"model":"m","choices":[{"message":{"role":"assistant","content":"Once upon"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":5,"total_tokens":6}}`, map[string]string{
			"status": "incomplete", "incomplete_details.reason": "max_output_tokens", "output.0.content.0.text": "Once upon",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := FromChat([]byte(tc.chat), echo)
			if !gjson.ValidBytes(out) {
				t.Fatalf("not JSON: %s", out)
			}
			r := gjson.ParseBytes(out)
			for path, want := range tc.want {
				if got := r.Get(path).String(); got != want {
					t.Errorf("%s = %q, want %q (%s)", path, got, want, out)
				}
			}
		})
	}
}

// chatStream is a chat event stream as the gateway writes it: a role
// delta, text, a tool call in fragments, a keep-alive, the usage chunk.
const chatStream = `data: {"id":"gen-s","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}

data: {"id":"gen-s","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"}}]}

: SWITCHYARD PROCESSING
data: {"id":"gen-s","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"content":"lo \"you\""}}]}

data: {"id":"gen-s","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"f","arguments":""}}]}}]}

data: {"id":"gen-s","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}

data: {"id":"gen-s","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}]}

data: {"id":"gen-s","object":"chat.completion.chunk","created":7,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"cost":0.1}}

data: [DONE]

`

type event struct {
	typ  string
	data gjson.Result
}

// events parses Responses SSE, checking the framing and the sequence.
func events(t *testing.T, b []byte) (evs []event, comments int) {
	t.Helper()
	for _, block := range strings.Split(string(b), "\n\n") {
		var name string
		for _, l := range strings.Split(block, "\n") {
			switch {
			case l == "":
			case strings.HasPrefix(l, ":"):
				comments++
			case strings.HasPrefix(l, "event: "):
				name = l[7:]
			case strings.HasPrefix(l, "data: "):
				d := gjson.Parse(l[6:])
				if d.Get("type").Str != name || d.Get("sequence_number").Int() != int64(len(evs)) {
					t.Fatalf("event %q, data %s (event %d)", name, l, len(evs))
				}
				evs = append(evs, event{name, d})
			default:
				t.Fatalf("line %q", l)
			}
		}
	}
	return evs, comments
}

func TestStream(t *testing.T) {
	whole := append([]byte(nil), NewStream(Echo{}).Feed([]byte(chatStream))...)
	// Any split of the chat bytes gives the same events.
	s := NewStream(Echo{})
	var bytewise []byte
	for i := 0; i < len(chatStream); i++ {
		bytewise = append(bytewise, s.Feed([]byte(chatStream[i:i+1]))...)
	}
	if !bytes.Equal(whole, bytewise) {
		t.Fatalf("fed whole:\n%s\nfed byte by byte:\n%s", whole, bytewise)
	}
	evs, comments := events(t, whole)
	if comments != 1 {
		t.Errorf("%d comments passed through, want the keep-alive", comments)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.typ)
	}
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed",
	}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Fatalf("events\n%v\nwant\n%v", types, want)
	}
	if evs[2].data.Get("item.content.#").Int() != 0 || evs[6].data.Get("text").Str != `Hello "you"` {
		t.Errorf("message events %s / %s", evs[2].data.Raw, evs[6].data.Raw)
	}
	if evs[9].data.Get("output_index").Int() != 1 || evs[9].data.Get("item.call_id").Str != "call_9" || evs[12].data.Get("arguments").Str != `{"a":1}` {
		t.Errorf("call events %s / %s", evs[9].data.Raw, evs[12].data.Raw)
	}
	done := evs[len(evs)-1].data.Get("response")
	if done.Get("id").Str != "resp_s" || done.Get("status").Str != "completed" || done.Get("output.#").Int() != 2 ||
		done.Get("output.0.content.0.text").Str != `Hello "you"` || done.Get("output.1.arguments").Str != `{"a":1}` ||
		done.Get("usage.total_tokens").Int() != 7 || done.Get("usage.cost").Float() != 0.1 {
		t.Errorf("completed %s", done.Raw)
	}
	if evs[0].data.Get("response.status").Str != "in_progress" || evs[0].data.Get("response.usage").Type != gjson.Null {
		t.Errorf("created %s", evs[0].data.Raw)
	}
}

func TestStreamEnds(t *testing.T) {
	const head = `data: {"id":"gen-e","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"}}]}` + "\n\n"
	cases := []struct {
		name, tail, last, status string
	}{
		{"error chunk", `data: {"id":"gen-e","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"error"}],"error":{"code":502,"message":"upstream broke"}}` + "\n\ndata: [DONE]\n\n",
			"response.failed", "failed"},
		{"token limit", `data: {"id":"gen-e","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\ndata: [DONE]\n\n",
			"response.incomplete", "incomplete"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, _ := events(t, NewStream(Echo{}).Feed([]byte(head+tc.tail)))
			last := evs[len(evs)-1]
			if last.typ != tc.last || last.data.Get("response.status").Str != tc.status {
				t.Fatalf("last event %s %s", last.typ, last.data.Raw)
			}
			if tc.status == "failed" {
				if evs[len(evs)-2].typ != "error" || last.data.Get("response.error.message").Str != "upstream broke" ||
					last.data.Get("response.error.code").Str != "server_error" {
					t.Fatalf("failure events %s / %s", evs[len(evs)-2].data.Raw, last.data.Raw)
				}
			} else if last.data.Get("response.incomplete_details.reason").Str != "max_output_tokens" {
				t.Fatalf("incomplete %s", last.data.Raw)
			}
		})
	}
}

// Reasoning deltas become a reasoning item with one summary part, before
// the message.
func TestStreamReasoning(t *testing.T) {
	const chat = `data: {"id":"gen-q","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","reasoning":"Think"}}]}

data: {"id":"gen-q","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning":"ing."}}]}

data: {"id":"gen-q","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Done"},"finish_reason":"stop"}]}

data: [DONE]

`
	evs, _ := events(t, NewStream(Echo{}).Feed([]byte(chat)))
	var types []string
	for _, e := range evs {
		types = append(types, e.typ)
	}
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.completed",
	}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Fatalf("events\n%v\nwant\n%v", types, want)
	}
	if evs[6].data.Get("text").Str != "Thinking." || evs[9].data.Get("output_index").Int() != 1 {
		t.Fatalf("events %s / %s", evs[6].data.Raw, evs[9].data.Raw)
	}
	done := evs[len(evs)-1].data.Get("response")
	if done.Get("output.0.summary.0.text").Str != "Thinking." || done.Get("output.1.content.0.text").Str != "Done" {
		t.Fatalf("completed %s", done.Raw)
	}
}

// TestStreamEndCut: a chat stream that stops without [DONE] or an error
// chunk still ends as the SDK expects (error, then response.failed), and
// one that ended adds nothing.
func TestStreamEndCut(t *testing.T) {
	chunk := `data: {"id":"gen-1","model":"m","choices":[{"index":0,"delta":{"content":"Hel"}}]}` + "\n\n"
	s := NewStream(Echo{})
	out := string(s.Feed([]byte(chunk)))
	end := string(s.End())
	if !strings.Contains(out, "response.output_text.delta") || !strings.Contains(end, "event: error") || !strings.Contains(end, "response.failed") {
		t.Fatalf("fed:\n%s\nend:\n%s", out, end)
	}
	s = NewStream(Echo{})
	s.Feed([]byte(chunk + `data: {"id":"gen-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"))
	if end := s.End(); len(end) != 0 {
		t.Fatalf("a stream that ended got %s", end)
	}
}
