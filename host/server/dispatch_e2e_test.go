package server_test

import (
	"testing"

	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// A fallback holds the worst case of the endpoint it falls back to, not of
// the first one: alpha may generate 100 tokens, beta 100,000, and the
// request sets no max_tokens. With credits for alpha's worst case but not
// beta's, the fallback to beta is refused with 402 instead of being served
// on a hold that does not cover it.
func TestFallbackHoldsTheNewEndpointsWorstCase(t *testing.T) {
	const yml = `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: alpha, adapter: openai, base_url: "{{url:alpha}}", data_collection: deny}
  - {slug: beta, adapter: openai, base_url: "{{url:beta}}", data_collection: deny}
models:
  - id: test/chat
    context_length: 200000
    endpoints:
      - {provider: alpha, upstream_model: echo, max_output: 100, price: {prompt: 1, completion: 2}}
      - {provider: beta, upstream_model: echo, max_output: 100000, price: {prompt: 1, completion: 2}}
`
	const body = `{"model":"test/chat","provider":{"order":["alpha","beta"]},"messages":[{"role":"user","content":"hello there"}]}`
	cases := []struct {
		name    string
		credits float64 // USD
		status  int
	}{
		// beta's worst case: 100,000 × $2/M = $0.20 plus the prompt.
		{"credits cover beta's worst case", 1, 200},
		{"credits cover only alpha's worst case", 0.01, 402},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta"}, ConfigYAML: yml, Credits: tc.credits})
			g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 500})
			resp, b := post(t, g, "/chat/completions", body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if g.Upstreams["alpha"].Count() != 1 {
				t.Fatalf("alpha was tried %d times, want 1", g.Upstreams["alpha"].Count())
			}
			wantBeta := int64(0)
			if tc.status == 200 {
				wantBeta = 1
			}
			if n := g.Upstreams["beta"].Count(); n != wantBeta {
				t.Fatalf("beta was tried %d times, want %d", n, wantBeta)
			}
		})
	}
}
