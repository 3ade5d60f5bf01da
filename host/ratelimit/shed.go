package ratelimit

import (
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Shedder refuses new work when the whole process is overloaded, before
// memory or descriptors run out: too many requests in flight, or a heap
// above a bound. The server asks Enter before authentication-independent
// work and answers 503 with Retry-After when it says no; every Enter that
// returned true is paired with one Exit.
type Shedder struct {
	maxInFlight int64
	maxHeap     uint64
	retryAfter  time.Duration
	sampleEvery time.Duration

	inFlight atomic.Int64

	// The heap figure is read at most once per sampleEvery (runtime/metrics
	// costs about a microsecond, too much for every request), by whichever
	// caller gets the lock; the others use the last figure.
	sampleMu   sync.Mutex
	sample     []metrics.Sample
	heap       atomic.Uint64
	lastSample atomic.Int64
}

// ShedConfig sets the Shedder's bounds; a zero bound is not checked.
type ShedConfig struct {
	MaxInFlight int64         // requests being served at once
	MaxHeap     uint64        // bytes of live and not yet swept heap objects
	RetryAfter  time.Duration // 0 = 1 s
	SampleEvery time.Duration // how stale the heap figure may be; 0 = 100 ms
}

// heapMetric counts the bytes of heap objects, live or not yet swept: what
// the Go heap holds now, as opposed to /gc/heap/live which only changes at
// the end of a GC cycle.
const heapMetric = "/memory/classes/heap/objects:bytes"

// NewShedder returns a Shedder with cfg's bounds.
func NewShedder(cfg ShedConfig) *Shedder {
	s := &Shedder{
		maxInFlight: cfg.MaxInFlight,
		maxHeap:     cfg.MaxHeap,
		retryAfter:  cfg.RetryAfter,
		sampleEvery: cfg.SampleEvery,
		sample:      []metrics.Sample{{Name: heapMetric}},
	}
	if s.retryAfter <= 0 {
		s.retryAfter = time.Second
	}
	if s.sampleEvery <= 0 {
		s.sampleEvery = 100 * time.Millisecond
	}
	return s
}

// Shed is why a request was refused.
type Shed string

// Reasons for shedding.
const (
	TooManyInFlight Shed = "too many requests in flight"
	HeapFull        Shed = "memory bound reached"
)

// Enter admits one request, or returns the reason it must be refused and
// the Retry-After to send. On ok the caller must call Exit when done.
func (s *Shedder) Enter(now time.Time) (ok bool, why Shed, retryAfter time.Duration) {
	if s.maxHeap > 0 && s.heapBytes(now) > s.maxHeap {
		return false, HeapFull, s.retryAfter
	}
	n := s.inFlight.Add(1)
	if s.maxInFlight > 0 && n > s.maxInFlight {
		s.inFlight.Add(-1)
		return false, TooManyInFlight, s.retryAfter
	}
	return true, "", 0
}

// Exit ends a request admitted by Enter.
func (s *Shedder) Exit() { s.inFlight.Add(-1) }

// InFlight is the number of requests between Enter and Exit.
func (s *Shedder) InFlight() int64 { return s.inFlight.Load() }

// heapBytes returns the heap figure, refreshing it when stale.
func (s *Shedder) heapBytes(now time.Time) uint64 {
	t := now.UnixNano()
	if last := s.lastSample.Load(); t-last >= int64(s.sampleEvery) && s.sampleMu.TryLock() {
		metrics.Read(s.sample)
		if s.sample[0].Value.Kind() == metrics.KindUint64 {
			s.heap.Store(s.sample[0].Value.Uint64())
		}
		s.lastSample.Store(t)
		s.sampleMu.Unlock()
	}
	return s.heap.Load()
}
