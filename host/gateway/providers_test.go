package gateway_test

import (
	"net/http"
	"testing"

	"github.com/tidwall/gjson"
)

// TestProviderHealth: GET /admin/providers shows the live catalog's
// providers with the outcomes their endpoints served, follows a reload,
// and is for management keys only.
func TestProviderHealth(t *testing.T) {
	g := startReloadable(t)
	for range 3 {
		chat(t, g)
	}
	resp, b, err := g.Request("GET", "/admin/providers", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %d %s", err, resp.StatusCode, b)
	}
	alpha := gjson.GetBytes(b, `data.#(slug=="alpha")`)
	ep := alpha.Get(`endpoints.#(model=="test/chat")`)
	if alpha.Get("status").Str != "ok" || ep.Get("samples").Int() != 3 || ep.Get("error_rate").Float() != 0 ||
		ep.Get("prompt_price").Float() != 1 || ep.Get("down").Bool() || alpha.Get("base_url").Str == "" {
		t.Fatalf("provider health after 3 requests: %s", alpha.Raw)
	}

	if err := g.WriteConfig(catalogYAML(4, 5)); err != nil {
		t.Fatal(err)
	}
	if st, body := reload(t, g, g.Key); st != 200 {
		t.Fatalf("reload: %d %s", st, body.Raw)
	}
	_, b, _ = g.Request("GET", "/admin/providers", "")
	ep = gjson.GetBytes(b, `data.#(slug=="alpha").endpoints.#(model=="test/chat")`)
	if ep.Get("prompt_price").Float() != 4 || ep.Get("samples").Int() != 3 {
		t.Fatalf("after a reload the price is new and the health carried over: %s", ep.Raw)
	}

	_, kb, _ := g.Request("POST", "/keys", `{"name":"plain"}`)
	resp, b, _ = g.Request("GET", "/admin/providers", "", "Authorization", "Bearer "+gjson.GetBytes(kb, "key").Str)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an inference key reads provider health: %d %s", resp.StatusCode, b)
	}
}
