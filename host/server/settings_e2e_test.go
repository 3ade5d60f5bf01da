package server_test

import (
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

func TestAccountProviderSettings(t *testing.T) {
	g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta"}})
	resp, b, _ := g.Request("PUT", "/settings/providers", `{"ignore":["alpha"]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	for i := 0; i < 10; i++ {
		if _, body := post(t, g, "/chat/completions", hello); body.Get("provider").Str != "beta" {
			t.Fatalf("account ignores alpha, served by %s", body.Get("provider").Str)
		}
	}
	// Merged with the request: a request cannot undo the account's ignore.
	resp2, body := post(t, g, "/chat/completions", `{"model":"test/chat","provider":{"only":["alpha"]},"messages":[{"role":"user","content":"x"}]}`)
	wantError(t, resp2, body, 404, "")
	_, b, _ = g.Request("GET", "/settings/providers", "")
	if gjson.GetBytes(b, "data.ignore.0").Str != "alpha" {
		t.Fatalf("%s", b)
	}
	resp, b, _ = g.Request("PUT", "/settings/providers", `{"ignore":["alpha"],"sort":"price"}`)
	if resp.StatusCode != 400 {
		t.Fatalf("unknown field accepted: %d %s", resp.StatusCode, b)
	}
	plain, _, _ := g.Keys.CreateKey(g.AccountID, "plain", "", false)
	resp, b, _ = g.Request("PUT", "/settings/providers", `{}`, "Authorization", "Bearer "+plain)
	if resp.StatusCode != 403 {
		t.Fatalf("ordinary key changed settings: %d %s", resp.StatusCode, b)
	}
	// Embeddings follow the same settings.
	resp, b, _ = g.Request("POST", "/embeddings", `{"model":"test/embed","input":"x"}`)
	if resp.StatusCode != 200 || gjson.GetBytes(b, "provider").Str != "beta" {
		t.Fatalf("embeddings: %d %s", resp.StatusCode, b)
	}
}
