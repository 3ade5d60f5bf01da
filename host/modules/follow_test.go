package modules_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/store/storetest"
	"github.com/switchyard/switchyard/host/wasm"
)

// Two gateways on one shared store: a version activated or rolled back on
// one is what the other runs next, and a default-on plugin set on one is
// on for the other.
func TestActivationReachesOtherGateways(t *testing.T) {
	ctx := context.Background()
	bin, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "build", "wasm", "openai.wasm"))
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	bdb, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	db := storetest.Shared(bdb)
	var regs []*modules.Registry
	for range 2 {
		e := wasm.NewEngine(filepath.Join(os.TempDir(), "switchyard-test-wazero-cache"), nil)
		r, err := modules.Open(db, e, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(ctx)
		defer r.Close()
		regs = append(regs, r)
	}
	one, two := regs[0], regs[1]
	if _, err := one.PublishAndActivate(ctx, "", manifest(t, "1.0.0"), bin, "test"); err != nil {
		t.Fatal(err)
	}
	waitActive := func(r *modules.Registry, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			m, release := r.Acquire("openai")
			got := ""
			if m != nil {
				got = m.ID
			}
			release()
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the other gateway runs %q 30 s after %s was activated", got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitActive(two, "openai@1.0.0")
	if _, err := two.PublishAndActivate(ctx, "", manifest(t, "1.1.0"), bin, "test"); err != nil {
		t.Fatal(err)
	}
	waitActive(one, "openai@1.1.0")
	if v, err := one.Rollback(ctx, "openai"); err != nil || v != "1.0.0" {
		t.Fatalf("rollback: %q %v", v, err)
	}
	waitActive(two, "openai@1.0.0")

	if err := one.SetDefault("openai", true); err != nil {
		t.Fatal(err)
	}
	if d := two.Defaults(""); len(d) != 1 || d[0] != "openai" {
		t.Fatalf("defaults on the other gateway: %v", d)
	}
}
