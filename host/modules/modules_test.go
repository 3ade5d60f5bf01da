package modules_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/wasm"
)

func open(t *testing.T, path string) (*modules.Registry, func()) {
	t.Helper()
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	e := wasm.NewEngine(filepath.Join(os.TempDir(), "switchyard-test-wazero-cache"), nil)
	r, err := modules.Open(db, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, func() { r.Close(); e.Close(context.Background()); db.Close() }
}

func manifest(t *testing.T, version string) []byte {
	b, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "plugins", "openai", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.Replace(string(b), `"version": "1.0.0"`, `"version": "`+version+`"`, 1))
}

func TestRegistryLifecycle(t *testing.T) {
	ctx := context.Background()
	root := gatewaytest.Root()
	bin, err := os.ReadFile(filepath.Join(root, "build", "wasm", "openai.wasm"))
	if err != nil {
		t.Fatalf("%v (run make build)", err)
	}
	path := filepath.Join(t.TempDir(), "sy.db")
	r, closeAll := open(t, path)

	// Seeding publishes and activates the built modules.
	if err := r.Seed(ctx, filepath.Join(root, "build", "wasm")); err != nil {
		t.Fatal(err)
	}
	if v := r.ActiveVersion("openai"); v != "1.0.0" {
		t.Fatalf("seeded version %q", v)
	}
	// A bad module is refused and the active one stays.
	if _, err := r.Publish(ctx, manifest(t, "2.0.0"), []byte("not wasm"), "test"); err == nil {
		t.Fatal("a module that does not compile was published")
	}
	if err := r.Activate(ctx, "openai", "2.0.0"); err == nil {
		t.Fatal("an unpublished version was activated")
	}
	if _, err := r.Publish(ctx, manifest(t, "1.1.0"), bin, "test"); err != nil {
		t.Fatal(err)
	}
	m, release := r.Acquire("openai")
	if m == nil || m.ID != "openai@1.0.0" {
		t.Fatalf("publishing activated a version: %v", m)
	}
	if err := r.Activate(ctx, "openai", "1.1.0"); err != nil {
		t.Fatal(err)
	}
	// A request that started on 1.0.0 keeps it usable until it lets go.
	if out, err := m.Call(ctx, 1, []byte(`{"model":"x","drop":[]}`), []byte(`{"messages":[{"role":"user","content":"hi"}]}`)); err != nil || len(out.Fields) != 4 {
		t.Fatalf("pinned old version failed after the swap: %v", err)
	}
	release()
	if n, _ := r.Acquire("openai"); n == nil || n.ID != "openai@1.1.0" {
		t.Fatalf("active after swap: %v", n)
	}
	if v, err := r.Rollback(ctx, "openai"); err != nil || v != "1.0.0" {
		t.Fatalf("rollback: %q %v", v, err)
	}
	if _, err := r.Rollback(ctx, "openai"); !errors.Is(err, modules.ErrNoEarlier) {
		t.Fatalf("second rollback: %v", err)
	}

	// Scopes: an account's module is its own; defaults per scope.
	if _, err := r.PublishScoped(ctx, "acct_a", manifest(t, "3.0.0"), bin, "test"); err != nil {
		t.Fatal(err)
	}
	if err := r.Activate(ctx, modules.Scoped("acct_a", "openai"), "3.0.0"); err != nil {
		t.Fatal(err)
	}
	if err := r.SetDefault(modules.Scoped("acct_a", "openai"), true); err != nil {
		t.Fatal(err)
	}
	if d := r.Defaults("acct_a"); len(d) != 1 || d[0] != "openai" {
		t.Fatalf("defaults of acct_a %v", d)
	}
	if d := r.Defaults("acct_b"); len(d) != 0 {
		t.Fatalf("defaults leak to acct_b: %v", d)
	}
	for _, info := range r.List("acct_b") {
		if strings.HasPrefix(info.Name, "acct_a/") {
			t.Fatalf("acct_b sees acct_a's module %v", info)
		}
	}
	closeAll()

	// After a restart the active versions and defaults are what they were.
	r2, closeAll2 := open(t, path)
	defer closeAll2()
	if err := r2.LoadActive(ctx); err != nil {
		t.Fatal(err)
	}
	if m, rel := r2.Acquire("openai"); m == nil || m.ID != "openai@1.0.0" {
		t.Fatalf("after restart: %v", m)
	} else {
		rel()
	}
	if m, rel := r2.Acquire(modules.Scoped("acct_a", "openai")); m == nil || m.ID != "openai@3.0.0" {
		t.Fatalf("account module after restart: %v", m)
	} else {
		rel()
	}
	if d := r2.Defaults("acct_a"); len(d) != 1 {
		t.Fatalf("defaults after restart %v", d)
	}
}

// TestSeedIsIdempotent: a restart with the same build publishes nothing; a
// changed manifest of the same version is republished.
func TestSeedIsIdempotent(t *testing.T) {
	ctx := context.Background()
	root := gatewaytest.Root()
	dir := t.TempDir()
	for _, f := range []string{"openai.wasm", "openai.json"} {
		b, err := os.ReadFile(filepath.Join(root, "build", "wasm", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, closeAll := open(t, filepath.Join(t.TempDir(), "sy.db"))
	defer closeAll()
	if err := r.Seed(ctx, dir); err != nil {
		t.Fatal(err)
	}
	first := r.List("")[0].Published
	if err := r.Seed(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if again := r.List("")[0].Published; !again.Equal(first) {
		t.Fatal("seeding the same build twice republished it")
	}
	mf, _ := os.ReadFile(filepath.Join(dir, "openai.json"))
	changed := strings.Replace(string(mf), `"pool_size": 32`, `"pool_size": 8`, 1)
	if err := os.WriteFile(filepath.Join(dir, "openai.json"), []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Seed(ctx, dir); err != nil {
		t.Fatal(err)
	}
	m, rel := r.Acquire("openai")
	defer rel()
	if m.Manifest.Limits.PoolSize != 8 {
		t.Fatalf("changed manifest not applied: pool %d", m.Manifest.Limits.PoolSize)
	}
}
