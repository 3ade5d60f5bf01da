package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// TestPluginsByManifest: what the host reads from a plugin's manifest
// instead of knowing it by name, on one gateway (each boot costs seconds
// under -race).
func TestPluginsByManifest(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	t.Run("an account's compression plugin", func(t *testing.T) { accountCompressionPlugin(t, g) })
	t.Run("embeddings run the plugins that take them", func(t *testing.T) { embeddingsRunPlugins(t, g) })
}

// embeddingsRunPlugins: POST /embeddings runs the request core's
// pre_request phase for the plugins whose manifest declares the
// embeddings capability, and only for them: two default-on copies of the
// test plugin, one declaring it, and an embeddings request runs that one
// (a chat request runs both).
func embeddingsRunPlugins(t *testing.T, g *gatewaytest.Gateway) {
	wasmPath, mf := testPlugin(t)
	embedMF := strings.Replace(strings.Replace(mf, `"name": "testplugin"`, `"name": "embedwatch"`, 1),
		`"kind": "plugin",`, `"kind": "plugin", "capabilities": ["embeddings"],`, 1)
	for _, m := range []string{mf, embedMF} {
		if resp, body := publish(t, g, g.Key, wasmPath, m, "", true); resp.StatusCode/100 != 2 {
			t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
		}
	}
	for _, name := range []string{"testplugin", "embedwatch"} {
		if resp, b, _ := g.Request("PUT", "/modules/"+name+"/default", `{"enabled":true}`); resp.StatusCode != 200 {
			t.Fatalf("default %s: %d %s", name, resp.StatusCode, b)
		}
	}
	resp, body := post(t, g, "/embeddings", `{"model":"test/embed","input":"x"}`, "X-Service-Metadata", "enabled")
	if resp.StatusCode != 200 || len(body.Get("data.0.embedding").Array()) == 0 {
		t.Fatalf("embeddings: %d %s", resp.StatusCode, body.Raw)
	}
	st := body.Get("service_metadata.pipeline")
	if st.Get("#").Int() != 1 || st.Get("0.name").Str != "embedwatch" || st.Get("0.hook").Str != "pre_request" {
		t.Fatalf("embeddings pipeline %s, want embedwatch's pre_request alone", st.Raw)
	}
	_, body = post(t, g, "/chat/completions", hello, "X-Service-Metadata", "enabled")
	if n := body.Get(`service_metadata.pipeline.#(hook=="pre_request")#`).Get("#").Int(); n != 2 {
		t.Fatalf("chat pipeline %s, want both plugins", body.Get("service_metadata.pipeline").Raw)
	}
}

// A compression plugin is known by the role its manifest declares, not by
// its name: an account that publishes its own (here the test plugin,
// which compresses nothing) gets it as the default for its long prompts,
// and the 400 of a prompt that still does not fit names it, with no host
// change; the operator's requests keep the gateway's context-compression.
func accountCompressionPlugin(t *testing.T, g *gatewaytest.Gateway) {
	wasmPath, mf := testPlugin(t)
	_, key := newAccount(t, g, "tenant-compress", 2_000_000_000) // the prompt's $1 hold, and the plugin's sub-request allowance (it is granted chat)
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
