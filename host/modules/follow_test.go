package modules_test

import (
	"context"
	"fmt"
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
	one, two, bin := twoGateways(t)
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

	// Deleted on one, the module stops running on the other too, and its
	// default-on flag goes with it.
	if n, err := two.DeleteModule(ctx, "openai"); err != nil || n != 2 {
		t.Fatalf("delete: %d %v", n, err)
	}
	waitActive(one, "")
	if d := one.Defaults(""); len(d) != 0 {
		t.Fatalf("defaults after the delete: %v", d)
	}
	if list := one.List(""); len(list) != 0 {
		t.Fatalf("versions after the delete: %v", list)
	}
}

// A version published on one gateway is compiled on the others before it
// is activated, so its activation there swaps in what is ready instead of
// compiling; compiled-ahead versions are bounded (tenants publish).
func TestPublishedVersionCompiledAhead(t *testing.T) {
	ctx := context.Background()
	one, two, bin := twoGateways(t)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("60 s and still not: %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	oneLoads := one.Loads()
	if _, err := one.PublishScoped(ctx, "", manifest(t, "2.0.0"), bin, "test"); err != nil {
		t.Fatal(err)
	}
	waitFor("the other gateway compiled 2.0.0 ahead", func() bool {
		p := two.Prewarmed()
		return len(p) == 1 && p[0] == "openai@2.0.0"
	})
	loads := two.Loads()
	if err := one.Activate(ctx, "openai", "2.0.0"); err != nil {
		t.Fatal(err)
	}
	waitFor("the other gateway runs 2.0.0", func() bool {
		m, release := two.Acquire("openai")
		defer release()
		return m != nil && m.ID == "openai@2.0.0"
	})
	if n := one.Loads() - oneLoads; n != 1 {
		t.Errorf("the publishing gateway compiled 2.0.0 %d times; want once", n)
	}
	if n := two.Loads() - loads; n != 0 {
		t.Errorf("the activation compiled %d more time(s) on the other gateway; want it to take the version compiled ahead", n)
	}
	if p := two.Prewarmed(); len(p) != 0 {
		t.Errorf("after the activation, still compiled ahead: %v", p)
	}

	// A burst of publications: the other gateway keeps at most two
	// compiled ahead (and drops what exceeds its queue).
	for i := range 6 {
		if _, err := one.PublishScoped(ctx, "", manifest(t, fmt.Sprintf("3.0.%d", i)), bin, "test"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("the other gateway compiled the newest publications ahead", func() bool {
		return len(two.Prewarmed()) == 2
	})
	// Activating one it did not keep compiles it there, as without
	// compiling ahead.
	if err := one.Activate(ctx, "openai", "3.0.0"); err != nil {
		t.Fatal(err)
	}
	waitFor("the other gateway runs 3.0.0", func() bool {
		m, release := two.Acquire("openai")
		defer release()
		return m != nil && m.ID == "openai@3.0.0"
	})
	if p := two.Prewarmed(); len(p) > 2 {
		t.Errorf("compiled ahead: %v, want at most 2", p)
	}
}

// twoGateways is two registries on one store presented as shared (two
// gateways on one PostgreSQL, as far as the registry can tell), closed at
// the test's end, and the built OpenAI adapter to publish on them.
func twoGateways(t *testing.T) (one, two *modules.Registry, bin []byte) {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "build", "wasm", "openai.wasm"))
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	bdb, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bdb.Close() })
	db := storetest.Shared(bdb)
	var regs []*modules.Registry
	for range 2 {
		e := wasm.NewEngine(wasm.Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero-cache")})
		r, err := modules.Open(db, e, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Cleanups run last-in first-out: the registry before its engine,
		// both before the store.
		t.Cleanup(func() { _ = e.Close(context.Background()) })
		t.Cleanup(r.Close)
		regs = append(regs, r)
	}
	return regs[0], regs[1], bin
}

// A follower that read the active versions before an activation here
// committed, and converges after it, does not roll the activation back:
// what it converges to is what the store says once it holds the registry
// lock, not its stale snapshot.
func TestStaleConvergeKeepsTheNewerActivation(t *testing.T) {
	ctx := context.Background()
	one, _, bin := twoGateways(t)
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, err := one.PublishAndActivate(ctx, "", manifest(t, v), bin, "test"); err != nil {
			t.Fatal(err)
		}
	}
	one.ConvergeOne("openai") // converge found it differing in a snapshot read before 1.1.0 was activated
	m, release := one.Acquire("openai")
	defer release()
	if got := ""; m == nil || m.ID != "openai@1.1.0" {
		if m != nil {
			got = m.ID
		}
		t.Fatalf("after a stale converge the gateway runs %q, want openai@1.1.0", got)
	}
}
