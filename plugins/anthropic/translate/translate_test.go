package translate_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/plugins/anthropic/translate"
	"github.com/switchyard/switchyard/plugins/internal/fixture"
	"github.com/tidwall/gjson"
)

// The payloads under ../testdata come from Anthropic's API reference and
// guides and from the official Python SDK's recorded streams; SOURCES.md
// names the page or file each one was taken from.
func testdata(name string) string { return filepath.Join("..", "testdata", name) }

var adapter = &translate.Adapter{Build: "anthropic/test"}

// TestChatRequestMatchesMessagesAPI translates unified requests and
// compares the whole body with the request Anthropic's documentation shows
// for the same conversation.
func TestChatRequestMatchesMessagesAPI(t *testing.T) {
	var cases []struct {
		Name      string          `json:"name"`
		Unified   json.RawMessage `json:"unified"`
		Anthropic json.RawMessage `json:"anthropic"`
	}
	if err := json.Unmarshal(fixture.Read(t, testdata("requests.json")), &cases); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			model := gjson.GetBytes(tc.Anthropic, "model").Str
			out := fixture.Call(t, adapter.ChatRequest, `{"model":`+quote(model)+`}`, string(tc.Unified))
			if len(out) != 4 || out[0] != "POST" || out[1] != "/messages" {
				t.Fatalf("request line %q", out[:min(2, len(out))])
			}
			for _, h := range []string{"x-api-key: ${API_KEY}", "anthropic-version: 2023-06-01", "X-Switchyard-Adapter: anthropic/test"} {
				if !strings.Contains(out[2], h+"\n") {
					t.Errorf("headers %q lack %q", out[2], h)
				}
			}
			if !fixture.JSONEqual(t, out[3], string(tc.Anthropic)) {
				t.Errorf("body\n got %s\nwant %s", out[3], fixture.Compact(string(tc.Anthropic)))
			}
		})
	}
}

func TestChatResponse(t *testing.T) {
	cases := []struct {
		file   string
		checks map[string]string
	}{
		{"message_tool_use.json", map[string]string{
			"id":                                  "msg_01Aq9w938a90dw8q",
			"object":                              "chat.completion",
			"choices.0.finish_reason":             "tool_calls",
			"choices.0.message.content":           "<thinking>I need to call the get_weather function, and the user wants SF, which is likely San Francisco, CA.</thinking>",
			"choices.0.message.tool_calls.0.id":   "toolu_01A09q90qw90lq917835lq9",
			"choices.0.message.tool_calls.0.type": "function",
			"choices.0.message.tool_calls.0.function.name": "get_weather",
			// Anthropic's input_tokens exclude the cache; OpenAI's
			// prompt_tokens include it: 21 + 188086 written.
			"usage.prompt_tokens":                       "188107",
			"usage.completion_tokens":                   "393",
			"usage.total_tokens":                        "188500",
			"usage.prompt_tokens_details.cached_tokens": "0",
		}},
		{"message_cache_read.json", map[string]string{
			"choices.0.message.content":                 "Hi! My name is Claude.",
			"choices.0.finish_reason":                   "stop",
			"usage.prompt_tokens":                       "188107",
			"usage.prompt_tokens_details.cached_tokens": "188086",
			"usage.total_tokens":                        "188500",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			out := fixture.Call(t, translate.ChatResponse, `{}`, string(fixture.Read(t, testdata(tc.file))))
			check(t, out[0], tc.checks)
		})
	}
	// Tool arguments are the JSON text of the tool_use input.
	out := fixture.Call(t, translate.ChatResponse, `{}`, string(fixture.Read(t, testdata("message_tool_use.json"))))
	args := gjson.Get(out[0], "choices.0.message.tool_calls.0.function.arguments").Str
	if !fixture.JSONEqual(t, args, `{"location": "San Francisco, CA", "unit": "celsius"}`) {
		t.Errorf("arguments %s", args)
	}
}

// streamed is what a client assembles from the unified chunks.
type streamed struct {
	role, content, reasoning, finish string
	calls                            map[int64]*call
	usage                            gjson.Result
	errors                           []string
}

type call struct{ id, name, args string }

func assemble(t *testing.T, chunks []string) streamed {
	t.Helper()
	s := streamed{calls: map[int64]*call{}}
	for _, c := range chunks {
		ch := gjson.Parse(c)
		if e := ch.Get("error"); e.Exists() {
			s.errors = append(s.errors, e.Get("type").Str+": "+e.Get("message").Str)
			continue
		}
		if ch.Get("object").Str != "chat.completion.chunk" {
			t.Fatalf("not a chunk: %s", c)
		}
		if u := ch.Get("usage"); u.Exists() {
			s.usage = u
		}
		ch.Get("choices").ForEach(func(_, choice gjson.Result) bool {
			d := choice.Get("delta")
			if r := d.Get("role").Str; r != "" {
				s.role = r
			}
			s.content += d.Get("content").Str
			s.reasoning += d.Get("reasoning").Str
			d.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
				i := tc.Get("index").Int()
				if s.calls[i] == nil {
					s.calls[i] = &call{}
				}
				if id := tc.Get("id").Str; id != "" {
					s.calls[i].id = id
				}
				if n := tc.Get("function.name").Str; n != "" {
					s.calls[i].name = n
				}
				s.calls[i].args += tc.Get("function.arguments").Str
				return true
			})
			if f := choice.Get("finish_reason").Str; f != "" {
				s.finish = f
			}
			return true
		})
	}
	return s
}

func TestStreamEvents(t *testing.T) {
	t.Run("text (SDK recording)", func(t *testing.T) {
		s := assemble(t, fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_basic.sse"))))
		if s.role != "assistant" || s.content != "Hello there!" || s.finish != "stop" {
			t.Errorf("role %q content %q finish %q", s.role, s.content, s.finish)
		}
		checkUsage(t, s.usage, 11, 6, 0)
	})
	t.Run("tool use with input_json_delta (SDK recording)", func(t *testing.T) {
		chunks := fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_tool_use.sse")))
		s := assemble(t, chunks)
		if s.content != "I'll check the current weather in Paris for you." || s.finish != "tool_calls" {
			t.Errorf("content %q finish %q", s.content, s.finish)
		}
		c := s.calls[0]
		if len(s.calls) != 1 || c == nil || c.id != "toolu_01NRLabsLyVHZPKxbKvkfSMn" || c.name != "get_weather" {
			t.Fatalf("calls %+v", s.calls)
		}
		if !fixture.JSONEqual(t, c.args, `{"location": "Paris"}`) {
			t.Errorf("arguments %q", c.args)
		}
		checkUsage(t, s.usage, 377, 65, 0)
		for _, ch := range chunks {
			if id := gjson.Get(ch, "id").Str; id != "msg_019Q1hrJbZG26Fb9BQhrkHEr" {
				t.Errorf("chunk id %q", id)
			}
		}
	})
	t.Run("extended thinking (docs example)", func(t *testing.T) {
		s := assemble(t, fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_thinking.sse"))))
		if s.reasoning != "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3" {
			t.Errorf("reasoning %q", s.reasoning)
		}
		if s.content != "27 * 453 = 12,231" || s.finish != "stop" {
			t.Errorf("content %q finish %q", s.content, s.finish)
		}
		if strings.Contains(s.content+s.reasoning, "EqQBCgIYAhIM") {
			t.Error("the thinking signature leaked into the text")
		}
	})
	t.Run("error event (docs example)", func(t *testing.T) {
		s := assemble(t, fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_error.sse"))))
		if len(s.errors) != 1 || s.errors[0] != "overloaded_error: Overloaded" {
			t.Errorf("errors %q", s.errors)
		}
	})
}

func TestMapError(t *testing.T) {
	cases := []struct {
		status, file, wantStatus, wantMsg string
	}{
		{"529", "error_overloaded.json", "529", "Overloaded"},
		{"404", "error_not_found.json", "502", "The requested resource could not be found."},
		// The gateway's key is wrong: never the caller's problem.
		{"401", "error_authentication.json", "502", "the provider rejected the gateway's credentials"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			out := fixture.Call(t, translate.MapError, `{}`, tc.status, string(fixture.Read(t, testdata(tc.file))))
			if out[0] != tc.wantStatus || out[1] != tc.wantMsg {
				t.Errorf("got %q, want %s %q", out, tc.wantStatus, tc.wantMsg)
			}
		})
	}
}

func check(t *testing.T, doc string, checks map[string]string) {
	t.Helper()
	for path, want := range checks {
		if got := gjson.Get(doc, path).String(); got != want {
			t.Errorf("%s = %q, want %q\n%s", path, got, want, doc)
		}
	}
}

func checkUsage(t *testing.T, u gjson.Result, prompt, completion, cached int64) {
	t.Helper()
	if u.Get("prompt_tokens").Int() != prompt || u.Get("completion_tokens").Int() != completion ||
		u.Get("total_tokens").Int() != prompt+completion || u.Get("prompt_tokens_details.cached_tokens").Int() != cached {
		t.Errorf("usage %s, want prompt %d completion %d cached %d", u.Raw, prompt, completion, cached)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
