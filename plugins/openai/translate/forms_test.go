package translate_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/plugins/internal/fixture"
	"github.com/switchyard/switchyard/plugins/openai/translate"
	"github.com/tidwall/gjson"
)

// The provider forms' payloads come from each provider's API reference;
// testdata/providers/SOURCES.md names the page of each.
func provider(name string) string { return testdata("providers/" + name) }

// TestFormRequests: each form sends what its provider documents and
// nothing it refuses.
func TestFormRequests(t *testing.T) {
	fixture.CheckRequests(t, adapter.ChatRequest, provider("requests.json"), "", "/chat/completions",
		"Authorization: Bearer ${API_KEY}")
}

func TestFormResponses(t *testing.T) {
	cases := []struct {
		file, api string
		checks    map[string]string // gjson path → value; "" for absent
		same      bool              // handed on byte for byte
	}{
		{file: "deepseek_reasoner.json", api: "deepseek", checks: map[string]string{
			"choices.0.message.reasoning":               "Comparing 9.11 and 9.8: 9.8 = 9.80, and 9.80 > 9.11, so 9.8 is greater.",
			"choices.0.message.reasoning_content":       "",
			"choices.0.message.content":                 "9.8 is greater than 9.11.",
			"usage.prompt_tokens_details.cached_tokens": "0",
			"usage.completion_tokens":                   "96",
		}},
		// DeepSeek's cache hits become cached_tokens, which billing reads.
		{file: "deepseek_chat_cached.json", api: "deepseek", checks: map[string]string{
			"usage.prompt_tokens_details.cached_tokens": "1024",
			"usage.prompt_tokens":                       "1100",
		}},
		// xAI counts reasoning outside completion_tokens; OpenAI (and the
		// gateway's billing) inside.
		{file: "xai_grok3mini.json", api: "xai", checks: map[string]string{
			"choices.0.message.reasoning":               "Let me calculate 101 multiplied by 3: 101 * 3 = 303. I can double-check that: 100 * 3 is 300, and 1 * 3 is 3, so 300 + 3 = 303. Yes, that's correct.",
			"choices.0.message.reasoning_content":       "",
			"usage.completion_tokens":                   "324",
			"usage.total_tokens":                        "356",
			"usage.prompt_tokens_details.cached_tokens": "6",
		}},
		{file: "fireworks_reasoning.json", api: "fireworks", checks: map[string]string{
			"choices.0.message.reasoning":         "25 * 37 = 25 * 40 - 25 * 3 = 1000 - 75 = 925.",
			"choices.0.message.reasoning_content": "",
		}},
		{file: "mistral_chat.json", api: "mistral", same: true},
		{file: "cerebras_chat.json", api: "cerebras", same: true},
		// OpenRouter's reasoning already is the gateway's field.
		{file: "openrouter_reasoning.json", api: "openrouter", same: true},
		// Without a form the adapter is OpenAI's: nothing is renamed.
		{file: "deepseek_reasoner.json", same: true},
	}
	for _, tc := range cases {
		t.Run(tc.api+"/"+tc.file, func(t *testing.T) {
			body := string(fixture.Read(t, provider(tc.file)))
			ctx := `{"model":"m"}`
			if tc.api != "" {
				ctx = `{"model":"m","api":"` + tc.api + `"}`
			}
			out := fixture.Call(t, translate.ChatResponse, ctx, body)
			if tc.same && out[0] != body {
				t.Errorf("changed:\n%s", out[0])
			}
			for path, want := range tc.checks {
				got := gjson.Get(out[0], path)
				if want == "" && got.Exists() {
					t.Errorf("%s present: %s", path, got.Raw)
				} else if want != "" && got.String() != want {
					t.Errorf("%s = %q, want %q", path, got.String(), want)
				}
			}
		})
	}
}

func TestFormStreams(t *testing.T) {
	cases := []struct {
		file, api                  string
		reasoning, content, finish string
		prompt, completion, cached int64
	}{
		{"deepseek_reasoner_stream.sse", "deepseek", "9.8 = 9.80 > 9.11", "9.8 is greater.", "stop", 15, 40, 0},
		{"mistral_stream.sse", "mistral", "", "Claude Monet is often", "length", 16, 4, 0},
		{"openrouter_stream.sse", "openrouter", "Compare the tenths", "9.8 is greater.", "stop", 14, 40, 0},
	}
	for _, tc := range cases {
		t.Run(tc.api, func(t *testing.T) {
			chunks := fixture.Stream(t, translate.ChatStreamEvent, `{"model":"m","api":"`+tc.api+`"}`, fixture.Events(t, provider(tc.file)))
			for _, c := range chunks {
				if strings.Contains(c, "reasoning_content") || strings.Contains(c, "model_length") {
					t.Errorf("provider's own field left in %s", c)
				}
			}
			s := fixture.Assemble(t, chunks)
			if s.Reasoning != tc.reasoning || s.Content != tc.content || s.Finish != tc.finish {
				t.Errorf("reasoning %q content %q finish %q", s.Reasoning, s.Content, s.Finish)
			}
			fixture.CheckUsage(t, s.Usage, tc.prompt, tc.completion, tc.cached)
		})
	}
}
