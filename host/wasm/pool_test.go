package wasm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
)

// TestPoolShrinksWhenIdle: after a burst that needed several instances, a
// trim period in which the pool never ran low frees the spare instances
// and keeps one warm; an instance in use is never taken.
// lazyOpenAI loads the built OpenAI adapter lazily in an engine of its
// own whose pool the test trims by hand; pages, when not 0, is its memory
// cap.
func lazyOpenAI(t *testing.T, pages uint32) *Module {
	t.Helper()
	root := filepath.Join("..", "..")
	bin, err := os.ReadFile(filepath.Join(root, "build", "wasm", "openai.wasm"))
	if err != nil {
		t.Fatalf("read adapter (run `make build` first): %v", err)
	}
	mj, err := os.ReadFile(filepath.Join(root, "plugins", "openai", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(mj)
	if err != nil {
		t.Fatal(err)
	}
	if pages != 0 {
		m.Limits.MemoryPages = pages
	}
	e := NewEngine(Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero"), PoolTrimEvery: 1 << 40})
	t.Cleanup(func() { e.Close(context.Background()) })
	mod, err := e.LoadLazy(m, bin)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func TestPoolShrinksWhenIdle(t *testing.T) {
	mod := lazyOpenAI(t, 0)
	ctx := context.Background()
	if mod.Live() != 0 {
		t.Fatalf("a lazy module has %d instances before its first call", mod.Live())
	}
	if err := mod.ensure(ctx); err != nil {
		t.Fatal(err)
	}
	// A burst: four calls at once.
	var held []*instance
	for range 4 {
		in, err := mod.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, in)
	}
	if mod.Live() != 4 {
		t.Fatalf("live = %d during the burst, want 4", mod.Live())
	}
	// One still in use; the other three back in the pool.
	for _, in := range held[1:] {
		mod.put(in)
	}
	mod.trimIdle() // ends the period of the burst: the pool ran empty in it
	if mod.Live() != 4 {
		t.Fatalf("live = %d after a period the pool ran empty in, want 4", mod.Live())
	}
	mod.trimIdle() // a quiet period: three instances idle throughout
	if mod.Live() != 1 {
		t.Fatalf("live = %d after a quiet period, want 1 (the one in use)", mod.Live())
	}
	mod.put(held[0])
	mod.trimIdle()
	if mod.Live() != 1 {
		t.Fatalf("live = %d, want one instance kept warm", mod.Live())
	}
	if _, err := mod.Call(ctx, abi.HookChatRequest, []byte(`{"model":"gpt-4o"}`), []byte(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}`)); err != nil {
		t.Fatalf("call after trims: %v", err)
	}
}

// TestLazyLoadFailureFailsTheCall: a lazily loaded module that turns out
// not to compile fails each call with a 502 naming the module and the
// reason, and is not retried on every call.
func TestLazyLoadFailureFailsTheCall(t *testing.T) {
	m, err := manifest.Parse([]byte(`{"name":"broken","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"]}`))
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(Config{})
	defer e.Close(context.Background())
	fetches := 0
	mod, err := e.LoadLazyFrom(m, nil, func() ([]byte, error) { fetches++; return []byte("not wasm"), nil })
	if err != nil {
		t.Fatalf("LoadLazyFrom: %v", err)
	}
	for range 2 {
		_, err := mod.Call(context.Background(), abi.HookPreRequest, []byte(`{}`), []byte(`{}`))
		ae := apierr.From(err)
		if err == nil || ae.Status != 502 || !strings.Contains(ae.Message, "broken@1.0.0") || !strings.Contains(ae.Message, "does not load") {
			t.Fatalf("call of a module that does not compile: %v", err)
		}
	}
	if fetches != 1 {
		t.Fatalf("binary fetched %d times, want once", fetches)
	}
	if mod.Live() != 0 {
		t.Fatalf("live = %d", mod.Live())
	}
}

// TestPoolDropsGrownInstances: an instance a call grew past
// maxPooledMemory is closed when the call ends, not kept idle in the pool
// holding that memory (wazero cannot shrink it); a usual one is pooled.
func TestPoolDropsGrownInstances(t *testing.T) {
	mod := lazyOpenAI(t, 2*maxPooledMemory>>16)
	ctx := context.Background()
	if err := mod.ensure(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := mod.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := mod.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.mem.Grow(maxPooledMemory>>16 + 1); !ok { // what a huge request's call does
		t.Fatal("could not grow the memory")
	}
	mod.put(a)
	mod.put(b)
	if mod.Live() != 1 || len(mod.pool) != 1 {
		t.Fatalf("live %d, pooled %d after a usual and a grown instance came back, want 1 and 1", mod.Live(), len(mod.pool))
	}
}

// A call's time limit grows with its input, one base period a MiB, up to
// eight periods: a loop stops all the same.
func TestCallTimeoutScalesWithInput(t *testing.T) {
	base := 50 * time.Millisecond
	for _, tc := range []struct {
		base  time.Duration
		input int
		want  time.Duration
	}{
		{0, 10 << 20, 0},
		{base, 0, base},
		{base, 1<<20 - 1, base},
		{base, 1 << 20, 2 * base},
		{base, 3<<20 + 5, 4 * base},
		{base, 10 << 20, 8 * base},
		{base, 1 << 30, 8 * base},
	} {
		if got := callTimeout(tc.base, tc.input); got != tc.want {
			t.Errorf("callTimeout(%v, %d) = %v, want %v", tc.base, tc.input, got, tc.want)
		}
	}
}
