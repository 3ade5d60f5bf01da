package translate_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/plugins/gemini/translate"
	"github.com/switchyard/switchyard/plugins/internal/fixture"
	"github.com/tidwall/gjson"
)

// The payloads under ../testdata come from the Gemini API reference and
// guides and from the recorded responses Google's Firebase AI SDKs test
// against; SOURCES.md names the page or file of each.
func testdata(name string) string { return filepath.Join("..", "testdata", name) }

var adapter = &translate.Adapter{Build: "gemini/test"}

// TestChatRequestMatchesGenerateContent translates unified requests and
// compares the whole body with the request Google's documentation shows.
func TestChatRequestMatchesGenerateContent(t *testing.T) {
	fixture.CheckRequests(t, adapter.ChatRequest, testdata("requests.json"), `{"model":"gemini-2.5-flash"}`, "",
		"x-goog-api-key: ${API_KEY}", "X-Switchyard-Adapter: gemini/test")
}

func TestChatResponse(t *testing.T) {
	fixture.CheckResponses(t, translate.ChatResponse, map[string]map[string]string{
		testdata("response_thinking.json"): {
			"id":                        "2pmHaJqQEoqC-8YP6eStyAY",
			"model":                     "gemini-2.5-flash",
			"choices.0.message.content": "Mountain View",
			"choices.0.finish_reason":   "stop",
			// Thought summaries are reasoning, never content.
			"choices.0.message.reasoning": "**Thinking About Google's Headquarters**\n\nWell, this one's straightforward. The user wants to know the city where Google's headquarters is located.  Of course, that would be Mountain View. It's almost second nature at this point, especially given my background.  Simple question, simple answer.  Let's get that information to them quickly and move on.\n",
			// Thoughts are billed as output: 2 + 24, total as Google's 40.
			"usage.prompt_tokens":                              "14",
			"usage.completion_tokens":                          "26",
			"usage.total_tokens":                               "40",
			"usage.completion_tokens_details.reasoning_tokens": "24",
		},
		testdata("response_parallel_calls.json"): {
			"choices.0.finish_reason":                      "tool_calls",
			"choices.0.message.content":                    "",
			"choices.0.message.tool_calls.#":               "3",
			"choices.0.message.tool_calls.0.function.name": "sum",
			"choices.0.message.tool_calls.1.function.name": "multiply",
			"choices.0.message.tool_calls.2.function.name": "subtract",
			"choices.0.message.tool_calls.2.type":          "function",
		},
		testdata("response_implicit_caching.json"): {
			// promptTokenCount already includes the cached tokens, as
			// OpenAI's prompt_tokens does.
			"usage.prompt_tokens":                       "12013",
			"usage.prompt_tokens_details.cached_tokens": "11243",
			"usage.completion_tokens":                   "88",
			"usage.total_tokens":                        "12101",
		},
		testdata("response_prompt_feedback.json"): {
			"choices.0.finish_reason":   "content_filter",
			"choices.0.message.content": "",
		},
	})
	out := fixture.Call(t, translate.ChatResponse, `{}`, string(fixture.Read(t, testdata("response_parallel_calls.json"))))
	ids := map[string]bool{}
	for i, want := range []string{`{"y":1,"x":2}`, `{"y":3,"x":4}`, `{"y":5,"x":6}`} {
		c := gjson.Get(out[0], "choices.0.message.tool_calls."+string(rune('0'+i)))
		if !fixture.JSONEqual(t, c.Get("function.arguments").Str, want) {
			t.Errorf("call %d arguments %s, want %s", i, c.Get("function.arguments").Str, want)
		}
		ids[c.Get("id").Str] = true
	}
	if len(ids) != 3 || ids[""] {
		t.Errorf("tool call ids %v: each call needs its own, for the tool results to name", ids)
	}
}

// TestGoogleSearchGrounding: Gemini's groundingSupports become url_citation
// annotations over the message content, whose indices count code points
// where Gemini counts bytes.
func TestGoogleSearchGrounding(t *testing.T) {
	content := "The current weather in London, United Kingdom is cloudy. The temperature is 67°F (19°C), but it feels like 75°F (24°C). There is a 0% chance of rain, and the humidity is around 41%.\n"
	want := []struct{ url, title, text string }{
		{"https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbF9wXHS4dqThDQYaHdj81DtSjCLnxmtgYPqLKTfc8-Ea4_ATkuKibe-C2xm9XLREootlLWWk7o7FN6Ktd7PpgEIaA9KH38l33kunUQcrqm77_xaHI9tsqJ1LOgkCG9fV6HKw6WC_fbQ-9JMkaFoJT0Xwkwb1rog-kHLu6qCTv810KzfSBUcH-lZLVxOow==", "accuweather.com", "The current weather in London, United Kingdom is cloudy."},
		{"https://www.google.com/search?q=weather+in+London", "Weather information for locality: London", "The temperature is 67°F (19°C), but it feels like 75°F (24°C)."},
		{"https://www.google.com/search?q=weather+in+London", "Weather information for locality: London", "There is a 0% chance of rain, and the humidity is around 41%."},
	}
	check := func(t *testing.T, got string, anns []gjson.Result) {
		t.Helper()
		if got != content || len(anns) != len(want) {
			t.Fatalf("content %q, %d annotations", got, len(anns))
		}
		runes := []rune(content)
		for i, w := range want {
			a := anns[i]
			c := a.Get("url_citation")
			s, e := c.Get("start_index").Int(), c.Get("end_index").Int()
			if a.Get("type").Str != "url_citation" || c.Get("url").Str != w.url || c.Get("title").Str != w.title || c.Get("content").Str != w.text ||
				e > int64(len(runes)) || string(runes[s:e]) != w.text {
				t.Errorf("annotation %d: %s", i, a.Raw)
			}
		}
	}
	out := fixture.Call(t, translate.ChatResponse, `{}`, string(fixture.Read(t, testdata("response_google_search.json"))))
	check(t, gjson.Get(out[0], "choices.0.message.content").Str, gjson.Get(out[0], "choices.0.message.annotations").Array())
	if gjson.Get(out[0], "usage.server_tool_use.web_search_requests").Int() != 1 {
		t.Errorf("usage %s", gjson.Get(out[0], "usage").Raw)
	}

	s := fixture.Assemble(t, fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_google_search.sse"))))
	check(t, s.Content, s.Annotations)
	if s.Finish != "stop" || s.Usage.Get("server_tool_use.web_search_requests").Int() != 1 {
		t.Errorf("finish %q usage %s", s.Finish, s.Usage.Raw)
	}
}

func TestStreamEvents(t *testing.T) {
	t.Run("text (SDK recording)", func(t *testing.T) {
		s := fixture.Assemble(t, fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_basic.sse"))))
		if s.Role != "assistant" || s.Content != "The capital of Wyoming is **Cheyenne**.\n" || s.Finish != "stop" {
			t.Errorf("role %q content %q finish %q", s.Role, s.Content, s.Finish)
		}
		fixture.CheckUsage(t, s.Usage, 7, 10, 0)
	})
	t.Run("thought summaries then a function call (SDK recording)", func(t *testing.T) {
		s := fixture.Assemble(t, fixture.Stream(t, translate.StreamEvent, `{}`, fixture.Events(t, testdata("stream_thinking_function_call.sse"))))
		if !strings.HasPrefix(s.Reasoning, "**Calculating the Days**") || !strings.Contains(s.Reasoning, "**Determining the Approach**") {
			t.Errorf("reasoning %q", s.Reasoning)
		}
		if s.Content != "" {
			t.Errorf("thoughts leaked into content: %q", s.Content)
		}
		c := s.Calls[0]
		if len(s.Calls) != 1 || c == nil || c.Name != "now" || c.ID == "" || !fixture.JSONEqual(t, c.Args, `{}`) {
			t.Fatalf("calls %+v", s.Calls)
		}
		if s.Finish != "tool_calls" {
			t.Errorf("finish %q", s.Finish)
		}
		// 6 output + 168 thought tokens; total 212 as Google counts it.
		fixture.CheckUsage(t, s.Usage, 38, 174, 0)
		if !s.IDs["48SHaPHpHKbG-8YPtZCawAk"] || len(s.IDs) != 1 {
			t.Errorf("chunk ids %v", s.IDs)
		}
	})
}

func TestEmbed(t *testing.T) {
	out := fixture.Call(t, adapter.EmbedRequest, `{"model":"gemini-embedding-001"}`,
		`{"model":"google/gemini-embedding-001","input":["What is the meaning of life?","How much wood would a woodchuck chuck?"],"dimensions":768}`)
	if out[0] != "POST" || out[1] != "/models/gemini-embedding-001:batchEmbedContents" {
		t.Fatalf("request line %q", out[:2])
	}
	// https://ai.google.dev/gemini-api/docs/embeddings (REST batchEmbedContents)
	want := `{"requests":[
		{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"What is the meaning of life?"}]},"outputDimensionality":768},
		{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"How much wood would a woodchuck chuck?"}]},"outputDimensionality":768}]}`
	if !fixture.JSONEqual(t, out[3], want) {
		t.Errorf("body\n got %s\nwant %s", out[3], fixture.Compact(want))
	}

	resp := fixture.Call(t, translate.EmbedResponse, `{}`, string(fixture.Read(t, testdata("embed_batch_response.json"))))
	fixture.Check(t, resp[0], map[string]string{
		"object":             "list",
		"data.#":             "2",
		"data.0.object":      "embedding",
		"data.0.index":       "0",
		"data.1.index":       "1",
		"data.0.embedding.0": "-0.022374554",
		"data.1.embedding.3": "-0.058147963",
	})
}

func TestMapError(t *testing.T) {
	body := func(name string) string { return string(fixture.Read(t, testdata(name))) }
	fixture.CheckErrors(t, translate.MapError, []fixture.ErrorCase{
		// Gemini says 400 for a bad key: the gateway's credentials, so 502
		// and never the provider's text (which quotes the key).
		{Status: "400", Body: body("error_api_key.json"), WantStatus: "502", WantMsg: "the provider rejected the gateway's credentials"},
		{Status: "404", Body: body("error_unknown_model.json"), WantStatus: "502", WantMsg: "models/gemini-5.0-flash is not found for API version v1, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."},
	})
}
