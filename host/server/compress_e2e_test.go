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
