package server_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

func counts(g *gatewaytest.Gateway, slugs ...string) []int64 {
	out := make([]int64, len(slugs))
	for i, s := range slugs {
		out[i] = g.Upstreams[s].Count()
	}
	return out
}

// TestFallbackFaults: each upstream failure on the first endpoint of
// provider.order moves the request to the second, which is called once.
func TestFallbackFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults demo.Faults
	}{
		{"500", demo.Faults{Status: 500}},
		{"429", demo.Faults{Status: 429}},
		{"529", demo.Faults{Status: 529}},
		{"503", demo.Faults{Status: 503}},
		{"slow first byte", demo.Faults{Delay: 2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta"}, Mutate: func(c *config.Config) {
				c.Timeouts.Attempt = config.Duration(300 * time.Millisecond)
			}})
			g.Upstreams["alpha"].SetFaults(tc.faults)
			resp, body := post(t, g, "/chat/completions", `{"model":"test/chat","provider":{"order":["alpha","beta"]},"messages":[{"role":"user","content":"x"}]}`, "X-Service-Metadata", "enabled")
			if resp.StatusCode != 200 || body.Get("provider").Str != "beta" {
				t.Fatalf("%d %s", resp.StatusCode, body.Raw)
			}
			if c := counts(g, "alpha", "beta"); c[0] != 1 || c[1] != 1 {
				t.Fatalf("upstream calls %v, want one each", c)
			}
			if body.Get("service_metadata.attempt").Int() != 2 {
				t.Fatalf("metadata %s", body.Get("service_metadata").Raw)
			}
			// The failed attempt is recorded on the generation.
			gen := generation(t, g, g.Key, body.Get("id").Str)
			if gen.Get("attempts").Int() != 2 || gen.Get("provider_name").Str != "beta" {
				t.Fatalf("generation %s", gen.Raw)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		yml := strings.Replace(gatewaytest.DefaultYAML([]string{"alpha", "beta"}), "{{url:alpha}}", "http://127.0.0.1:1/v1", 1)
		g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta"}, ConfigYAML: yml})
		resp, body := post(t, g, "/chat/completions", `{"model":"test/chat","provider":{"order":["alpha","beta"]},"messages":[{"role":"user","content":"x"}]}`)
		if resp.StatusCode != 200 || body.Get("provider").Str != "beta" {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
	})
	t.Run("bad request is not retried", func(t *testing.T) {
		g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta"}})
		g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 400})
		resp, body := post(t, g, "/chat/completions", `{"model":"test/chat","provider":{"order":["alpha","beta"]},"messages":[{"role":"user","content":"x"}]}`)
		wantError(t, resp, body, 400, "alpha")
		if c := counts(g, "alpha", "beta"); c[0] != 1 || c[1] != 0 {
			t.Fatalf("upstream calls %v", c)
		}
	})
	t.Run("fallback model", func(t *testing.T) {
		yml := gatewaytest.DefaultYAML([]string{"alpha", "beta"}) + `  - id: test/other
    kind: chat
    endpoints:
      - {provider: beta, upstream_model: echo, price: {prompt: 1, completion: 1}}
`
		yml = strings.Replace(yml, "      - {provider: beta, upstream_model: echo, max_output: 1024, price: {prompt: 2, completion: 4}}\n", "", 1)
		g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta"}, ConfigYAML: yml})
		g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 500})
		resp, body := post(t, g, "/chat/completions", `{"model":"test/chat","models":["test/other"],"messages":[{"role":"user","content":"x"}]}`)
		if resp.StatusCode != 200 || body.Get("model").Str != "test/other" || body.Get("provider").Str != "beta" {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
	})
}

func TestStreamFallback(t *testing.T) {
	g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta"}})
	req := `{"model":"test/chat","stream":true,"provider":{"order":["alpha","beta"]},"messages":[{"role":"user","content":"one two three four"}]}`
	// Before any content: the next endpoint serves one clean stream.
	g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 500})
	raw := readStream(t, g, req)
	if !strings.Contains(raw, `"provider":"beta"`) || strings.Contains(raw, `"provider":"alpha"`) || strings.Contains(raw, "error") || strings.Count(raw, "[DONE]") != 1 {
		t.Fatalf("%s", raw)
	}
	// After content: no fallback, nothing sent twice, an error chunk ends it.
	g.Upstreams["alpha"].SetFaults(demo.Faults{CutAfter: 3})
	before := counts(g, "beta")[0]
	raw = readStream(t, g, req)
	if counts(g, "beta")[0] != before {
		t.Fatal("a stream that had sent content fell back to another provider")
	}
	if !strings.Contains(raw, `"finish_reason":"error"`) || strings.Count(raw, "You said") > 0 || strings.Count(raw, "[DONE]") != 1 {
		t.Fatalf("%s", raw)
	}
}

func TestStickySessionsOverHTTP(t *testing.T) {
	yml := gatewaytest.DefaultYAML([]string{"p1", "p2", "p3"})
	for _, p := range []string{"p1", "p2", "p3"} { // equal prices: load balancing alone would spread
		for i := 1; i <= 3; i++ {
			yml = strings.Replace(yml, fmt.Sprintf("{provider: %s, upstream_model: echo, max_output: 1024, price: {prompt: %d, completion: %d}}", p, i, 2*i),
				fmt.Sprintf("{provider: %s, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}", p), 1)
		}
	}
	g := start(t, gatewaytest.Options{Providers: []string{"p1", "p2", "p3"}, ConfigYAML: yml})
	served := func(headers ...string) string {
		body := `{"model":"test/chat","messages":[{"role":"user","content":"x"}]}`
		if len(headers) == 0 {
			body = `{"model":"test/chat","session_id":"sess-body","messages":[{"role":"user","content":"x"}]}`
		}
		resp, b := post(t, g, "/chat/completions", body, headers...)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b.Raw)
		}
		return b.Get("provider").Str
	}
	for _, hdr := range [][]string{nil, {"X-Session-Id", "sess-header"}} {
		first := served(hdr...)
		for i := 0; i < 19; i++ {
			if p := served(hdr...); p != first {
				t.Fatalf("request %d of the session went to %s, not %s", i+2, p, first)
			}
		}
		// The pinned endpoint fails: the session moves, and stays moved.
		g.Upstreams[first].SetFaults(demo.Faults{Status: 500})
		moved := served(hdr...)
		if moved == first {
			t.Fatal("session did not move off a failing endpoint")
		}
		for i := 0; i < 5; i++ {
			if p := served(hdr...); p != moved {
				t.Fatalf("after moving, the session went to %s, not %s", p, moved)
			}
		}
		g.Upstreams[first].SetFaults(demo.Faults{})
	}
}

func TestLoadBalancingOverHTTP(t *testing.T) {
	g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta", "gamma"}})
	n := 300
	for i := 0; i < n; i++ {
		resp, b := post(t, g, "/chat/completions", hello)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b.Raw)
		}
	}
	// docs/routing.md: weight = 1/blended², blended = (3·prompt + completion)/4;
	// provider i has prompt i+1 and completion 2(i+1), so weights ∝ 1/(i+1)².
	w := []float64{1, 1.0 / 4, 1.0 / 9}
	sum := w[0] + w[1] + w[2]
	c := counts(g, "alpha", "beta", "gamma")
	for i, slug := range []string{"alpha", "beta", "gamma"} {
		share := float64(c[i]) / float64(n)
		if want := w[i] / sum; math.Abs(share-want) > 0.08 {
			t.Errorf("%s served %.1f%%, documented share %.1f%% (counts %v)", slug, 100*share, 100*want, c)
		}
	}
}

func TestPreferencesOverHTTP(t *testing.T) {
	yml := `demo: false
providers:
  - {slug: cheap, adapter: openai, base_url: "{{url:cheap}}", data_collection: allow, region: us}
  - {slug: private, adapter: openai, base_url: "{{url:private}}", data_collection: deny, zdr: true, region: eu}
  - {slug: pricey, adapter: openai, base_url: "{{url:pricey}}", data_collection: deny, region: us}
models:
  - id: test/chat
    endpoints:
      - {provider: cheap, upstream_model: echo, quantization: int4, price: {prompt: 0.1, completion: 0.2}, supported_parameters: [temperature]}
      - {provider: private, upstream_model: echo, quantization: bf16, price: {prompt: 1, completion: 2}, supported_parameters: [temperature, top_k]}
      - {provider: pricey, upstream_model: echo, quantization: fp8, price: {prompt: 5, completion: 10}}
`
	g := start(t, gatewaytest.Options{Providers: []string{"cheap", "private", "pricey"}, ConfigYAML: yml})
	cases := []struct {
		name, provider, extra string
		status                int
		want                  string // provider slug, or error text
	}{
		{"order", `{"order":["pricey","cheap"]}`, "", 200, "pricey"},
		{"only", `{"only":["private"]}`, "", 200, "private"},
		{"ignore + sort", `{"ignore":["cheap"],"sort":"price"}`, "", 200, "private"},
		{"order + only + ignore", `{"order":["cheap","private","pricey"],"only":["private","pricey"],"ignore":["private"]}`, "", 200, "pricey"},
		{"sort price", `{"sort":"price"}`, "", 200, "cheap"},
		{"sort object", `{"sort":{"by":"price","partition":"none"}}`, "", 200, "cheap"},
		{"sort + max_price", `{"sort":"price","max_price":{"prompt":"3"},"ignore":["cheap"]}`, "", 200, "private"},
		{"max_price excludes all", `{"max_price":{"prompt":"0.01"}}`, "", 404, "max_price"},
		{"data_collection deny", `{"data_collection":"deny","sort":"price"}`, "", 200, "private"},
		{"zdr", `{"zdr":true}`, "", 200, "private"},
		{"zdr + deny + only", `{"zdr":true,"data_collection":"deny","only":["pricey"]}`, "", 404, "zdr"},
		{"quantizations", `{"quantizations":["fp8"]}`, "", 200, "pricey"},
		{"require_parameters", `{"require_parameters":true,"sort":"price"}`, `,"top_k":3`, 200, "private"},
		{"order with no provider available", `{"order":["nobody"]}`, "", 404, "nobody"},
		{"route sort accepted", `{"sort":"price"}`, `,"route":"sort"`, 200, "cheap"},
		{"allow_fallbacks false", `{"order":["cheap","private"],"allow_fallbacks":false}`, "", 200, "cheap"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, g, "/chat/completions", `{"model":"test/chat","provider":`+tc.provider+tc.extra+`,"messages":[{"role":"user","content":"x"}]}`)
			if tc.status != 200 {
				wantError(t, resp, body, tc.status, tc.want)
				return
			}
			if resp.StatusCode != 200 || body.Get("provider").Str != tc.want {
				t.Fatalf("%d, served by %q, want %q: %s", resp.StatusCode, body.Get("provider").Str, tc.want, body.Raw)
			}
		})
	}
	// Without require_parameters the unsupported parameter is dropped for
	// the endpoint that lacks it, and kept for the one that has it.
	resp, body := post(t, g, "/chat/completions", `{"model":"test/chat","top_k":3,"temperature":0.5,"provider":{"sort":"price"},"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 || body.Get("provider").Str != "cheap" {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	sent := gjson.ParseBytes(g.Upstreams["cheap"].Last().Body)
	if sent.Get("top_k").Exists() || sent.Get("temperature").Float() != 0.5 {
		t.Fatalf("sent %s", sent.Raw)
	}
}
