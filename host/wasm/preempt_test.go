package wasm_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm"
)

// Spinning guests on every core are stopped at their time limit while the
// garbage collector stops the world again and again: the instrumented
// loops pass through Go often enough for both. With wazero's own check
// (NoInstrument, the fallback for modules the rewrite cannot handle) the
// calls are still stopped at their limit, but a collection completes only
// when calls happen to end on both cores between its stops — sometimes
// during the spin, sometimes not (it failed about one package run in three
// on two cores) — so only the instrumented loops are held to it.
func TestPreemptedSpinLetsGCRun(t *testing.T) {
	for _, instrumented := range []bool{true, false} {
		name := "instrumented"
		if !instrumented {
			name = "wazero's check"
		}
		t.Run(name, func(t *testing.T) {
			e := wasm.NewEngine("", nil)
			e.NoInstrument = !instrumented
			t.Cleanup(func() { _ = e.Close(context.Background()) })
			m, err := manifest.Parse([]byte(`{"name":"spin","version":"1.0.0","abi":1,"kind":"adapter","hooks":["chat_request"],"limits":{"timeout_ms":150,"memory_pages":16,"pool_size":4},"grants":{}}`))
			if err != nil {
				t.Fatal(err)
			}
			mod, err := e.Load(context.Background(), m, module(nil, abiFuncs("switchyard_abi_v1", loopForever), 1))
			if err != nil {
				t.Fatal(err)
			}
			var stop atomic.Bool
			var gcs atomic.Int64
			go func() {
				for !stop.Load() {
					runtime.GC()
					gcs.Add(1)
				}
			}()
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
			stop.Store(true)
			for _, err := range errs {
				if err != nil {
					t.Fatalf("a spinning call: %v", err)
				}
			}
			if instrumented && gcs.Load() == 0 {
				t.Fatal("no garbage collection completed while guests spun")
			}
		})
	}
}

// The rewrite keeps a module's meaning: the test plugin instrumented and
// not answers the same.
func TestInstrumentedModuleAnswersAlike(t *testing.T) {
	mod := func(noInstrument bool) *wasm.Module {
		e := wasm.NewEngine("", nil)
		e.NoInstrument = noInstrument
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
