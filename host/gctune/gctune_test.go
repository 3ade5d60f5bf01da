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

func TestHeadroom(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name      string
		allocated uint64
		elapsed   time.Duration
		want      uint64
	}{
		{"under load: capped", 1024 * mib, time.Second, 64 * mib},             // 1 GB/s
		{"moderate rate: two seconds of it", 10 * mib, time.Second, 20 * mib}, // 10 MB/s
		{"slow streams", 60 * mib, 30 * time.Second, 4 * mib},                 // 2 MB/s
		{"idle", 1 * mib, 2 * time.Minute, mib / 60},                          // a forced cycle
		{"no time measured", 5 * mib, 0, 64 * mib},                            // clock did not move
	} {
		if got := Headroom(tc.allocated, tc.elapsed, 2*time.Second, 64*mib); got != tc.want {
			t.Errorf("%s: Headroom = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestTunerFollowsLiveHeap: the target the runtime runs with goes down
// while a large live heap is held and back up once it is let go.
func TestTunerFollowsLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	// An hour's horizon: any allocation fills the headroom, so only the
	// live heap moves the target.
	tu := Start(16<<20, time.Hour, 100, 400)
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

// TestTunerFollowsAllocationRate: a gateway that allocates little between
// collections runs at Go's default target; one that allocates fast gets
// the headroom back at the next collection.
func TestTunerFollowsAllocationRate(t *testing.T) {
	old := debug.SetGCPercent(100)
	tu := Start(64<<20, 2*time.Second, 100, 400)
	t.Cleanup(func() { tu.Stop(); debug.SetGCPercent(old) })
	var clock time.Time
	step := 10 * time.Second
	tu.mu.Lock()
	tu.now = func() time.Time { clock = clock.Add(step); return clock }
	tu.mu.Unlock()
	setStep := func(d time.Duration) { tu.mu.Lock(); step = d; tu.mu.Unlock() }

	waitFor := func(want int, between func()) {
		t.Helper()
		for range 100 { // bounded: a collection or two is enough
			between()
			runtime.GC()
			if tu.Percent() == want && runtimePercent() == want {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("GC target %d (runtime %d), want %d", tu.Percent(), runtimePercent(), want)
	}
	// Ten seconds (on the tuner's clock) between collections and almost
	// nothing allocated: the default target.
	waitFor(100, func() {})
	// 128 MiB allocated in a second: 64 MiB of headroom, 400% of the test
	// binary's few MiB of live heap.
	setStep(time.Second)
	var sink []byte
	waitFor(400, func() {
		for range 128 {
			sink = make([]byte, 1<<20)
		}
	})
	runtime.KeepAlive(sink)
	// And back once the allocation stops.
	setStep(10 * time.Second)
	waitFor(100, func() {})
}

func runtimePercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
