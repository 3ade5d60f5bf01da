package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// A prompt whose bytes exceed a small context but whose tokens fit is
// counted by the host and sent on without the default context-compression
// call (a Wasm call that would only find it fits); one whose tokens do not
// fit still gets the plugin (issue 29).
func TestCompressionDefaultOnlyWhenCounted(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	for _, tc := range []struct {
		name   string
		words  int // "lorem " about 1 token each; test/chat's context is 8,192
		plugin bool
	}{
		{"bytes over, tokens fit", 2000, false}, // 12,000 bytes, ~2,000 tokens
		{"tokens over", 12000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"test/chat","max_tokens":16,"messages":[{"role":"system","content":"` + strings.Repeat("lorem ", tc.words) +
				`"},{"role":"user","content":"hi"}]}`
			resp, b := post(t, g, "/chat/completions", body, "X-Service-Metadata", "enabled")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b.Raw)
			}
			ran := strings.Contains(b.Get("service_metadata.pipeline").Raw, "middle-out")
			if ran != tc.plugin {
				t.Fatalf("context-compression ran: %v, want %v (pipeline %s)", ran, tc.plugin, b.Get("service_metadata.pipeline").Raw)
			}
		})
	}
}

// A compression plugin is known by the role its manifest declares, not by
// its name: an account that publishes its own (here the test plugin,
// which compresses nothing) gets it as the default for its long prompts,
// and the 400 of a prompt that still does not fit names it, with no host
// change; the operator's requests keep the gateway's context-compression.
func TestAccountCompressionPlugin(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	wasmPath, mf := testPlugin(t)
	_, key := newAccount(t, g, "tenant-compress", 1_000_000_000)
	mine := strings.Replace(strings.Replace(mf, `"name": "testplugin"`, `"name": "my-compress"`, 1),
		`"kind": "plugin",`, `"kind": "plugin", "roles": ["compression"],`, 1)
	if resp, body := publish(t, g, key, wasmPath, mine, "account", true); resp.StatusCode != 201 {
		t.Fatalf("tenant publish: %d %s", resp.StatusCode, body.Raw)
	}
	long := `{"model":"test/chat","max_tokens":16,"messages":[{"role":"system","content":"` + strings.Repeat("lorem ", 12000) +
		`"},{"role":"user","content":"hi"}]}`
	resp, b := post(t, g, "/chat/completions", long, "Authorization", "Bearer "+key)
	wantError(t, resp, b, http.StatusBadRequest, `add the my-compress plugin, "plugins": [{"id": "my-compress"}]`)
	if s := b.Get("error.metadata.suggestion").Str; s != "my-compress" {
		t.Fatalf("suggestion %q, want my-compress: %s", s, b.Raw)
	}
	resp, b = post(t, g, "/chat/completions", long, "X-Service-Metadata", "enabled")
	if resp.StatusCode != http.StatusOK || !strings.Contains(b.Get("service_metadata.pipeline").Raw, "middle-out") {
		t.Fatalf("operator's request: %d %s", resp.StatusCode, b.Get("service_metadata").Raw)
	}
}
