package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// syctl plugin publish, activate, rollback and logs against a running
// gateway: a module that fails the guest check is refused with the
// gateway's 400; the test plugin publishes into the key's account, a
// second version activates and rolls back, and after a request that makes
// it log, `logs` prints its lines — the account's module only (issue 37).
func TestPluginRemote(t *testing.T) {
	// The account's module runs under the tenant limits; this test is
	// about syctl, not them: room for a first call under -race on a
	// loaded machine (its 500 ms default was exceeded in CI).
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, Mutate: func(c *config.Config) { c.TenantModules.TimeoutMS = 20000 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	root := gatewaytest.Root()
	bin := filepath.Join(root, "build", "testdata", "testplugin.wasm")
	mf := filepath.Join(root, "host", "pipeline", "testdata", "testplugin", "manifest.json")
	v2 := filepath.Join(t.TempDir(), "v2.json")
	b, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v2, bytes.Replace(b, []byte(`"version": "1.0.0"`), []byte(`"version": "1.1.0"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	syctl := func(code int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		args = append([]string{"plugin"}, append(args, "--url", g.URL, "--key", g.Key)...)
		if got := run(args, &out, &errb); got != code {
			t.Fatalf("syctl %v: exit %d, want %d\n%s%s", args, got, code, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
	broken := filepath.Join(root, "abi", "conformance", "testdata", "broken", "lacking.json")
	if out := syctl(1, "publish", filepath.Join(root, "build", "testdata", "broken.wasm"), "--manifest", broken); !strings.Contains(out, "400: module broken@1.0.1 fails the guest check") {
		t.Errorf("publishing a broken module: %s", out)
	}
	syctl(0, "publish", bin, "--manifest", mf, "--activate")
	syctl(0, "publish", bin, "--manifest", v2)
	if out := syctl(0, "activate", "testplugin", "1.1.0"); !strings.Contains(out, "1.1.0") {
		t.Errorf("activate: %s", out)
	}
	if out := syctl(0, "rollback", "testplugin"); !strings.Contains(out, "1.0.0") {
		t.Errorf("rollback: %s", out)
	}
	resp, body, err := g.Request("POST", "/chat/completions",
		`{"model":"test/chat","messages":[{"role":"user","content":"hi"}],"plugins":[{"id":"testplugin","mode":"logflood"}]}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("request: %v %s", err, body)
	}
	out := syctl(0, "logs", "testplugin")
	if !strings.Contains(out, "info  testplugin@1.0.0: flood 0 xxxx") {
		t.Errorf("logs lack the module's first line:\n%.600s", out)
	}
	if n := strings.Count(out, "\n"); n == 0 || n > 200 {
		t.Errorf("logs printed %d lines, want 1 to 200 (the ring's bound)", n)
	}
	if out := syctl(0, "logs", "testplugin", "--scope", "global"); out != "" {
		t.Errorf("the gateway-wide testplugin (none) shows the account's lines:\n%.300s", out)
	}
	// Another account's management key reads its own testplugin, which
	// logged nothing: not the first account's lines.
	acct, err := g.Keys.CreateAccount("other")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := g.Keys.CreateKey(acct.ID, "other-admin", "", true)
	if err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	if code := run([]string{"plugin", "logs", "testplugin", "--url", g.URL, "--key", other}, &o, &e); code != 0 || o.Len() != 0 {
		t.Errorf("another account's key: exit %d, read %.300s%s", code, o.String(), e.String())
	}
}
