package modules_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/sjson"
)

// withFields is a built module's manifest with fields set (sjson paths).
func withFields(t *testing.T, module string, fields map[string]any) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "plugins", module, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	for path, v := range fields {
		if b, err = sjson.SetBytes(b, path, v); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func builtBinary(t *testing.T, module string) []byte {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "build", "wasm", module+".wasm"))
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	return bin
}

// TestAdapterCapabilitiesFollowTheActiveVersion: which adapters take file
// parts natively is read from the active version's manifest, so
// publishing a version that gains or drops file_input changes routing
// with no host release.
func TestAdapterCapabilitiesFollowTheActiveVersion(t *testing.T) {
	ctx := context.Background()
	r, closeAll := open(t, filepath.Join(t.TempDir(), "sy.db"))
	defer closeAll()
	bin := builtBinary(t, "openai")
	steps := []struct {
		version string
		caps    []string
		want    bool
	}{
		{"1.0.0", []string{"file_input"}, true},
		{"1.1.0", []string{}, false},
		{"1.2.0", []string{"file_input"}, true},
	}
	if r.NativeFiles("files-adapter") || r.AdapterHas("files-adapter", "embedding_token_ids") {
		t.Fatal("an adapter that is not installed has a capability")
	}
	for _, s := range steps {
		mf := withFields(t, "openai", map[string]any{"name": "files-adapter", "version": s.version, "capabilities": s.caps})
		if _, err := r.PublishAndActivate(ctx, "", mf, bin, "test"); err != nil {
			t.Fatal(err)
		}
		if got := r.NativeFiles("files-adapter"); got != s.want {
			t.Fatalf("version %s with capabilities %v: NativeFiles %v", s.version, s.caps, got)
		}
	}
	// Token-id embeddings (dispatch reads them per request): gained and
	// dropped by versions in the same way.
	for _, s := range []struct {
		version string
		caps    []string
	}{{"2.0.0", []string{"embedding_token_ids"}}, {"2.1.0", nil}} {
		mf := withFields(t, "openai", map[string]any{"name": "files-adapter", "version": s.version, "capabilities": s.caps})
		if _, err := r.PublishAndActivate(ctx, "", mf, bin, "test"); err != nil {
			t.Fatal(err)
		}
		want := len(s.caps) > 0
		if got := r.AdapterHas("files-adapter", "embedding_token_ids"); got != want {
			t.Fatalf("version %s with capabilities %v: embedding_token_ids %v", s.version, s.caps, got)
		}
		if r.NativeFiles("files-adapter") {
			t.Fatalf("version %s with capabilities %v takes files", s.version, s.caps)
		}
	}
	// A plugin cannot claim an adapter's capability.
	mf := withFields(t, "pareto-router", map[string]any{"capabilities": []string{"file_input"}})
	if _, err := r.PublishAndActivate(ctx, "", mf, builtBinary(t, "pareto-router"), "test"); err == nil {
		t.Fatal("a plugin declaring file_input was published")
	}
}

// TestRoutersByScope: the router table is built from the active modules'
// manifests, per scope: an account's router serves that account (and
// takes the place of a gateway-wide one with its model id), and no other.
func TestRoutersByScope(t *testing.T) {
	ctx := context.Background()
	r, closeAll := open(t, filepath.Join(t.TempDir(), "sy.db"))
	defer closeAll()
	bin := builtBinary(t, "pareto-router")
	if _, err := r.PublishAndActivate(ctx, "", withFields(t, "pareto-router", nil), bin, "test"); err != nil {
		t.Fatal(err)
	}
	own := withFields(t, "pareto-router", map[string]any{"name": "mine", "router.model": "switchyard/pareto-code", "router.strategy": "mine",
		"config_schema.properties.id.const": "mine"})
	if _, err := r.PublishAndActivate(ctx, "acct-a", own, bin, "test"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		account, model, plugin string
		want                   string // the plugin, "" for none
	}{
		{"acct-b", "switchyard/pareto-code", "", "pareto-router"},
		{"acct-a", "switchyard/pareto-code", "", "mine"},
		{"acct-a", "", "pareto-router", ""}, // the account's router has its model id
		{"acct-a", "", "mine", "mine"},
		{"acct-b", "", "mine", ""},
		{"acct-b", "switchyard/auto", "", ""},
	}
	for _, tt := range tests {
		got, ok := r.Router(tt.account, tt.model, tt.plugin)
		if ok != (tt.want != "") || got.Plugin != tt.want {
			t.Errorf("Router(%s, %q, %q) = %q, %v; want %q", tt.account, tt.model, tt.plugin, got.Plugin, ok, tt.want)
		}
	}
	if rs := r.Routers("acct-b"); len(rs) != 1 || rs[0].Plugin != "pareto-router" || rs[0].Strategy != "pareto" {
		t.Fatalf("acct-b's routers: %+v", rs)
	}
}

// Pinning the active version of a module — every request does it for its
// adapter and its plugins — allocates nothing, and its release unpins.
func TestAcquireAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	r, closeAll := open(t, filepath.Join(t.TempDir(), "sy.db"))
	defer closeAll()
	if _, err := r.PublishAndActivate(ctx, "", withFields(t, "openai", nil), builtBinary(t, "openai"), "test"); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		m, release := r.Acquire("openai")
		if m == nil {
			t.Fatal("openai is not active")
		}
		release()
	}); n != 0 {
		t.Errorf("Acquire and its release allocated %v times a call, want 0", n)
	}
}
