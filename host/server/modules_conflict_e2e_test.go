package server_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// TestRepublishIsConflict: over HTTP, publishing a name@version that is
// already stored is refused with 409, whether or not it is active, and
// leaves the stored binary alone, so a rollback goes to the version (and the
// build) that was published first.
func TestRepublishIsConflict(t *testing.T) {
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	root := gatewaytest.Root()
	mf, err := os.ReadFile(filepath.Join(root, "plugins", "openai", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	version := func(v string) string {
		return strings.Replace(string(mf), `"version": "1.0.0"`, `"version": "`+v+`"`, 1)
	}
	send := func(manifest, wasmFile string, activate bool) (int, gjson.Result) {
		t.Helper()
		bin, err := os.ReadFile(filepath.Join(root, "build", wasmFile))
		if err != nil {
			t.Fatalf("%v (run make wasm)", err)
		}
		body := fmt.Sprintf(`{"manifest":%s,"wasm":%q,"scope":"global","activate":%t}`, manifest, base64.StdEncoding.EncodeToString(bin), activate)
		resp, b, err := g.Request("POST", "/modules", body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, gjson.ParseBytes(b)
	}
	adapter := func() string {
		t.Helper()
		resp, b, err := g.Request("POST", "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"hi"}]}`)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("chat: %v %s", err, b)
		}
		return g.Upstreams["alpha"].Last().Header.Get("X-Switchyard-Adapter")
	}

	if code, body := send(version("1.1.0"), "wasm/openai.wasm", true); code != 201 {
		t.Fatalf("publish 1.1.0: %d %s", code, body.Raw)
	}
	digests := map[string]string{}
	resp, b, err := g.Request("GET", "/modules", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("list: %v %s", err, b)
	}
	for _, m := range gjson.GetBytes(b, "data").Array() {
		if m.Get("name").String() == "openai" {
			digests[m.Get("version").String()] = m.Get("sha256").String()
		}
	}
	if len(digests) != 2 {
		t.Fatalf("want openai 1.0.0 and 1.1.0 stored: %s", b)
	}
	// The seeded 1.0.0 and the active 1.1.0, again, with another build.
	for _, v := range []string{"1.0.0", "1.1.0"} {
		for _, activate := range []bool{false, true} {
			code, body := send(version(v), "testdata/openai-variant.wasm", activate)
			if code != 409 || body.Get("error.code").Int() != 409 ||
				!strings.Contains(body.Get("error.message").String(), "openai@"+v+" is already published") {
				t.Fatalf("republish %s (activate %t): %d %s, want 409 naming the version", v, activate, code, body.Raw)
			}
		}
	}
	// The stored versions are untouched: same digests, 1.1.0 still active,
	// and requests still run the original build (the variant stamps
	// "openai/variant" on every upstream request).
	resp, b, err = g.Request("GET", "/modules", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("list: %v %s", err, b)
	}
	for _, m := range gjson.GetBytes(b, "data").Array() {
		if m.Get("name").String() != "openai" {
			continue
		}
		if active := m.Get("version").String() == "1.1.0"; m.Get("active").Bool() != active {
			t.Fatalf("after refused publishes: %s", m.Raw)
		}
		if m.Get("sha256").String() != digests[m.Get("version").String()] {
			t.Fatalf("a refused publish replaced the stored binary: %s", m.Raw)
		}
	}
	if got := adapter(); got != "openai/1.0.0" {
		t.Fatalf("after refused publishes the upstream saw adapter %q, want the original build openai/1.0.0", got)
	}
	resp, b, err = g.Request("POST", "/modules/openai/rollback", `{"scope":"global"}`)
	if err != nil || resp.StatusCode != 200 || gjson.GetBytes(b, "data.version").String() != "1.0.0" {
		t.Fatalf("rollback: %v %d %s, want 1.0.0", err, resp.StatusCode, b)
	}
	// The build stored as 1.0.0 is still the original, not the variant.
	if got := adapter(); got != "openai/1.0.0" {
		t.Fatalf("after rollback the upstream saw adapter %q, want openai/1.0.0", got)
	}
}
