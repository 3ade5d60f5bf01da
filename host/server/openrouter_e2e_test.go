package server_test

// What OpenRouter's SDKs require of an answer (issue 32), over loopback
// against the real gateway: examples/clients runs @openrouter/sdk itself;
// these pin the fields it validates, and those its types read.

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/keys"
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

const modelsYAML = `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: alpha, name: Alpha, adapter: openai, base_url: "{{url:alpha}}", data_collection: deny, region: us}
  - {slug: beta, name: Beta, adapter: openai, base_url: "{{url:beta}}", data_collection: allow, region: eu, zdr: true,
     supported_parameters: [temperature, max_tokens]}
models:
  - id: openai/gpt-test
    context_length: 8192
    endpoints:
      - {provider: alpha, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2, cache_read: 0.5}}
      - {provider: beta, upstream_model: echo, context_length: 16384, max_output: 2048, price: {prompt: 2, completion: 4}}
    scores:
      overall: {value: 0.5, source: test, date: 2026-11}
  - id: test/coder
    context_length: 8192
    endpoints: [{provider: beta, upstream_model: echo, price: {prompt: 1, completion: 1}}]
    scores:
      overall: {value: 0.4, source: test, date: 2026-11}
      coding: {value: 0.9, source: test, date: 2026-11}
  - id: test/embed
    kind: embedding
    endpoints: [{provider: alpha, upstream_model: embed, price: {prompt: 0.1}}]
`

// GET /models and the routes beside it in OpenRouter's shapes (issue 32).
func TestOpenRouterModelRoutes(t *testing.T) {
	g := start(t, gatewaytest.Options{ConfigYAML: modelsYAML, Providers: []string{"alpha", "beta"}})
	get := func(path string) (int, gjson.Result) {
		t.Helper()
		resp, b, err := g.Request("GET", path, "")
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, gjson.ParseBytes(b)
	}
	ids := func(b gjson.Result) string {
		var out []string
		for _, m := range b.Get("data").Array() {
			out = append(out, m.Get("id").Str)
		}
		return strings.Join(out, ",")
	}
	st, b := get("/models")
	if st != 200 || b.Get("total_count").Int() != int64(len(b.Get("data").Array())) || b.Get("links.next").Type != gjson.Null {
		t.Fatalf("%d %s", st, b.Raw)
	}
	m := b.Get(`data.#(id=="openai/gpt-test")`)
	for path, want := range map[string]string{
		"canonical_slug": `"openai/gpt-test"`, "context_length": `8192`, "per_request_limits": `null`,
		"default_parameters": `null`, "supported_voices": `null`, "links.details": `"/api/v1/models/openai/gpt-test/endpoints"`,
		"architecture.input_modalities": `["text"]`, "architecture.output_modalities": `["text"]`,
		"architecture.tokenizer": `"GPT"`, "top_provider.context_length": `16384`, "top_provider.max_completion_tokens": `2048`,
		"top_provider.is_moderated": `false`, "pricing.prompt": `"0.000001"`, "pricing.input_cache_read": `"0.0000005"`,
		"providers": `["alpha","beta"]`,
	} {
		if got := m.Get(path).Raw; got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	// No date configured: when the gateway first listed it (TestModelCreated).
	if got := m.Get("created").Int(); got <= 0 || got > time.Now().Unix() {
		t.Errorf("created = %d, want the time the gateway first listed the model", got)
	}
	if got := m.Get("architecture.modality").Str; got != "text->text" {
		t.Errorf("modality %q", got)
	}
	if p := m.Get("supported_parameters").Array(); len(p) < 3 || !m.Get(`supported_parameters.#(=="tools")`).Exists() {
		t.Errorf("supported_parameters %s", m.Get("supported_parameters").Raw)
	}
	if st, b := get("/embeddings/models"); st != 200 || ids(b) != "test/embed" || b.Get("data.0.architecture.modality").Str != "text->embeddings" ||
		b.Get("data.0.context_length").Type != gjson.Null {
		t.Errorf("embedding models %d %s", st, b.Raw)
	}
	// Filters.
	if _, b := get("/models?supported_parameters=tools,temperature&output_modalities=text"); !strings.HasPrefix(ids(b), "openai/gpt-test") ||
		strings.Contains(ids(b), "test/coder") || strings.Contains(ids(b), "test/embed") {
		t.Errorf("supported_parameters filter: %s", ids(b))
	}
	if _, b := get("/models?supported_parameters=max_tokens,temperature&q=CODER"); ids(b) != "test/coder" || b.Get("total_count").Int() != 1 {
		t.Errorf("q filter: %s", ids(b))
	}
	if _, b := get("/models?category=programming"); ids(b) != "test/coder" {
		t.Errorf("category: %s", ids(b))
	}
	if _, b := get("/models?category=legal"); ids(b) != "openai/gpt-test,test/coder" {
		t.Errorf("category by overall score: %s", ids(b))
	}
	if st, b := get("/models?category=knitting"); st != 400 || !strings.Contains(b.Get("error.message").Str, "programming") {
		t.Errorf("unknown category %d %s", st, b.Raw)
	}
	if st, _ := get("/models?limit=-1"); st != 400 {
		t.Errorf("limit -1: %d", st)
	}
	// Pages.
	_, all := get("/models")
	_, p1 := get("/models?limit=2&q=")
	if ids(p1) != strings.Join(strings.Split(ids(all), ",")[:2], ",") || p1.Get("total_count").Int() != all.Get("total_count").Int() {
		t.Fatalf("page 1 %s", p1.Raw)
	}
	next := p1.Get("links.next").Str
	if !strings.HasPrefix(next, "/api/v1/models?") || !strings.Contains(next, "offset=2") || !strings.Contains(next, "limit=2") {
		t.Fatalf("links.next %q", next)
	}
	if st, c := get("/models/count?supported_parameters=max_tokens"); st != 200 || c.Get("data.count").Int() != 2 {
		t.Errorf("count %d %s", st, c.Raw)
	}
	// One model, its endpoints.
	if st, b := get("/model/openai/gpt-test"); st != 200 || b.Get("data.id").Str != "openai/gpt-test" {
		t.Errorf("model %d %s", st, b.Raw)
	}
	if st, b := get("/model/nobody/nothing"); st != 404 {
		t.Errorf("unknown model %d %s", st, b.Raw)
	}
	st, b = get("/models/openai/gpt-test/endpoints")
	eps := b.Get("data.endpoints").Array()
	if st != 200 || len(eps) != 2 || b.Get("data.architecture.tokenizer").Str != "GPT" {
		t.Fatalf("endpoints %d %s", st, b.Raw)
	}
	for path, want := range map[string]string{"provider_name": `"Beta"`, "tag": `"beta"`, "context_length": `16384`, "max_completion_tokens": `2048`,
		"supported_parameters": `["max_tokens","temperature"]`, "supports_tool_choice.auto": `false`, "quantization": `null`,
		"uptime_last_30m": `null`, "pricing.completion": `"0.000004"`, "data_collection": `"allow"`} {
		if got := eps[1].Get(path).Raw; got != want {
			t.Errorf("endpoint %s = %s, want %s", path, got, want)
		}
	}
	if st, b := get("/providers"); st != 200 || b.Get("data.#.slug").Raw != `["alpha","beta"]` || b.Get("data.0.privacy_policy_url").Type != gjson.Null {
		t.Errorf("providers %d %s", st, b.Raw)
	}
	if st, b := get("/endpoints/zdr"); st != 200 || b.Get("data.#.model_id").Raw != `["openai/gpt-test","test/coder"]` || b.Get("data.0.tag").Str != "beta" {
		t.Errorf("zdr endpoints %d %s", st, b.Raw)
	}
	// /models/user: the endpoints the account's provider settings allow.
	if err := g.Keys.SetProviders(g.AccountID, keys.ProviderSettings{Ignore: []string{"beta"}}); err != nil {
		t.Fatal(err)
	}
	if _, b := get("/models/user?output_modalities=all"); !strings.HasPrefix(ids(b), "openai/gpt-test,switchyard/") ||
		!strings.HasSuffix(ids(b), ",test/embed") ||
		b.Get(`data.#(id=="openai/gpt-test").providers`).Raw != `["alpha"]` {
		t.Errorf("user models %s", b.Raw)
	}
}

// OpenRouter's names accepted as aliases of ours (issue 32): server tool
// types openrouter:…, router ids openrouter/…, the metadata header (its
// answer under openrouter_metadata), and the plugin options its SDK types
// send, accepted and reported as unsupported.
func TestOpenRouterAliases(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	t.Run("server tool", func(t *testing.T) {
		for _, choice := range []string{"", `,"tool_choice":{"type":"openrouter:datetime"}`} {
			resp, b := post(t, g, "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"what time is it"}],`+
				`"tools":[{"type":"openrouter:datetime","parameters":{"timezone":"Asia/Tokyo"}}],"max_tool_calls":2`+choice+`}`)
			if resp.StatusCode != 200 || !strings.Contains(b.Get("choices.0.message.content").Str, `"timezone":"Asia/Tokyo"`) ||
				b.Get("usage.server_tool_use_details.tool_calls_executed").Int() != 1 {
				t.Fatalf("%d %s", resp.StatusCode, b.Raw)
			}
		}
		// Ours and OpenRouter's name of one tool are the same tool.
		resp, b := post(t, g, "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"x"}],`+
			`"tools":[{"type":"openrouter:datetime"},{"type":"service:datetime"}]}`)
		wantError(t, resp, b, 400, "listed twice")
	})
	t.Run("online variant", func(t *testing.T) {
		// OpenRouter's :online is the web plugin on the model: it runs,
		// and the model answering is the base model.
		resp, b := post(t, g, "/chat/completions", `{"model":"test/chat:online","messages":[{"role":"user","content":"latest news"}]}`,
			"X-Service-Metadata", "enabled")
		if resp.StatusCode != 200 || b.Get("model").Str != "test/chat" {
			t.Fatalf("%d %s", resp.StatusCode, b.Raw)
		}
		if st := b.Get(`service_metadata.pipeline.#(name=="web")`); st.Get("hook").Str != "pre_request" || st.Get("data.results").Int() == 0 {
			t.Fatalf("the web plugin did not run: %s", b.Get("service_metadata").Raw)
		}
	})
	t.Run("router model and metadata header", func(t *testing.T) {
		g := start(t, gatewaytest.Options{ConfigYAML: modelsYAML, Providers: []string{"alpha", "beta"}}) // models with scores
		for _, h := range []string{"X-OpenRouter-Metadata", "X-OpenRouter-Experimental-Metadata"} {
			resp, b := post(t, g, "/chat/completions", `{"model":"openrouter/auto","messages":[{"role":"user","content":"hello there"}],`+
				`"plugins":[{"id":"auto-router","cost_tier":"low","excluded_models":["x/y"],"pin_model":true}]}`, h, "enabled")
			if resp.StatusCode != 200 || b.Get("service_metadata").Exists() {
				t.Fatalf("%s: %d %s", h, resp.StatusCode, b.Raw)
			}
			m := b.Get("openrouter_metadata")
			if m.Get("requested").Str != "switchyard/auto" || m.Get("strategy").Str != "auto" ||
				m.Get("unsupported").Raw != `["auto-router.cost_tier","auto-router.excluded_models","auto-router.pin_model"]` {
				t.Errorf("%s: metadata %s", h, m.Raw)
			}
		}
		// Without the header: no metadata; X-Service-Metadata: ours.
		resp, b := post(t, g, "/chat/completions", `{"model":"openrouter/pareto-code","messages":[{"role":"user","content":"fix my code"}],`+
			`"plugins":[{"id":"pareto-router","max_price":2.5}]}`, "X-Service-Metadata", "enabled")
		if resp.StatusCode != 200 || b.Get("service_metadata.unsupported").Raw != `["pareto-router.max_price"]` ||
			b.Get("service_metadata.requested").Str != "switchyard/pareto-code" {
			t.Fatalf("%d %s", resp.StatusCode, b.Raw)
		}
		// An error answer too.
		resp, b = post(t, g, "/chat/completions", `{"model":"nobody/nothing","messages":[{"role":"user","content":"x"}]}`, "X-OpenRouter-Metadata", "enabled")
		if resp.StatusCode != 404 || b.Get("service_metadata").Exists() {
			t.Errorf("error %d %s", resp.StatusCode, b.Raw)
		}
	})
	t.Run("plugin options never 400", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"hello there"}],"plugins":[`+
			`{"id":"web","enabled":false,"mode":"fast","x_search":{"allowed_x_handles":["a"]}},{"id":"file-parser","max_files":3}]}`,
			"X-Service-Metadata", "enabled")
		if resp.StatusCode != 200 || b.Get("service_metadata.unsupported").Raw != `["web.mode","web.x_search","file-parser.max_files"]` {
			t.Fatalf("%d %s", resp.StatusCode, b.Raw)
		}
		// Their types are still checked.
		resp, b = post(t, g, "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"x"}],"plugins":[{"id":"auto-router","pin_model":"yes"}]}`)
		wantError(t, resp, b, 400, "plugins[0].pin_model")
	})
}

// A stream asked with OpenRouter's header carries openrouter_metadata on
// its final chunk (and no service_metadata); with ours, service_metadata.
func TestOpenRouterMetadataStream(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	for _, tc := range []struct{ header, want, not string }{
		{"X-OpenRouter-Metadata", "openrouter_metadata", "service_metadata"},
		{"X-Service-Metadata", "service_metadata", "openrouter_metadata"},
	} {
		for _, body := range []string{`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"hello there"}]}`,
			`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"what time is it"}],"tools":[{"type":"openrouter:datetime"}]}`} {
			req, _ := http.NewRequest("POST", g.URL+"/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+g.Key)
			req.Header.Set(tc.header, "enabled")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var found bool
			for _, line := range strings.Split(string(raw), "\n") {
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				if gjson.Get(data, tc.not).Exists() {
					t.Fatalf("%s: %s in %s", tc.header, tc.not, data)
				}
				found = found || gjson.Get(data, tc.want+".requested").Str == "test/chat"
			}
			if !found {
				t.Errorf("%s: no %s in %s", tc.header, tc.want, raw)
			}
		}
	}
}
