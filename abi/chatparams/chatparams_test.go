package chatparams

import (
	"slices"
	"testing"
)

// The lists the host and the OpenAI adapter carried before this package,
// kept here so a change to List is a deliberate one.
func TestListsMatchTheirFormerCopies(t *testing.T) {
	cases := []struct {
		use  Use
		want []string
	}{
		{Routed, []string{"temperature", "top_p", "top_k", "min_p", "top_a", "frequency_penalty", "presence_penalty",
			"repetition_penalty", "logit_bias", "logprobs", "top_logprobs", "max_completion_tokens", "max_tokens", "seed",
			"stop", "response_format", "tools", "tool_choice", "parallel_tool_calls", "reasoning", "reasoning_effort",
			"modalities", "service_tier", CustomTools}},
		{Default, []string{"temperature", "top_p", "frequency_penalty", "presence_penalty", "logit_bias", "logprobs",
			"top_logprobs", "max_completion_tokens", "max_tokens", "seed", "stop", "response_format",
			"tools", "tool_choice", "parallel_tool_calls", "reasoning", "reasoning_effort", "modalities",
			"user", "service_tier", "metadata"}},
		{Forwarded, []string{"messages", "stream", "temperature", "top_p", "top_k", "min_p",
			"repetition_penalty", "frequency_penalty", "presence_penalty",
			"logit_bias", "logprobs", "top_logprobs", "max_completion_tokens",
			"max_tokens", "seed", "stop", "response_format", "tools",
			"tool_choice", "parallel_tool_calls", "reasoning_effort", "modalities",
			"user", "service_tier", "metadata", "n", "audio",
			"prediction", "web_search_options", "verbosity", "prompt_cache_key",
			"safety_identifier", "functions", "function_call", "store"}},
	}
	for _, c := range cases {
		got := Names(c.use)
		a, b := slices.Clone(got), slices.Clone(c.want)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Errorf("use %d: got %v, want %v", c.use, a, b)
		}
		for _, n := range c.want {
			if !Has(n, c.use) {
				t.Errorf("use %d: %s missing from Has", c.use, n)
			}
		}
	}
	if Has("provider", Routed|Default|Forwarded) {
		t.Error("provider is a gateway-only field")
	}
}
