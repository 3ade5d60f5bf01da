package server_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// rawGateway starts a gateway whose provider "raw" (openai adapter, chat
// model test/raw, embedding model test/raw-embed) is h, plus the demo provider alpha serving test/raw as well when
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
	opts.ConfigYAML = yml + "models:\n  - id: test/raw\n    kind: chat\n    context_length: 8192\n    endpoints:\n" + eps +
		"  - id: test/raw-embed\n    kind: embedding\n    context_length: 8192\n    endpoints:\n" +
		"      - {provider: raw, upstream_model: embed, price: {prompt: 0.1}}\n"
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

// TestConnectionErrorsHideUpstreamAddress: a provider that cannot be
// reached is named, with the kind of failure — never its address or port,
// neither in the answer nor in the generation record a tenant can read.
func TestConnectionErrorsHideUpstreamAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close() // nothing listens there now: connection refused
	port := strconv.Itoa(addr.Port)

	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.(*net.TCPConn).SetLinger(0)
			c.Close() // a reset before any response
		}
	}))
	defer reset.Close()
	resetPort := reset.URL[strings.LastIndex(reset.URL, ":")+1:]

	for _, tc := range []struct {
		name, base, port, want string
	}{
		{"refused", "http://127.0.0.1:" + port + "/v1", port, "could not reach provider raw: connection refused"},
		{"reset", reset.URL + "/v1", resetPort, "could not reach provider raw: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := rawGatewayAt(t, tc.base, false)
			resp, body := post(t, g, "/chat/completions", rawHello)
			wantError(t, resp, body, http.StatusBadGateway, tc.want)
			var gens []string
			_ = g.Ledger.Generations(g.AccountID, func(x *billing.Generation) bool { gens = append(gens, x.Error); return true })
			for _, text := range append(gens, body.Raw) {
				if strings.Contains(text, "127.0.0.1") || strings.Contains(text, tc.port) || strings.Contains(text, "dial tcp") {
					t.Fatalf("the upstream's address reached a client-visible text: %q", text)
				}
			}
		})
	}
}
