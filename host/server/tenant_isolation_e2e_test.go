package server_test

import (
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// An account-scoped plugin runs only for its owner's keys: naming it by
// its registry path ("<account>/<name>") from another account is the same
// 400 as a plugin that does not exist, and reveals nothing.
func TestAccountPluginUnreachableFromOtherAccounts(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	wasmPath, mf := testPlugin(t)
	acctB, keyB := newAccount(t, g, "tenant-b", 0)
	if resp, body := publish(t, g, keyB, wasmPath, mf, "account", true); resp.StatusCode != 201 {
		t.Fatalf("tenant publish: %d %s", resp.StatusCode, body.Raw)
	}
	for _, id := range []string{acctB + "/testplugin", "testplugin", "/testplugin", acctB + "/"} {
		resp, body := post(t, g, "/chat/completions", withPlugins(`[{"id":"`+id+`","mode":"block"}]`))
		if resp.StatusCode != 400 || body.Get("error.code").Int() != 400 {
			t.Fatalf("plugin %q from another account: %d %s", id, resp.StatusCode, body.Raw)
		}
		if upstream := g.Upstreams["alpha"].Count(); upstream != 0 {
			t.Fatalf("plugin %q: request went upstream", id)
		}
	}
}
