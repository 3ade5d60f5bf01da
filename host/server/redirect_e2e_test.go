package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// catcher is the second host a hostile upstream redirects to; it records
// whatever reaches it.
type catcher struct {
	mu   sync.Mutex
	seen []string
}

func (c *catcher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.seen = append(c.seen, r.Method+" "+r.URL.Path+" x-api-key="+r.Header.Get("X-Api-Key")+
		" x-goog-api-key="+r.Header.Get("X-Goog-Api-Key")+" authorization="+r.Header.Get("Authorization"))
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"stolen":true}`))
}

func (c *catcher) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

// A provider that answers 307 (or 308, which also keeps method and body)
// with a Location on another host: the gateway must not follow it. The
// client gets a 502 in the spec's envelope — not the other host's answer —
// and the other host never sees the request, its prompt or the provider key.
func TestUpstreamRedirectNotFollowed(t *testing.T) {
	for _, tc := range []struct {
		adapter, model, keyEnv, key string
		stream                      bool
		status                      int
	}{
		{adapter: "openai", model: "test/redirected", keyEnv: "OAI_KEY", key: "sk-openai-secret-0123456789", status: http.StatusTemporaryRedirect},
		{adapter: "openai", model: "test/redirected", keyEnv: "OAI_KEY", key: "sk-openai-secret-0123456789", status: http.StatusPermanentRedirect, stream: true},
		{adapter: "anthropic", model: "test/redirected", keyEnv: "ANTH_KEY", key: "sk-ant-secret-0123456789", status: http.StatusTemporaryRedirect},
		{adapter: "gemini", model: "test/redirected", keyEnv: "GEM_KEY", key: "AIza-secret-0123456789", status: http.StatusTemporaryRedirect},
	} {
		name := tc.adapter + "/" + http.StatusText(tc.status)
		if tc.stream {
			name += "/stream"
		}
		t.Run(name, func(t *testing.T) {
			second := &catcher{}
			other := httptest.NewServer(second)
			defer other.Close()
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+r.URL.RequestURI(), tc.status)
			}))
			defer redirector.Close()

			yml := `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: hostile, name: Hostile, adapter: ` + tc.adapter + `, base_url: "` + redirector.URL + `/v1", api_key_env: ` + tc.keyEnv + `, data_collection: deny, region: us}
models:
  - id: test/redirected
    kind: chat
    context_length: 8192
    endpoints:
      - {provider: hostile, upstream_model: up-model, max_output: 1024, price: {prompt: 1, completion: 2}}
`
			g := start(t, gatewaytest.Options{ConfigYAML: yml, Env: map[string]string{tc.keyEnv: tc.key}})
			body := `{"model":"` + tc.model + `","messages":[{"role":"user","content":"the secret prompt"}]` +
				map[bool]string{true: `,"stream":true`, false: ""}[tc.stream] + `}`
			resp, raw, err := g.Request(http.MethodPost, "/chat/completions", body)
			if err != nil {
				t.Fatal(err)
			}
			if got := second.requests(); len(got) != 0 {
				t.Fatalf("the redirect target received %d requests: %q", len(got), got)
			}
			if strings.Contains(string(raw), "stolen") {
				t.Fatalf("the client got the second host's answer: %s", raw)
			}
			if !gjson.ValidBytes(raw) {
				t.Fatalf("status %d, not a JSON error envelope: %q", resp.StatusCode, raw)
			}
			out := gjson.ParseBytes(raw)
			wantError(t, resp, out, http.StatusBadGateway, "hostile")
			if got := out.Get("error.metadata.upstream_status").Int(); got != int64(tc.status) {
				t.Errorf("error.metadata.upstream_status %d, want %d: %s", got, tc.status, raw)
			}
		})
	}
}
