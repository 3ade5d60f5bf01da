package server_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// rawGateway starts a gateway whose provider "raw" (openai adapter, model
// test/raw) is h, plus the demo provider alpha serving test/raw as well when
// withAlpha (so a request can fall back to it).
func rawGateway(t *testing.T, h http.Handler, withAlpha bool) *gatewaytest.Gateway {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return rawGatewayAt(t, srv.URL+"/v1", withAlpha)
}

func rawGatewayAt(t *testing.T, baseURL string, withAlpha bool) *gatewaytest.Gateway {
	t.Helper()
	yml := "demo: false\ntimeouts: {attempt: 10s, request: 30s}\nproviders:\n" +
		"  - {slug: raw, name: Raw, adapter: openai, base_url: \"" + baseURL + "\", data_collection: deny, region: us}\n"
	eps := "      - {provider: raw, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}\n"
	opts := gatewaytest.Options{Providers: []string{}}
	if withAlpha {
		yml += "  - {slug: alpha, name: Alpha, adapter: openai, base_url: \"{{url:alpha}}\", data_collection: deny, region: us}\n"
		eps += "      - {provider: alpha, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}\n"
		opts.Providers = []string{"alpha"}
	}
	opts.ConfigYAML = yml + "models:\n  - id: test/raw\n    kind: chat\n    context_length: 8192\n    endpoints:\n" + eps
	return start(t, opts)
}

const rawHello = `{"model":"test/raw","messages":[{"role":"user","content":"hello there"}]}`

// TestUpstreamRetryAfterKept: a provider's 429 or 503 with Retry-After
// reaches the client with the provider's value (seconds, or an HTTP date),
// not a made-up 1; and the endpoint is not asked again before then while
// another can serve.
func TestUpstreamRetryAfterKept(t *testing.T) {
	for _, tc := range []struct {
		status        int
		header, value string
		want          string
	}{
		{http.StatusTooManyRequests, "Retry-After", "17", "17"},
		{http.StatusServiceUnavailable, "Retry-After", "120", "120"},
		{http.StatusTooManyRequests, "Retry-After-Ms", "2500", "3"},
	} {
		t.Run(http.StatusText(tc.status)+"/"+tc.header, func(t *testing.T) {
			g := rawGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set(tc.header, tc.value)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(`{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit_exceeded"}}`))
			}), false)
			resp, body := post(t, g, "/chat/completions", rawHello)
			wantError(t, resp, body, tc.status, "raw")
			if got := resp.Header.Get("Retry-After"); got != tc.want {
				t.Fatalf("Retry-After %q, want the upstream's %q", got, tc.want)
			}
		})
	}

	t.Run("cool-down", func(t *testing.T) {
		var calls atomic.Int64
		g := rawGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Header().Set("Retry-After", "300")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"message":"slow down","type":"rate_limit_error"}}`))
		}), true)
		ordered := `{"model":"test/raw","provider":{"order":["raw","alpha"]},"messages":[{"role":"user","content":"hello"}]}`
		for i := range 3 {
			resp, body := post(t, g, "/chat/completions", ordered)
			if resp.StatusCode != http.StatusOK || body.Get("provider").Str != "alpha" {
				t.Fatalf("request %d: status %d provider %q, want alpha's answer: %s", i, resp.StatusCode, body.Get("provider").Str, body.Raw)
			}
		}
		if calls.Load() != 1 {
			t.Fatalf("the provider that asked for 300 s of quiet was called %d times in a row", calls.Load())
		}
	})
}
