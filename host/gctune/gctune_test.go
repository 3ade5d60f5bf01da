package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestTarget(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, headroom uint64
		want           int
	}{
		{0, 64 * mib, 400},          // nothing measured yet
		{8 * mib, 64 * mib, 400},    // small heap: the most
		{16 * mib, 64 * mib, 400},   // exactly 400%
		{32 * mib, 64 * mib, 200},   // in between: the headroom
		{64 * mib, 64 * mib, 100},   // at the floor
		{1024 * mib, 64 * mib, 100}, // a large heap: Go's default
		{50 * mib, 64 * mib, 128},   // truncated, not rounded
	} {
		if got := Target(tc.live, tc.headroom, 100, 400); got != tc.want {
			t.Errorf("Target(%d MiB live, %d MiB headroom) = %d, want %d", tc.live/mib, tc.headroom/mib, got, tc.want)
		}
	}
}

// TestTunerFollowsLiveHeap: the target the runtime runs with goes down
// while a large live heap is held and back up once it is let go.
func TestTunerFollowsLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	tu := Start(16<<20, 100, 400)
	t.Cleanup(func() { tu.Stop(); debug.SetGCPercent(old) })

	waitFor := func(want int) {
		t.Helper()
		for range 100 { // bounded: a collection or two is enough
			runtime.GC()
			if tu.Percent() == want && runtimePercent() == want {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("GC target %d (runtime %d), want %d", tu.Percent(), runtimePercent(), want)
	}
	waitFor(400) // the test binary's live heap is a few MiB
	held := make([][]byte, 64)
	for i := range held {
		held[i] = make([]byte, 1<<20)
	}
	waitFor(100) // 64 MiB live: 16 MiB is 25%, under the floor
	runtime.KeepAlive(held)
	held = nil
	waitFor(400)

	tu.Stop()
	runtime.GC()
	runtime.GC()
	debug.SetGCPercent(123)
	runtime.GC()
	runtime.GC()
	if p := runtimePercent(); p != 123 {
		t.Fatalf("a stopped tuner still set the target: %d", p)
	}
}

func runtimePercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
