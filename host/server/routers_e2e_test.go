package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// routersYAML: four scored models on an OpenAI-style, an Anthropic and a
// Gemini upstream, at distinct prices, each upstream answering in its own
// words, so every routing decision shows in the answer, the model and the
// ledger. Coding percentiles: cheap 0 (low), mid 1/3 (medium), gemini 2/3
// and claude 1 (high).
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
  - id: test/mid
    context_length: 16384
    endpoints: [{provider: alpha, upstream_model: echo-mid, price: {prompt: 1, completion: 2}}]
    scores:
      overall: {value: 0.5, source: test, date: 2026-11}
      coding: {value: 0.5, source: test, date: 2026-11}
  - id: test/claude
    context_length: 16384
    endpoints: [{provider: anth, upstream_model: claude-test-1, price: {prompt: 3, completion: 15}}]
    scores:
      overall: {value: 0.8, source: test, date: 2026-11}
      coding: {value: 0.9, source: test, date: 2026-11}
  - id: test/gemini
    context_length: 16384
    input_modalities: [text, image]
    endpoints: [{provider: gem, upstream_model: gemini-test, price: {prompt: 0.5, completion: 1.5}}]
    scores:
      overall: {value: 0.6, source: test, date: 2026-11}
      coding: {value: 0.7, source: test, date: 2026-11}
      vision: {value: 0.7, source: test, date: 2026-11}
  - id: test/unscored
    context_length: 16384
    endpoints: [{provider: alpha, upstream_model: echo, price: {prompt: 0.01, completion: 0.01}}]
`

// answers are what each upstream says, by the model it serves.
var answers = map[string]string{
	"test/cheap": "alpha answers", "test/mid": "alpha answers",
	"test/claude": "anthropic answers", "test/gemini": "gemini answers",
}

func startRouters(t *testing.T) *gatewaytest.Gateway {
	t.Helper()
	g := start(t, gatewaytest.Options{ConfigYAML: routersYAML, Anthropic: []string{"anth"}, Gemini: []string{"gem"},
		Env: map[string]string{"ANTH_KEY": "sk-ant-test-0123456789", "GEM_KEY": "gem-test-key"}})
	g.Upstreams["alpha"].SetFaults(demo.Faults{Reply: answers["test/cheap"]})
	g.Anthropics["anth"].SetFaults(demo.Faults{Reply: answers["test/claude"]})
	g.Geminis["gem"].SetFaults(demo.Faults{Reply: answers["test/gemini"]})
	return g
}

const codePrompt = "Fix this Python traceback: KeyError in my function"

func routerBody(model, prompt, plugins string) string {
	b := `{"model":"` + model + `","messages":[{"role":"user","content":"` + prompt + `"}]`
	if plugins != "" {
		b += `,"plugins":` + plugins
	}
	return b + `}`
}

// checkRouted: the answer came from the chosen model's upstream, the
// metadata shows the router's strategy and stage, and the charge is the
// ledger's record of that model, taken from the credits.
func checkRouted(t *testing.T, g *gatewaytest.Gateway, body string, want, strategy, plugin string) gjson.Result {
	t.Helper()
	before := g.Ledger.Balance(g.AccountID)
	resp, b := post(t, g, "/chat/completions", body, "X-Service-Metadata", "enabled")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b.Raw)
	}
	if b.Get("model").Str != want || !strings.Contains(b.Get("choices.0.message.content").Str, answers[want]) {
		t.Fatalf("want %s answering %q, got %s: %s", want, answers[want], b.Get("model").Str, b.Get("choices.0.message.content").Str)
	}
	sm := b.Get("service_metadata")
	st := sm.Get("pipeline.0")
	if sm.Get("strategy").Str != strategy || st.Get("name").Str != plugin || st.Get("type").Str != "router" || st.Get("data.chosen").Str != want {
		t.Fatalf("service_metadata %s", sm.Raw)
	}
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	gen, err := g.Ledger.Generation(b.Get("id").Str)
	if err != nil {
		t.Fatal(err)
	}
	after := g.Ledger.Balance(g.AccountID)
	cost := usd(t, b.Get("usage.cost"))
	if gen.Model != want || gen.Charged != cost || after.Usage-before.Usage != cost || cost <= 0 {
		t.Fatalf("ledger: %s charged %s; usage.cost %s; credits consumed %s", gen.Model, gen.Charged, cost, after.Usage-before.Usage)
	}
	return b
}

func TestAutoRouter(t *testing.T) {
	g := startRouters(t)
	t.Run("best coder at trade-off 0", func(t *testing.T) {
		b := checkRouted(t, g, routerBody("switchyard/auto", codePrompt, `[{"id":"auto-router","cost_quality_tradeoff":0}]`), "test/claude", "auto", "auto-router")
		sm := b.Get("service_metadata")
		if sm.Get("requested").Str != "switchyard/auto" || sm.Get("pipeline.0.data.task_family").Str != "coding" ||
			sm.Get("pipeline.0.data.candidates.#").Int() != 4 || sm.Get("pipeline.0.data.fallbacks.#").Int() != 2 {
			t.Fatalf("the decision is not shown: %s", sm.Raw)
		}
		if !strings.Contains(sm.Get("summary").Str, "auto") {
			t.Fatalf("summary %q", sm.Get("summary").Str)
		}
	})
	t.Run("cheapest at trade-off 10", func(t *testing.T) {
		checkRouted(t, g, routerBody("switchyard/auto", codePrompt, `[{"id":"auto-router","cost_quality_tradeoff":10}]`), "test/cheap", "auto", "auto-router")
	})
	t.Run("the plugin on a named model", func(t *testing.T) {
		checkRouted(t, g, routerBody("test/cheap", codePrompt, `[{"id":"auto-router","cost_quality_tradeoff":0,"allowed_models":["test/gemini","test/mid"]}]`), "test/gemini", "auto", "auto-router")
	})
	t.Run("the default trade-off picks neither extreme's price above the best", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", routerBody("switchyard/auto", codePrompt, ""), "X-Service-Metadata", "enabled")
		if resp.StatusCode != 200 || b.Get("service_metadata.pipeline.0.data.cost_quality_tradeoff").Int() != 7 {
			t.Fatalf("%d %s", resp.StatusCode, b.Get("service_metadata").Raw)
		}
	})
	t.Run("nothing allowed is a 404", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", routerBody("switchyard/auto", codePrompt, `[{"id":"auto-router","allowed_models":["nobody/*"]}]`))
		wantError(t, resp, b, http.StatusNotFound, "allowed_models nobody/* match no model")
	})
	t.Run("switched off on its own model", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", routerBody("switchyard/auto", codePrompt, `[{"id":"auto-router","enabled":false}]`))
		wantError(t, resp, b, http.StatusBadRequest, "routed by the auto-router plugin")
	})
	t.Run("one router a request", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", routerBody("switchyard/auto", codePrompt, `[{"id":"pareto-router"}]`))
		wantError(t, resp, b, http.StatusBadRequest, "plugins[0].id: a request takes one router plugin, and auto-router already routes this one")
		resp, b = post(t, g, "/chat/completions", routerBody("test/cheap", codePrompt, `[{"id":"pareto-router"},{"id":"auto-router"}]`))
		wantError(t, resp, b, http.StatusBadRequest, "plugins[1].id: a request takes one router plugin, and pareto-router already routes")
	})
	t.Run("a bad option", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", routerBody("switchyard/auto", codePrompt, `[{"id":"auto-router","cost_quality_tradeoff":11}]`))
		wantError(t, resp, b, http.StatusBadRequest, "cost_quality_tradeoff")
	})
	t.Run("stream", func(t *testing.T) {
		raw := readStream(t, g, `{"model":"switchyard/auto","stream":true,"messages":[{"role":"user","content":"`+codePrompt+`"}],"plugins":[{"id":"auto-router","cost_quality_tradeoff":0}]}`)
		if !strings.Contains(raw, `"model":"test/claude"`) || !strings.Contains(raw, "anthropic") || !strings.HasSuffix(strings.TrimSpace(raw), "data: [DONE]") {
			t.Fatalf("%s", raw)
		}
	})
}

func TestParetoRouter(t *testing.T) {
	g := startRouters(t)
	cases := []struct {
		name, plugins, want string
	}{
		{"omitted: high tier, cheapest", "", "test/gemini"},
		{"medium tier", `[{"id":"pareto-router","min_coding_score":0.4}]`, "test/mid"},
		{"low tier", `[{"id":"pareto-router","min_coding_score":0.1}]`, "test/cheap"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := checkRouted(t, g, routerBody("switchyard/pareto-code", codePrompt, tc.plugins), tc.want, "pareto", "pareto-router")
			if b.Get("service_metadata.requested").Str != "switchyard/pareto-code" {
				t.Fatalf("%s", b.Get("service_metadata").Raw)
			}
		})
	}
	t.Run("weighted_avg with traffic, falling back to list prices", func(t *testing.T) {
		b := checkRouted(t, g, routerBody("switchyard/pareto-code", codePrompt, `[{"id":"pareto-router","price_source":"weighted_avg"}]`), "test/gemini", "pareto", "pareto-router")
		// test/gemini, test/mid and test/cheap had traffic above: their
		// effective prices are known; test/claude had none in this
		// gateway's records and is ranked by its list price.
		want := map[string]string{"test/gemini": "weighted_avg", "test/mid": "weighted_avg", "test/cheap": "weighted_avg", "test/claude": "prompt (no traffic)"}
		cands := b.Get("service_metadata.pipeline.0.data.candidates").Array()
		if len(cands) != len(want) {
			t.Fatalf("candidates %s", b.Get("service_metadata.pipeline.0.data.candidates").Raw)
		}
		for _, c := range cands {
			if want[c.Get("model").Str] != c.Get("price_from").Str || c.Get("price").Float() <= 0 {
				t.Fatalf("candidate %s", c.Raw)
			}
		}
	})
	t.Run("the plugin on a named model, streamed", func(t *testing.T) {
		raw := readStream(t, g, `{"model":"test/cheap","stream":true,"messages":[{"role":"user","content":"hi"}],"plugins":[{"id":"pareto-router"}]}`)
		if !strings.Contains(raw, `"model":"test/gemini"`) || !strings.Contains(raw, "gemini") {
			t.Fatalf("%s", raw)
		}
	})
	t.Run("sticky per session", func(t *testing.T) {
		body := `{"model":"switchyard/pareto-code","session_id":"s-1","messages":[{"role":"user","content":"hi"}]}`
		_, b1 := post(t, g, "/chat/completions", body, "X-Service-Metadata", "enabled")
		_, b2 := post(t, g, "/chat/completions", body, "X-Service-Metadata", "enabled")
		if b1.Get("model").Str != "test/gemini" || b1.Get("service_metadata.pipeline.0.data.sticky").Bool() || !b2.Get("service_metadata.pipeline.0.data.sticky").Bool() {
			t.Fatalf("%s / %s", b1.Get("service_metadata").Raw, b2.Get("service_metadata").Raw)
		}
		// The X-Session-Id header is the same session.
		_, b3 := post(t, g, "/chat/completions", `{"model":"switchyard/pareto-code","messages":[{"role":"user","content":"hi"}]}`, "X-Service-Metadata", "enabled", "X-Session-Id", "s-1")
		if !b3.Get("service_metadata.pipeline.0.data.sticky").Bool() {
			t.Fatalf("header session: %s", b3.Get("service_metadata").Raw)
		}
	})
}

func TestRouterModels(t *testing.T) {
	g := startRouters(t)
	t.Run("switchyard/fusion with fusion switched off", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", routerBody("switchyard/fusion", "hi", `[{"id":"fusion","enabled":false}]`))
		wantError(t, resp, b, http.StatusBadRequest, "answered by the fusion plugin, which this request disables")
	})
	t.Run("GET /models lists the installed routers", func(t *testing.T) {
		resp, raw, err := g.Request("GET", "/models", "")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v %d", err, resp.StatusCode)
		}
		ids := map[string]string{}
		for _, m := range gjson.GetBytes(raw, "data").Array() {
			ids[m.Get("id").Str] = m.Get("router").Str
		}
		if ids["switchyard/auto"] != "auto-router" || ids["switchyard/pareto-code"] != "pareto-router" || ids["switchyard/fusion"] != "fusion" {
			t.Fatalf("models %v", ids)
		}
	})
}

// The quality scores are configuration: a new file, reloaded, changes what
// the routers choose, with no rebuild and no restart.
func TestRouterScoresReload(t *testing.T) {
	g := start(t, gatewaytest.Options{ConfigYAML: routersYAML, ConfigFile: true, Anthropic: []string{"anth"}, Gemini: []string{"gem"},
		Env: map[string]string{"ANTH_KEY": "sk-ant-test-0123456789", "GEM_KEY": "gem-test-key"}})
	body := routerBody("switchyard/pareto-code", codePrompt, "")
	if _, b := post(t, g, "/chat/completions", body); b.Get("model").Str != "test/gemini" {
		t.Fatalf("before the reload: %s", b.Raw)
	}
	// test/mid now has the best coding figure: the high tier is test/mid
	// and test/claude, and test/mid is the cheaper.
	if err := g.WriteConfig(strings.Replace(routersYAML, "coding: {value: 0.5, source: test", "coding: {value: 0.95, source: test", 1)); err != nil {
		t.Fatal(err)
	}
	resp, b, err := g.Request("POST", "/admin/reload", "", "Authorization", "Bearer "+g.Key)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("reload: %v %d %s", err, resp.StatusCode, b)
	}
	if _, b := post(t, g, "/chat/completions", body); b.Get("model").Str != "test/mid" {
		t.Fatalf("after the reload: %s", b.Raw)
	}
}

// A module's chat sub-request may name a router model: it is routed like
// a request (here from a server tool), charged under its own record.
func TestRouterInSubRequest(t *testing.T) {
	g := start(t, gatewaytest.Options{ConfigYAML: routersYAML, Anthropic: []string{"anth"}, Gemini: []string{"gem"},
		Env: map[string]string{"ANTH_KEY": "sk-ant-test-0123456789", "GEM_KEY": "gem-test-key"}})
	publishToolTest(t, g)
	// The test tool's calls have a 1 s limit, which the sub-request runs
	// within: load the router first (compiling a Go module takes seconds
	// under -race).
	if resp, b := post(t, g, "/chat/completions", routerBody("switchyard/pareto-code", "warm up", "")); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b.Raw)
	}
	sub := `{"model":"switchyard/pareto-code","messages":[{"role":"user","content":"from-the-tool"}]}`
	body := `{"model":"test/cheap","messages":[{"role":"user","content":` + strconv.Quote("call:tooltest args:{\"chat\":"+sub+"}") + `}],"tools":[{"type":"service:tooltest"}]}`
	resp, b := post(t, g, "/chat/completions", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b.Raw)
	}
	if c := b.Get("choices.0.message.content").Str; !strings.Contains(c, `"chat_status":200`) || !strings.Contains(c, `"model":"test/gemini"`) {
		t.Fatalf("answer %q", c)
	}
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	if rec, err := g.Ledger.Generation(b.Get("id").Str + "-sub1"); err != nil || rec.Model != "test/gemini" {
		t.Fatalf("sub-request record %+v %v", rec, err)
	}
}
