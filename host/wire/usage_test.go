package wire

import (
	"testing"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/usage"
	"github.com/tidwall/gjson"
)

func TestParseAndWriteUsage(t *testing.T) {
	body := []byte(`{"id":"gen-1","usage":{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,` +
		`"prompt_tokens_details":{"cached_tokens":20,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":10},"extra":"kept"}}`)
	u, ok := ParseUsage(body)
	if !ok || u != (usage.Usage{PromptTokens: 100, CompletionTokens: 50, CachedTokens: 20, ReasoningTokens: 10, Requests: 1}) {
		t.Fatalf("ParseUsage = %+v, %v", u, ok)
	}
	if _, ok := ParseUsage([]byte(`{"choices":[]}`)); ok {
		t.Error("no usage reported as present")
	}
	if u, ok := ParseUsage([]byte(`{"usage":{"prompt_tokens":null,"total_tokens":7}}`)); !ok || u.PromptTokens != 7 {
		t.Errorf("embedding-style usage = %+v, %v", u, ok)
	}
	r := billing.RatesOf(catalog.Price{Prompt: 1, Completion: 2})
	g := &usage.Generation{Usage: u, Cost: r.Compute(u), FailedCost: 5}
	g.Charged = g.Cost.Total + g.FailedCost
	out, err := WriteUsage(body, g)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"usage.cost":                                "0.000200005", // 80×1 + 20×1 (no cache price) + 40×2 + 10×2 = 200 µ$, + 5 nanos
		"usage.cost_details.prompt":                 "0.00008",
		"usage.cost_details.reasoning":              "0.00002",
		"usage.cost_details.failed_attempts":        "0.000000005",
		"usage.extra":                               "kept",
		"usage.total_tokens":                        "150",
		"usage.prompt_tokens_details.cached_tokens": "20",
		"id": "gen-1",
		// OpenRouter's members (issue 32): the final attempt's inference
		// cost, its input tokens' (80+20) and its output tokens' (40×2+10×2).
		"usage.cost_details.upstream_inference_cost":             "0.0002",
		"usage.cost_details.upstream_inference_prompt_cost":      "0.0001",
		"usage.cost_details.upstream_inference_completions_cost": "0.0001",
	} {
		if got := gjson.GetBytes(out, path).Raw; got != want && gjson.GetBytes(out, path).String() != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	if gjson.GetBytes(out, "usage.estimated").Exists() {
		t.Error("upstream usage marked estimated")
	}
	g.Usage.Estimated = true
	// A stream chunk without usage gets one.
	out, err = WriteUsage([]byte(`{"choices":[{"delta":{}}]}`), g)
	if err != nil || gjson.GetBytes(out, "usage.prompt_tokens").Int() != 100 || !gjson.GetBytes(out, "usage.estimated").Bool() {
		t.Errorf("chunk: %s %v", out, err)
	}
	// The details OpenRouter's clients read are there when zero.
	out, _ = WriteUsage([]byte(`{"usage":{"prompt_tokens":1,"completion_tokens":1}}`), &usage.Generation{Usage: usage.Usage{PromptTokens: 1, CompletionTokens: 1}})
	for _, path := range []string{"usage.prompt_tokens_details.cached_tokens", "usage.completion_tokens_details.reasoning_tokens",
		"usage.cost_details.upstream_inference_prompt_cost", "usage.cost_details.upstream_inference_completions_cost"} {
		if r := gjson.GetBytes(out, path); r.Type != gjson.Number || r.Num != 0 {
			t.Errorf("%s = %s in %s", path, r.Raw, out)
		}
	}
}
