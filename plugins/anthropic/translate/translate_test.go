package translate_test

import (
	"path/filepath"
	"strconv"
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
	fixture.CheckRequests(t, adapter.ChatRequest, testdata("requests.json"), "", "/messages",
		"x-api-key: ${API_KEY}", "anthropic-version: 2023-06-01", "X-Switchyard-Adapter: anthropic/test")
}

// TestVertexRequest: with the provider's api vertex, the model goes in
// the rawPredict URL, the version in the body, and no key header is
// written (the host's google-service-account scheme sends the token).
func TestVertexRequest(t *testing.T) {
	fixture.CheckRequests(t, adapter.ChatRequest, testdata("requests_vertex.json"), "", "",
		"Content-Type: application/json", "X-Switchyard-Adapter: anthropic/test")
	out := fixture.Call(t, adapter.ChatRequest, `{"model":"claude-3-5-sonnet-v2@20241022","api":"vertex"}`, `{"messages":[{"role":"user","content":"hi"}]}`)
	if strings.Contains(out[2], "x-api-key") || strings.Contains(out[2], "anthropic-version") {
		t.Fatalf("Vertex headers %q", out[2])
	}
	// The client's own Messages body (native mode) likewise.
	out = fixture.Call(t, adapter.ChatRequest, `{"model":"claude-3-5-sonnet-v2@20241022","api":"vertex","native":"messages"}`,
		`{"model":"claude-3-5-sonnet-latest","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"Hey Claude!"}]}`)
	if out[1] != "/models/claude-3-5-sonnet-v2@20241022:streamRawPredict" ||
		!fixture.JSONEqual(t, out[3], `{"anthropic_version":"vertex-2023-10-16","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"Hey Claude!"}]}`) {
		t.Fatalf("native on Vertex: %q", out)
	}
}

func TestChatResponse(t *testing.T) {
	fixture.CheckResponses(t, translate.ChatResponse, map[string]map[string]string{
		testdata("message_tool_use.json"): {
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
		},
		testdata("message_cache_read.json"): {
			"choices.0.message.content":                 "Hi! My name is Claude.",
			"choices.0.finish_reason":                   "stop",
			"choices.0.native_finish_reason":            "end_turn",
			"usage.prompt_tokens":                       "188107",
			"usage.prompt_tokens_details.cached_tokens": "188086",
			"usage.total_tokens":                        "188500",
		},
	})
	// Tool arguments are the JSON text of the tool_use input.
	out := fixture.Call(t, translate.ChatResponse, `{}`, string(fixture.Read(t, testdata("message_tool_use.json"))))
	args := gjson.Get(out[0], "choices.0.message.tool_calls.0.function.arguments").Str
	if !fixture.JSONEqual(t, args, `{"location": "San Francisco, CA", "unit": "celsius"}`) {
		t.Errorf("arguments %s", args)
	}
}

func TestStreamEvents(t *testing.T) {
	t.Run("text (SDK recording)", func(t *testing.T) {
		s := fixture.Assemble(t, fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_basic.sse"))))
		if s.Role != "assistant" || s.Content != "Hello there!" || s.Finish != "stop" {
			t.Errorf("role %q content %q finish %q", s.Role, s.Content, s.Finish)
		}
		fixture.CheckUsage(t, s.Usage, 11, 6, 0)
	})
	t.Run("tool use with input_json_delta (SDK recording)", func(t *testing.T) {
		s := fixture.Assemble(t, fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_tool_use.sse"))))
		if s.Content != "I'll check the current weather in Paris for you." || s.Finish != "tool_calls" {
			t.Errorf("content %q finish %q", s.Content, s.Finish)
		}
		c := s.Calls[0]
		if len(s.Calls) != 1 || c == nil || c.ID != "toolu_01NRLabsLyVHZPKxbKvkfSMn" || c.Name != "get_weather" {
			t.Fatalf("calls %+v", s.Calls)
		}
		if !fixture.JSONEqual(t, c.Args, `{"location": "Paris"}`) {
			t.Errorf("arguments %q", c.Args)
		}
		fixture.CheckUsage(t, s.Usage, 377, 65, 0)
		if len(s.IDs) != 1 || !s.IDs["msg_019Q1hrJbZG26Fb9BQhrkHEr"] {
			t.Errorf("chunk ids %v, want the message id on every chunk", s.IDs)
		}
	})
	t.Run("extended thinking (docs example)", func(t *testing.T) {
		s := fixture.Assemble(t, fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_thinking.sse"))))
		if s.Reasoning != "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3" {
			t.Errorf("reasoning %q", s.Reasoning)
		}
		if s.Content != "27 * 453 = 12,231" || s.Finish != "stop" {
			t.Errorf("content %q finish %q", s.Content, s.Finish)
		}
		if strings.Contains(s.Content+s.Reasoning, "EqQBCgIYAhIM") {
			t.Error("the thinking signature leaked into the text")
		}
	})
	t.Run("error event (docs example)", func(t *testing.T) {
		s := fixture.Assemble(t, fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_error.sse"))))
		if len(s.Errors) != 1 || s.Errors[0] != "overloaded_error: Overloaded" {
			t.Errorf("errors %q", s.Errors)
		}
	})
}

// TestWebSearch: Anthropic's web_search citations become the gateway's
// url_citation annotations, each spanning the text block it cites; the
// server tool's blocks are neither content nor client tool calls.
func TestWebSearch(t *testing.T) {
	out := fixture.Call(t, translate.ChatResponse, `{}`, string(fixture.Read(t, testdata("message_web_search.json"))))
	content := "I'll search for when Claude Shannon was born.Based on the search results, Claude Shannon was born on April 30, 1916, in Petoskey, Michigan"
	cited := "Claude Shannon was born on April 30, 1916, in Petoskey, Michigan"
	start := strings.Index(content, cited)
	fixture.Check(t, out[0], map[string]string{
		"choices.0.message.content":                                content,
		"choices.0.message.tool_calls":                             "",
		"choices.0.finish_reason":                                  "stop",
		"choices.0.message.annotations.#":                          "1",
		"choices.0.message.annotations.0.type":                     "url_citation",
		"choices.0.message.annotations.0.url_citation.url":         "https://en.wikipedia.org/wiki/Claude_Shannon",
		"choices.0.message.annotations.0.url_citation.title":       "Claude Shannon - Wikipedia",
		"choices.0.message.annotations.0.url_citation.content":     "Claude Elwood Shannon (April 30, 1916 – February 24, 2001) was an American mathematician, electrical engineer, computer scientist, cryptographer and i...",
		"choices.0.message.annotations.0.url_citation.start_index": strconv.Itoa(start),
		"choices.0.message.annotations.0.url_citation.end_index":   strconv.Itoa(start + len(cited)),
		"usage.server_tool_use.web_search_requests":                "1",
	})

	s := fixture.Assemble(t, fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_web_search.sse"))))
	want := "I'll search for the latest breakthroughs. Researchers demonstrated error-corrected qubits — a first."
	if s.Content != want || len(s.Calls) != 0 || s.Finish != "stop" {
		t.Fatalf("content %q calls %+v finish %q", s.Content, s.Calls, s.Finish)
	}
	if len(s.Annotations) != 1 {
		t.Fatalf("annotations %v", s.Annotations)
	}
	a := s.Annotations[0].Get("url_citation")
	// Indices count code points: the em dash is one.
	runes := []rune(want)
	got := string(runes[a.Get("start_index").Int():a.Get("end_index").Int()])
	if got != "Researchers demonstrated error-corrected qubits — a first." || a.Get("url").Str != "https://example.com" ||
		a.Get("title").Str != "Quantum Computing Breakthroughs in 2025" || a.Get("content").Str != "Researchers demonstrated a logical qubit…" {
		t.Fatalf("annotation %s spans %q", a.Raw, got)
	}
	if s.Usage.Get("server_tool_use.web_search_requests").Int() != 1 {
		t.Errorf("usage %s", s.Usage.Raw)
	}
}

func TestMapError(t *testing.T) {
	body := func(name string) string { return string(fixture.Read(t, testdata(name))) }
	fixture.CheckErrors(t, translate.MapError, []fixture.ErrorCase{
		{Status: "529", Body: body("error_overloaded.json"), WantStatus: "529", WantMsg: "Overloaded"},
		{Status: "404", Body: body("error_not_found.json"), WantStatus: "502", WantMsg: "The requested resource could not be found."},
		// The gateway's key is wrong: never the caller's problem.
		{Status: "401", Body: body("error_authentication.json"), WantStatus: "502", WantMsg: "the provider rejected the gateway's credentials"},
	})
}

// Native mode (host native "messages", manifest capability
// messages_native): the client's Messages body goes upstream byte for byte,
// only its model the endpoint's; the client's anthropic-beta is forwarded.
func TestNativeRequest(t *testing.T) {
	body := `{"model":"anthropic/claude-sonnet-4.5", "max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":2000},
  "messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"…","signature":"EqQBCgIYAh…"}]},
  {"role":"user","content":[{"type":"text","text":"more","cache_control":{"type":"ephemeral"}}]}]}`
	ctx := `{"model":"claude-sonnet-4-5-20250929","provider":"anthropic","stream":false,"drop":[],"generation_id":"gen-1","catalog_model":"anthropic/claude-sonnet-4.5","native":"messages","beta":"interleaved-thinking-2025-05-14,context-1m-2025-08-07"}`
	out := fixture.Call(t, adapter.ChatRequest, ctx, body)
	if out[0] != "POST" || out[1] != "/messages" {
		t.Fatalf("%s %s", out[0], out[1])
	}
	if !strings.Contains(out[2], "anthropic-beta: interleaved-thinking-2025-05-14,context-1m-2025-08-07\n") || !strings.Contains(out[2], "x-api-key: ${API_KEY}") {
		t.Fatalf("headers %q", out[2])
	}
	want := strings.Replace(body, `"anthropic/claude-sonnet-4.5"`, `"claude-sonnet-4-5-20250929"`, 1)
	if out[3] != want {
		t.Fatalf("body\n%s\nwant\n%s", out[3], want)
	}
	// Without a beta, no anthropic-beta header; a line break in one cannot
	// add a header.
	out = fixture.Call(t, adapter.ChatRequest, strings.Replace(ctx, `"beta":"interleaved-thinking-2025-05-14,context-1m-2025-08-07"`, `"beta":""`, 1), body)
	if strings.Contains(out[2], "anthropic-beta") {
		t.Fatalf("headers %q", out[2])
	}
	out = fixture.Call(t, adapter.ChatRequest, strings.Replace(ctx, `"beta":"interleaved-thinking-2025-05-14,context-1m-2025-08-07"`, `"beta":"a\nx-evil: 1"`, 1), body)
	if strings.Contains(out[2], "\nx-evil") {
		t.Fatalf("headers %q", out[2])
	}
}
