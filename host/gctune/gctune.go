// Package gctune sets the Go garbage collector's target from the live heap
// after every collection, so the heap may grow between collections by a
// fixed headroom while the live heap is small, and by Go's default 100%
// once it is large.
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
// The collector has no hook for "a cycle ended"; the tuner learns of each
// one from the finalizer of an object it drops (the pattern of Go's own
// runtime tests), reads the live heap from runtime/metrics and sets the
// target with debug.SetGCPercent, which is cheap when unchanged.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// Tuner adjusts the GC target after every collection until Stop.
type Tuner struct {
	headroom uint64 // bytes the heap may grow by, at least
	min, max int    // the target's bounds (percent)
	stopped  atomic.Bool
	mu       sync.Mutex
	sample   [1]metrics.Sample
	current  int
}

// Start tunes the target between min and max percent (min ≥ 1) so that
// the heap may grow by headroom bytes (or by min% of the live heap, when
// that is more) before the next collection.
func Start(headroom uint64, min, max int) *Tuner {
	t := &Tuner{headroom: headroom, min: min, max: max, current: -2}
	t.sample[0].Name = "/gc/heap/live:bytes"
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
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	p := Target(live, t.headroom, t.min, t.max)
	if p != t.current {
		debug.SetGCPercent(p)
		t.current = p
	}
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
