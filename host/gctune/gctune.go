// Package gctune sets the Go garbage collector's target from the live heap
// and the allocation rate after every collection, so the heap may grow
// between collections by a headroom sized to what the gateway allocates
// while the live heap is small, and by Go's default 100% once it is large.
//
// Why: the gateway's live heap is small (tens of MiB) and each request
// allocates ~20 KB that die with it. At Go's default target (GOGC=100) the
// collector runs about a dozen times a second at 9,000 requests/s and takes
// ~7% of the CPU; a higher target runs it less often. A fixed higher target
// also multiplies what a large answer costs — the heap may then grow to 5×
// a live heap that a 30 MiB answer made 100 MiB — so the target comes down
// as the live heap grows: the heap grows by at most max(headroom, live)
// before the next collection. GOMEMLIMIT, when set, bounds the total as
// always.
//
// The headroom buys fewer collections, which only pays while the gateway
// allocates fast. A gateway holding a thousand slow streams, or idle,
// allocates a few MB a second: there a fixed 64 MiB headroom is 64 MiB of
// resident memory that saves a collection every half minute. So the
// headroom is what the last cycle's allocation rate fills in a horizon
// (two seconds), at most the configured one: under load it is the full
// headroom after one cycle, and when load stops it shrinks at the next
// collection (the runtime forces one every two minutes at the latest).
//
// The collector has no hook for "a cycle ended"; the tuner learns of each
// one from the finalizer of an object it drops (the pattern of Go's own
// runtime tests), reads the live heap and the bytes allocated so far from
// runtime/metrics and sets the target with debug.SetGCPercent, which is
// cheap when unchanged.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Tuner adjusts the GC target after every collection until Stop.
type Tuner struct {
	headroom uint64        // the most the heap may grow by (bytes)
	horizon  time.Duration // how long the headroom should last at the measured rate
	min, max int           // the target's bounds (percent)
	stopped  atomic.Bool
	mu       sync.Mutex
	sample   [2]metrics.Sample // the live heap; bytes allocated since start
	now      func() time.Time
	last     time.Time // when the previous cycle ended (zero: none yet)
	allocs   uint64    // bytes allocated by then
	current  int
}

// Start tunes the target between min and max percent (min ≥ 1) so that
// the heap may grow by what the gateway allocates in horizon at the last
// cycle's rate, at most headroom bytes (or by min% of the live heap, when
// that is more), before the next collection. Until a cycle has been
// measured the headroom is the full one.
func Start(headroom uint64, horizon time.Duration, min, max int) *Tuner {
	t := &Tuner{headroom: headroom, horizon: horizon, min: min, max: max, current: -2, now: time.Now}
	t.sample[0].Name = "/gc/heap/live:bytes"
	t.sample[1].Name = "/gc/heap/allocs:bytes"
	t.adjust()
	t.arm()
	return t
}

// Stop ends the tuning; the target stays what it was last set to.
func (t *Tuner) Stop() { t.stopped.Store(true) }

// Percent is the target the tuner last set.
func (t *Tuner) Percent() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.current
}

// sentinel is dropped as soon as it is made; its finalizer runs after the
// collection that found it unreachable. It holds a pointer so that it is
// not a tiny allocation (those share blocks, and their finalizers may run
// late or never).
type sentinel struct{ t *Tuner }

func (t *Tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) {
		if s.t.stopped.Load() {
			return
		}
		s.t.adjust()
		s.t.arm()
	})
}

func (t *Tuner) adjust() {
	t.mu.Lock()
	defer t.mu.Unlock()
	metrics.Read(t.sample[:])
	var live, allocs uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	if t.sample[1].Value.Kind() == metrics.KindUint64 {
		allocs = t.sample[1].Value.Uint64()
	}
	now := t.now()
	headroom := t.headroom
	if !t.last.IsZero() {
		headroom = Headroom(allocs-t.allocs, now.Sub(t.last), t.horizon, t.headroom)
	}
	t.last, t.allocs = now, allocs
	p := Target(live, headroom, t.min, t.max)
	if p != t.current {
		debug.SetGCPercent(p)
		t.current = p
	}
}

// Headroom is what an allocation rate of allocated bytes in elapsed fills
// in horizon, at most limit.
func Headroom(allocated uint64, elapsed, horizon time.Duration, limit uint64) uint64 {
	if elapsed <= 0 {
		return limit
	}
	h := float64(allocated) * float64(horizon) / float64(elapsed)
	if h >= float64(limit) {
		return limit
	}
	return uint64(h)
}

// Target is the GC percent for a live heap of live bytes: headroom as a
// share of it, within [min, max].
func Target(live, headroom uint64, min, max int) int {
	if live == 0 {
		return max
	}
	p := headroom * 100 / live
	switch {
	case p >= uint64(max):
		return max
	case p <= uint64(min):
		return min
	}
	return int(p)
}
