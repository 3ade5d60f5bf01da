package wasm_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm"
)

// Spinning guests on every core are stopped at their time limit, with the
// preemption rewrite and with wazero's own check (NoInstrument, the
// fallback for modules the rewrite cannot handle).
func TestPreemptedSpinStopsAtLimit(t *testing.T) {
	for _, instrumented := range []bool{true, false} {
		name := "instrumented"
		if !instrumented {
			name = "wazero's check"
		}
		t.Run(name, func(t *testing.T) {
			mod := spinModule(t, instrumented, 150)
			var wg sync.WaitGroup
			errs := make([]error, runtime.GOMAXPROCS(0)+1)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 3 {
						if _, err := mod.Call(context.Background(), abi.HookChatRequest, []byte("{}"), []byte("{}")); err == nil || !strings.Contains(err.Error(), "time limit of 150 ms") {
							errs[i] = err
							return
						}
					}
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatalf("a spinning call: %v", err)
				}
			}
		})
	}
}

// While instrumented guests spin on every core, the garbage collector's
// stop-the-world still completes: the loops pass through Go. The test
// orders events rather than timing them: the calls have a 60 s limit and
// are only cancelled after the collections returned, so a collection that
// had to wait for the guests would return only after a call ended (and the
// test then fails, bounded by that limit). A rewrite that stopped yielding
// (the runtime has no check of its own for instrumented modules) would
// hold every core in native code and fail here.
func TestPreemptedSpinLetsGCRun(t *testing.T) {
	mod := spinModule(t, true, 60_000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := runtime.GOMAXPROCS(0)
	var entered sync.WaitGroup
	var ended atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, n)
	entered.Add(n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entered.Done()
			_, errs[i] = mod.Call(ctx, abi.HookChatRequest, []byte("{}"), []byte("{}"))
			ended.Add(1)
		}()
	}
	entered.Wait()
	for range 5 {
		runtime.GC()
	}
	if e := ended.Load(); e != 0 {
		t.Fatalf("%d spinning calls ended before the collections completed", e)
	}
	cancel()
	wg.Wait()
	for _, err := range errs {
		if err == nil {
			t.Fatal("a spinning call returned without an error after its context was cancelled")
		}
	}
}

func spinModule(t *testing.T, instrumented bool, timeoutMS int) *wasm.Module {
	t.Helper()
	e := wasm.NewEngine(wasm.Config{NoInstrument: !instrumented})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	m, err := manifest.Parse([]byte(fmt.Sprintf(`{"name":"spin","version":"1.0.0","abi":1,"kind":"adapter","hooks":["chat_request"],"limits":{"timeout_ms":%d,"memory_pages":16,"pool_size":%d},"grants":{}}`, timeoutMS, runtime.GOMAXPROCS(0)+1)))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := e.Load(context.Background(), m, module(nil, abiFuncs("switchyard_abi_v1", loopForever), 1))
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// The rewrite keeps a module's meaning: the test plugin instrumented and
// not answers the same.
func TestInstrumentedModuleAnswersAlike(t *testing.T) {
	mod := func(noInstrument bool) *wasm.Module {
		e := wasm.NewEngine(wasm.Config{NoInstrument: noInstrument})
		t.Cleanup(func() { _ = e.Close(context.Background()) })
		return loadTestPlugin(t, e)
	}
	a, b := mod(false), mod(true)
	for _, c := range []string{`{"config":{"mode":"rewrite"}}`, `{"config":{"mode":"respond"}}`, `{"config":{"mode":"block"}}`} {
		body := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("xy", 300) + `"}]}`)
		oa, ea := a.Call(context.Background(), abi.HookPreRequest, []byte(c), body)
		ob, eb := b.Call(context.Background(), abi.HookPreRequest, []byte(c), body)
		if ea != nil || eb != nil {
			t.Fatalf("%s: %v / %v", c, ea, eb)
		}
		for i := range 3 {
			if string(oa.Field(i)) != string(ob.Field(i)) {
				t.Fatalf("%s field %d: %q vs %q", c, i, oa.Field(i), ob.Field(i))
			}
		}
	}
}
