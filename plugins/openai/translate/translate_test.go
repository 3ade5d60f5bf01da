package translate_test

import (
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/plugins/internal/fixture"
	"github.com/switchyard/switchyard/plugins/openai/translate"
)

// The payloads under ../testdata come from OpenAI's API reference and
// guides; SOURCES.md names the page of each.
func testdata(name string) string { return filepath.Join("..", "testdata", name) }

var adapter = &translate.Adapter{Build: "openai/test"}

// TestChatRequestMatchesChatCompletions: the unified format is OpenAI's, so
// the upstream body is the documented request minus what the gateway adds,
// with the endpoint's model, and usage always asked for in streams.
func TestChatRequestMatchesChatCompletions(t *testing.T) {
	fixture.CheckRequests(t, adapter.ChatRequest, testdata("requests.json"), "", "/chat/completions",
		"Authorization: Bearer ${API_KEY}", "X-Switchyard-Adapter: openai/test")
}

// TestWebSearchCitations: OpenAI's url_citation annotations are already the
// gateway's (docs/web-search.md), so they reach the client as OpenAI sent them.
func TestWebSearchCitations(t *testing.T) {
	body := string(fixture.Read(t, testdata("chat_completion_web_search.json")))
	out := fixture.Call(t, translate.PassBody, `{}`, body)
	fixture.Check(t, out[0], map[string]string{
		"choices.0.message.annotations.#":                          "1",
		"choices.0.message.annotations.0.type":                     "url_citation",
		"choices.0.message.annotations.0.url_citation.url":         "https://...",
		"choices.0.message.annotations.0.url_citation.title":       "Page title...",
		"choices.0.message.annotations.0.url_citation.start_index": "764",
		"choices.0.message.annotations.0.url_citation.end_index":   "985",
	})
}

// TestResponsesPassThrough: OpenAI's responses and chunks are already
// unified; the hooks must hand them on byte for byte.
func TestResponsesPassThrough(t *testing.T) {
	body := string(fixture.Read(t, testdata("chat_completion.json")))
	if out := fixture.Call(t, translate.PassBody, `{}`, body); out[0] != body {
		t.Errorf("chat response changed:\n%s", out[0])
	}
	events := fixture.Events(t, testdata("stream_tool_call.sse"))
	for _, ev := range events {
		out := fixture.Call(t, translate.PassEvent, `{}`, ev, "")
		if len(out) != 2 || out[0] != "" || out[1] != ev {
			t.Fatalf("event %s became %q", ev, out)
		}
	}
	s := fixture.Assemble(t, fixture.Stream(t, translate.PassEvent, `{}`, events))
	c := s.Calls[0]
	if len(s.Calls) != 1 || c.ID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" || c.Name != "get_weather" || c.Args != `{"location":"Paris, France"}` {
		t.Errorf("calls %+v", s.Calls)
	}
	if s.Finish != "tool_calls" {
		t.Errorf("finish %q", s.Finish)
	}
	fixture.CheckUsage(t, s.Usage, 66, 17, 0)
}

func TestEmbed(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		// https://platform.openai.com/docs/api-reference/embeddings/create
		{"API reference example",
			`{"input":"The food was delicious and the waiter...","model":"openai/text-embedding-ada-002","encoding_format":"base64","user":"u1"}`,
			`{"model":"text-embedding-ada-002","input":"The food was delicious and the waiter...","user":"u1","encoding_format":"float"}`},
		{"text-only multimodal items flattened",
			`{"model":"openai/text-embedding-3-small","dimensions":256,"input":["a",{"content":[{"type":"text","text":"b"},{"type":"text","text":"c"}]}]}`,
			`{"model":"text-embedding-ada-002","dimensions":256,"input":["a","b\nc"],"encoding_format":"float"}`},
		// The API reference's input: "array of integers, or array of
		// arrays of integers" (token ids) pass as they are.
		{"token ids",
			`{"model":"openai/text-embedding-3-small","input":[9906,1917]}`,
			`{"model":"text-embedding-ada-002","input":[9906,1917],"encoding_format":"float"}`},
		{"token id arrays",
			`{"model":"openai/text-embedding-3-small","input":[[9906],[1917,0]]}`,
			`{"model":"text-embedding-ada-002","input":[[9906],[1917,0]],"encoding_format":"float"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := fixture.Call(t, adapter.EmbedRequest, `{"model":"text-embedding-ada-002"}`, tc.body)
			if out[0] != "POST" || out[1] != "/embeddings" {
				t.Fatalf("request line %q", out[:2])
			}
			if !fixture.JSONEqual(t, out[3], tc.want) {
				t.Errorf("body\n got %s\nwant %s", out[3], tc.want)
			}
		})
	}
	body := string(fixture.Read(t, testdata("embeddings_response.json")))
	if out := fixture.Call(t, translate.PassBody, `{}`, body); out[0] != body {
		t.Errorf("embeddings response changed:\n%s", out[0])
	}
}

func TestMapError(t *testing.T) {
	body := func(name string) string { return string(fixture.Read(t, testdata(name))) }
	fixture.CheckErrors(t, translate.MapError, []fixture.ErrorCase{
		// OpenAI's 401 quotes part of the key: never passed on.
		{Status: "401", Body: body("error_invalid_api_key.json"), WantStatus: "502", WantMsg: "the provider rejected the gateway's credentials"},
		{Status: "429", Body: body("error_rate_limit.json"), WantStatus: "429", WantMsg: "Rate limit reached for gpt-4o in organization org-abc123 on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more."},
		{Status: "400", Body: body("error_context_length.json"), WantStatus: "400", WantMsg: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130205 tokens. Please reduce the length of the messages."},
		// A proxy in front of a compatible server answers in plain text.
		{Status: "503", Body: "upstream connect error or disconnect/reset before headers", WantStatus: "503", WantMsg: "upstream connect error or disconnect/reset before headers"},
		{Status: "500", Body: "", WantStatus: "502", WantMsg: "upstream returned status 500"},
	})
}
