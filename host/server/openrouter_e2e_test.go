package server_test

// What OpenRouter's SDKs require of an answer (issue 32), over loopback
// against the real gateway: examples/clients runs @openrouter/sdk itself;
// these pin the fields it validates, and those its types read.

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// wantOpenRouterUsage checks a usage object against OpenRouter's ChatUsage:
// the three upstream_inference_* costs as numbers, the token details.
func wantOpenRouterUsage(t *testing.T, u gjson.Result) {
	t.Helper()
	for _, path := range []string{"cost", "cost_details.upstream_inference_cost", "cost_details.upstream_inference_prompt_cost",
		"cost_details.upstream_inference_completions_cost", "prompt_tokens_details.cached_tokens",
		"completion_tokens_details.reasoning_tokens"} {
		if u.Get(path).Type != gjson.Number {
			t.Errorf("usage.%s = %s, want a number; usage %s", path, u.Get(path).Raw, u.Raw)
		}
	}
	cd := u.Get("cost_details")
	if sum := cd.Get("upstream_inference_prompt_cost").Float() + cd.Get("upstream_inference_completions_cost").Float(); sum <= 0 ||
		sum > cd.Get("upstream_inference_cost").Float()+1e-12 {
		t.Errorf("prompt + completions cost %g, inference cost %s", sum, cd.Get("upstream_inference_cost").Raw)
	}
}

func TestOpenRouterAnswerFields(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	t.Run("chat", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", hello)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b.Raw)
		}
		wantOpenRouterUsage(t, b.Get("usage"))
		if c := b.Get("choices.0"); c.Get("native_finish_reason").Str != "stop" || c.Get("finish_reason").Str != "stop" {
			t.Errorf("choice %s", c.Raw)
		}
	})
	t.Run("stream", func(t *testing.T) {
		out := readStream(t, g, `{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"hello there"}]}`)
		var usage, finish gjson.Result
		for _, line := range strings.Split(out, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			ch := gjson.Parse(data)
			if u := ch.Get("usage"); u.IsObject() {
				usage = u
			}
			for _, c := range ch.Get("choices").Array() {
				if c.Get("finish_reason").Type == gjson.String {
					finish = c
				}
			}
		}
		wantOpenRouterUsage(t, usage)
		if finish.Get("native_finish_reason").Str != "stop" {
			t.Errorf("finishing choice %s", finish.Raw)
		}
	})
	t.Run("embeddings", func(t *testing.T) {
		resp, b := post(t, g, "/embeddings", `{"model":"test/embed","input":["a","b"]}`)
		if resp.StatusCode != 200 || !strings.HasPrefix(b.Get("id").Str, "gen-") || b.Get("object").Str != "list" {
			t.Fatalf("%d %.300s", resp.StatusCode, b.Raw)
		}
		if u := b.Get("usage"); u.Get("cost_details.upstream_inference_prompt_cost").Type != gjson.Number ||
			u.Get("cost_details.upstream_inference_completions_cost").Type != gjson.Number {
			t.Errorf("usage %s", u.Raw)
		}
		// The id is the generation's.
		resp, gb, err := g.Request("GET", "/generation?id="+b.Get("id").Str, "")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("generation %v %d %s", err, resp.StatusCode, gb)
		}
	})
}
