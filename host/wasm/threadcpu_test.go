package wasm

import (
	goruntime "runtime"
	"testing"
	"time"
)

// A call's module-time clock (callLog.now) on the CPU clock does not run
// while its thread sleeps — the wait a loaded machine imposes on a call
// is not the account's — and runs while it computes.
func TestModuleClockIsThreadCPU(t *testing.T) {
	if _, ok := threadCPU(); !ok {
		t.Skip("no per-thread CPU clock on this platform: module time is wall time")
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	cl := &callLog{cpu: true}
	t0 := cl.now()
	time.Sleep(200 * time.Millisecond)
	slept := cl.now() - t0
	if slept >= 100*time.Millisecond {
		t.Fatalf("200 ms asleep counted %v of module time", slept)
	}
	t1, x := cl.now(), 0
	for cl.now()-t1 < 5*time.Millisecond { // spins until its own CPU time says so
		x++
	}
	if x == 0 {
		t.Fatal("the CPU clock did not advance")
	}
	wall := &callLog{}
	w0 := wall.now()
	time.Sleep(20 * time.Millisecond)
	if d := wall.now() - w0; d < 20*time.Millisecond {
		t.Fatalf("the wall clock counted %v for a 20 ms sleep", d)
	}
}
