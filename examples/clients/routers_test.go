package clients

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// routersYAML: three scored models behind an OpenAI-style, an Anthropic
// and a Gemini upstream, each answering in its own words. Coding
// percentiles: cheap 0 (low), gemini 0.5 (medium), claude 1 (high).
const routersYAML = `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: alpha, name: alpha, adapter: openai, base_url: "{{url:alpha}}", data_collection: deny, region: us}
  - {slug: anth, name: Anthropic, adapter: anthropic, base_url: "{{url:anth}}", api_key_env: ANTH_KEY, data_collection: deny, region: us}
  - {slug: gem, name: Gemini, adapter: gemini, base_url: "{{url:gem}}", api_key_env: GEM_KEY, data_collection: deny, region: us}
models:
  - id: test/cheap
    context_length: 16384
    endpoints: [{provider: alpha, upstream_model: echo, price: {prompt: 0.1, completion: 0.2}}]
    scores:
      overall: {value: 0.3, source: test, date: 2026-11}
      coding: {value: 0.2, source: test, date: 2026-11}
  - id: test/claude
    context_length: 16384
    endpoints: [{provider: anth, upstream_model: claude-test-1, price: {prompt: 3, completion: 15}}]
    scores:
      overall: {value: 0.8, source: test, date: 2026-11}
      coding: {value: 0.9, source: test, date: 2026-11}
  - id: test/gemini
    context_length: 16384
    endpoints: [{provider: gem, upstream_model: gemini-test, price: {prompt: 0.5, completion: 1.5}}]
    scores:
      overall: {value: 0.6, source: test, date: 2026-11}
      coding: {value: 0.7, source: test, date: 2026-11}
`

var routerAnswers = map[string]string{"test/cheap": "alpha answers", "test/claude": "anthropic answers", "test/gemini": "gemini answers"}

func routersGateway(t *testing.T) *gatewaytest.Gateway {
	t.Helper()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: routersYAML, Anthropic: []string{"anth"}, Gemini: []string{"gem"},
		Env: map[string]string{"ANTH_KEY": "sk-ant-test-0123456789", "GEM_KEY": "gem-test-key"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	g.Upstreams["alpha"].SetFaults(demo.Faults{Reply: routerAnswers["test/cheap"]})
	g.Anthropics["anth"].SetFaults(demo.Faults{Reply: routerAnswers["test/claude"]})
	g.Geminis["gem"].SetFaults(demo.Faults{Reply: routerAnswers["test/gemini"]})
	return g
}

// The router model ids through the official Go SDK, unchanged: the
// request names switchyard/auto or switchyard/pareto-code (options, when
// any, in plugins through WithJSONSet), and the answer, its model and the
// metadata show which model the router chose; streamed too. usage.cost is
// what the credits lost.
func TestGoOpenAISDKRouters(t *testing.T) {
	g := routersGateway(t)
	client := goClient(g, g.Key)
	ctx := context.Background()
	const prompt = "Fix this Python traceback: KeyError in my function"
	cases := []struct {
		name, model, strategy string
		plugins               []map[string]any
		want                  string
	}{
		{"auto, quality first", "switchyard/auto", "auto", []map[string]any{{"id": "auto-router", "cost_quality_tradeoff": 0}}, "test/claude"},
		{"auto, cheapest", "switchyard/auto", "auto", []map[string]any{{"id": "auto-router", "cost_quality_tradeoff": 10}}, "test/cheap"},
		{"pareto, high tier", "switchyard/pareto-code", "pareto", nil, "test/claude"},
		{"pareto, medium tier", "switchyard/pareto-code", "pareto", []map[string]any{{"id": "pareto-router", "min_coding_score": 0.5}}, "test/gemini"},
		{"pareto, low tier", "switchyard/pareto-code", "pareto", []map[string]any{{"id": "pareto-router", "min_coding_score": 0.1}}, "test/cheap"},
	}
	for _, tc := range cases {
		opts := []option.RequestOption{option.WithHeader("X-Service-Metadata", "enabled")}
		if tc.plugins != nil {
			opts = append(opts, option.WithJSONSet("plugins", tc.plugins))
		}
		params := openai.ChatCompletionNewParams{Model: tc.model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
		t.Run(tc.name+"/json", func(t *testing.T) {
			before := g.Ledger.Balance(g.AccountID)
			res, err := client.Chat.Completions.New(ctx, params, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Model != tc.want || !strings.Contains(res.Choices[0].Message.Content, routerAnswers[tc.want]) {
				t.Fatalf("model %s: %q, want %s", res.Model, res.Choices[0].Message.Content, tc.want)
			}
			sm := gjson.Get(res.RawJSON(), "service_metadata")
			if sm.Get("strategy").Str != tc.strategy || sm.Get("requested").Str != tc.model || sm.Get("pipeline.0.data.chosen").Str != tc.want {
				t.Fatalf("service_metadata %s", sm.Raw)
			}
			if err := g.Ledger.Sync(); err != nil {
				t.Fatal(err)
			}
			gen, err := g.Ledger.Generation(res.ID)
			if err != nil {
				t.Fatal(err)
			}
			cost := gjson.Get(res.RawJSON(), "usage.cost").Float()
			spent := float64(g.Ledger.Balance(g.AccountID).Usage-before.Usage) / 1e9
			if gen.Model != tc.want || cost <= 0 || math.Abs(float64(gen.Charged)/1e9-cost) > 1e-12 || math.Abs(spent-cost) > 1e-12 {
				t.Fatalf("record %s %v, usage.cost %v, credits spent %v", gen.Model, gen.Charged, cost, spent)
			}
		})
		t.Run(tc.name+"/stream", func(t *testing.T) {
			s := client.Chat.Completions.NewStreaming(ctx, params, opts...)
			var text strings.Builder
			model := ""
			for s.Next() {
				ch := s.Current()
				model = ch.Model
				if len(ch.Choices) > 0 {
					text.WriteString(ch.Choices[0].Delta.Content)
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if model != tc.want || !strings.Contains(text.String(), routerAnswers[tc.want]) {
				t.Fatalf("streamed %s: %q, want %s", model, text.String(), tc.want)
			}
		})
	}
	// This gateway configures no fusion panel: switchyard/fusion reaches
	// the fusion plugin, which says what to configure (the fusion SDK tests
	// run it with a panel).
	t.Run("fusion without a panel", func(t *testing.T) {
		_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "switchyard/fusion", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "module_settings.fusion.panel") {
			t.Fatalf("%v", err)
		}
	})
}

// The same through the npm openai client (node/routers/).
func TestNodeOpenAISDKRouters(t *testing.T) {
	if out := runNodeTests(t, routersGateway(t), "routers/"); !strings.Contains(out, "# pass 4") {
		t.Fatalf("unexpected node test output:\n%s", out)
	}
}
