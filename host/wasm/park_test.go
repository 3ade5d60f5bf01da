package wasm_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm"
)

// parkableCounter loads the counter module as an account's stored module:
// nothing compiled until its first call, the binary read through fetch
// (counted in fetches).
func parkableCounter(t *testing.T, e *wasm.Engine, fetches *atomic.Int32) *wasm.Module {
	t.Helper()
	m, err := manifest.Parse([]byte(`{"name":"t","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"]}`))
	if err != nil {
		t.Fatal(err)
	}
	bin := counterModule(nil, false)
	mod, err := e.LoadTenantStored(context.Background(), "acct_a", m, nil, func() ([]byte, error) {
		fetches.Add(1)
		return bin, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mod.Close(context.Background()) })
	return mod
}

func callCounter(t *testing.T, mod *wasm.Module) {
	t.Helper()
	if err := counterCall(mod); err != nil {
		t.Fatal(err)
	}
}

// counterCall calls the counter module once; an error when the call failed
// or saw an earlier call's state.
func counterCall(mod *wasm.Module) error {
	out, err := mod.Call(context.Background(), abi.HookPreRequest, []byte(`{}`), []byte(`{}`))
	if err != nil {
		return err
	}
	if got := string(out.Field(0)); got != "1" {
		return fmt.Errorf("the module counted %s calls, want 1 (a fresh or reset instance)", got)
	}
	return nil
}

// An account's module stored but not called holds no compiled code; one
// idle past CompiledIdle gives its code and instances back, and its next
// call compiles it again from the store and answers as before (issue 31
// item 2: memory grows with the modules in use, not with those stored).
func TestIdleTenantModuleParks(t *testing.T) {
	e := wasm.NewEngine(wasm.Config{Tenants: wasm.TenantLimits{TimeoutMS: 1000, CompiledIdle: time.Hour}, PoolTrimEvery: 1 << 40})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	var fetches atomic.Int32
	mod := parkableCounter(t, e, &fetches)
	if e.Compiled() != 0 || fetches.Load() != 0 {
		t.Fatalf("before any call: %d compiled, %d binaries read; want none (compiled on first call)", e.Compiled(), fetches.Load())
	}
	callCounter(t, mod)
	if e.Compiled() != 1 || fetches.Load() != 1 {
		t.Fatalf("after a call: %d compiled, %d reads, want 1 and 1", e.Compiled(), fetches.Load())
	}
	if n := e.ParkIdle(time.Now()); n != 0 {
		t.Fatalf("parked %d modules called a moment ago", n)
	}
	if n := e.ParkIdle(time.Now().Add(2 * time.Hour)); n != 1 {
		t.Fatalf("parked %d modules idle for two hours, want 1", n)
	}
	if e.Compiled() != 0 || mod.Live() != 0 || e.Parks() != 1 {
		t.Fatalf("parked: %d compiled, %d instances, %d parks; want 0, 0, 1", e.Compiled(), mod.Live(), e.Parks())
	}
	callCounter(t, mod)
	if e.Compiled() != 1 || fetches.Load() != 2 {
		t.Fatalf("called after parking: %d compiled, %d reads, want 1 and 2", e.Compiled(), fetches.Load())
	}
	if err := mod.Close(context.Background()); err != nil || e.Compiled() != 0 {
		t.Fatalf("closed: %v, %d compiled", err, e.Compiled())
	}
	if n := e.ParkIdle(time.Now().Add(2 * time.Hour)); n != 0 {
		t.Fatalf("parked %d closed modules", n)
	}
}

// Parking never takes the code from under a call: calls from several
// goroutines while another parks the module as often as it can all answer
// (run under -race, this is the test of park's locking).
func TestParkRacesCalls(t *testing.T) {
	e := wasm.NewEngine(wasm.Config{Tenants: wasm.TenantLimits{TimeoutMS: 1000, CompiledIdle: time.Nanosecond, ConcurrentCalls: 4}, PoolTrimEvery: 1 << 40})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	var fetches atomic.Int32
	mod := parkableCounter(t, e, &fetches)
	stop := make(chan struct{})
	parked := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				parked <- n
				return
			default:
				n += e.ParkIdle(time.Now().Add(time.Hour))
			}
		}
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if err := counterCall(mod); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	n := <-parked
	t.Logf("%d parks, %d compilations during 100 calls", n, fetches.Load())
	if int(fetches.Load()) != n+1 && int(fetches.Load()) != n {
		t.Fatalf("%d parks but %d compilations: each park but a last one is followed by one compilation", n, fetches.Load())
	}
}

// A parked module whose binary cannot be read again (the store failed)
// fails that call with 502 and is read again on the next: a transient
// store error does not break the module for good.
func TestParkedModuleRefetchFailureIsNotKept(t *testing.T) {
	e := wasm.NewEngine(wasm.Config{Tenants: wasm.TenantLimits{TimeoutMS: 1000, CompiledIdle: time.Hour}, PoolTrimEvery: 1 << 40})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	m, err := manifest.Parse([]byte(`{"name":"t","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"]}`))
	if err != nil {
		t.Fatal(err)
	}
	bin := counterModule(nil, false)
	var fail atomic.Bool
	mod, err := e.LoadTenantStored(context.Background(), "acct_a", m, bin, func() ([]byte, error) {
		if fail.Load() {
			return nil, fmt.Errorf("store unavailable")
		}
		return bin, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mod.Close(context.Background()) })
	callCounter(t, mod)
	if n := e.ParkIdle(time.Now().Add(2 * time.Hour)); n != 1 {
		t.Fatalf("parked %d", n)
	}
	fail.Store(true)
	if err := counterCall(mod); err == nil || !strings.Contains(err.Error(), "store unavailable") {
		t.Fatalf("call with the store down: %v", err)
	}
	fail.Store(false)
	callCounter(t, mod)
}
