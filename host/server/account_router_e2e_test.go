package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// TestAccountRouterPlugin: the host knows routers by their manifests
// (manifest "router"), not by name. A router an account publishes — here
// the pareto router's binary under a name, model id and strategy of the
// tenant's own — routes that account's requests for its model id, whether
// named by the model or listed in plugins, with no host change; it is
// listed in that account's GET /models, and other accounts do not see it.
func TestAccountRouterPlugin(t *testing.T) {
	g := startRouters(t)
	root := gatewaytest.Root()
	mf, err := os.ReadFile(filepath.Join(root, "plugins", "pareto-router", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	for path, v := range map[string]string{"name": "cheap-coder", "router.model": "acme/cheap-coder", "router.strategy": "cheapest",
		"router.name": "Acme's cheapest coder", "config_schema.properties.id.const": "cheap-coder"} {
		if mf, err = sjson.SetBytes(mf, path, v); err != nil {
			t.Fatal(err)
		}
	}
	_, key := newAccount(t, g, "router-tenant", 1_000_000_000)
	if resp, b := publish(t, g, key, filepath.Join(root, "build", "wasm", "pareto-router.wasm"), string(mf), "account", true); resp.StatusCode != 201 {
		t.Fatalf("publish: %d %s", resp.StatusCode, b.Raw)
	}
	tenant := []string{"Authorization", "Bearer " + key, "X-Service-Metadata", "enabled"}

	t.Run("by its model id", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", routerBody("acme/cheap-coder", codePrompt, ""), tenant...)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, b.Raw)
		}
		sm := b.Get("service_metadata")
		if !strings.HasPrefix(b.Get("model").Str, "test/") || sm.Get("requested").Str != "acme/cheap-coder" ||
			sm.Get("pipeline.0.name").Str != "cheap-coder" || sm.Get("pipeline.0.type").Str != "router" {
			t.Fatalf("model %s, service_metadata %s", b.Get("model").Str, sm.Raw)
		}
	})
	t.Run("listed in plugins", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", routerBody("test/mid", codePrompt, `[{"id":"cheap-coder","min_coding_score":0.1}]`), tenant...)
		if resp.StatusCode != http.StatusOK || b.Get("model").Str != "test/cheap" {
			t.Fatalf("want test/cheap (the low tier's cheapest): %d %s", resp.StatusCode, b.Raw)
		}
	})
	t.Run("GET /models", func(t *testing.T) {
		routers := func(auth string) map[string]string {
			resp, raw, err := g.Request("GET", "/models", "", "Authorization", "Bearer "+auth)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%v %d", err, resp.StatusCode)
			}
			ids := map[string]string{}
			for _, m := range gjson.GetBytes(raw, "data").Array() {
				if r := m.Get("router").Str; r != "" {
					ids[m.Get("id").Str] = r
				}
			}
			return ids
		}
		if ids := routers(key); ids["acme/cheap-coder"] != "cheap-coder" || ids["switchyard/auto"] != "auto-router" {
			t.Fatalf("the tenant's routers: %v", ids)
		}
		if ids := routers(g.Key); ids["acme/cheap-coder"] != "" {
			t.Fatalf("another account sees the tenant's router: %v", ids)
		}
	})
	t.Run("not another account's", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", routerBody("acme/cheap-coder", codePrompt, ""))
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("another account's request for the tenant's router model: %d %s", resp.StatusCode, b.Raw)
		}
		if g.Upstreams["alpha"].Count()+g.Anthropics["anth"].Count()+g.Geminis["gem"].Count() != 2 {
			t.Fatalf("upstream calls: the refused request went upstream")
		}
	})
}
