package route

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is what the caller reports after one attempt on an endpoint.
type Outcome struct {
	// Success is true when the upstream answered with a usable response.
	Success bool
	// Status is the upstream HTTP status; 0 for connection errors and
	// timeouts without a response. Failures with 400, 413 or 422 are the
	// caller's fault and do not count against the endpoint's health.
	Status int
	// TTFT is the latency to the first token (to the response for
	// non-streaming requests); 0 when unknown.
	TTFT time.Duration
	// Duration is the total time of the attempt.
	Duration time.Duration
	// OutputTokens produced; with Duration-TTFT it gives the throughput.
	OutputTokens int
	// RetryAfter is the upstream's own Retry-After on a failure (429, 503):
	// the endpoint is in a cool-down at least that long (at most
	// maxRetryAfterCoolDown), as the provider asked.
	RetryAfter time.Duration
	// ToolCalls judges a successful answer's tool calls, for the :exacto
	// variant; ToolCallsNone when it made none (or nobody looked).
	ToolCalls ToolCallVerdict
}

// ToolCallVerdict is what the caller found of an answer's tool calls.
type ToolCallVerdict uint8

const (
	ToolCallsNone    ToolCallVerdict = iota // no tool call to judge
	ToolCallsValid                          // every call named an offered function with arguments its schema accepts
	ToolCallsInvalid                        // at least one call did not
)

// maxRetryAfterCoolDown bounds the cool-down an upstream's Retry-After
// can ask for: past it the endpoint is tried again, as after any outage.
const maxRetryAfterCoolDown = 10 * time.Minute

// Stats is a snapshot of one endpoint's live health.
type Stats struct {
	Samples   int     // outcomes counted in the window
	Failures  int     // failed outcomes in the window
	ErrorRate float64 // Failures / Samples; 0 with no samples
	// Latency (TTFT, seconds) and Throughput (tokens/s) percentiles over the
	// window's successful samples; zero fields mean no data.
	Latency, Throughput Percentiles
	// ToolCalls is the number of successful answers in the window that
	// made tool calls, ToolCallRate the share of them whose calls were all
	// valid (Outcome.ToolCalls); 0 with none. The :exacto variant ranks by it.
	ToolCalls    int
	ToolCallRate float64
	// ConsecutiveFailures since the last success.
	ConsecutiveFailures int
	// Down is true while the endpoint is in an outage cool-down, until
	// DownUntil.
	Down      bool
	DownUntil time.Time
}

// sampleCap is the number of recent outcomes kept per endpoint; the window
// is the last sampleCap outcomes that are also younger than Options.Window.
const sampleCap = 128

type sample struct {
	at      int64   // unix nanoseconds
	ttft    float64 // seconds; 0 unknown
	tps     float64 // tokens/s; 0 unknown
	failed  bool
	counted bool // counts toward the error-rate rule (see errSince)
	tools   ToolCallVerdict
}

// snapshot is the immutable, lazily recomputed view readers get without a
// lock.
type snapshot struct {
	Stats
	computed   int64  // when it was computed
	validUntil int64  // when its oldest sample leaves the window
	version    uint64 // health.version it reflects
}

// health is the live state of one endpoint. Writers (Report) take mu; the
// hot path of Plan only does atomic loads: downUntil for the outage check,
// and snap for statistics, recomputed under TryLock when stale so readers
// never wait.
type health struct {
	downUntil atomic.Int64 // unix nanoseconds; the endpoint is down while now < downUntil
	snap      atomic.Pointer[snapshot]
	version   atomic.Uint64 // bumped by every report; snap is stale when it lags

	mu      sync.Mutex
	ring    []sample // allocated on first report
	next    int
	consec  int  // consecutive failures
	trips   int  // consecutive outage trips without a success in between
	tripped bool // in or after a cool-down, no success since
}

// down reports whether the endpoint is in an outage cool-down at now.
func (h *health) down(now int64) bool { return now < h.downUntil.Load() }

// report records one outcome and trips the outage breaker when a rule fires.
func (h *health) report(now int64, o Outcome, cfg *Options) {
	if !o.Success && (o.Status == 400 || o.Status == 413 || o.Status == 422) {
		return // the request was bad, not the endpoint
	}
	s := sample{at: now, failed: !o.Success, counted: true}
	if o.Success {
		s.tools = o.ToolCalls
		ttft := o.TTFT
		if ttft <= 0 {
			ttft = o.Duration
		}
		if ttft > 0 {
			s.ttft = ttft.Seconds()
		}
		gen := o.Duration - o.TTFT
		if o.TTFT <= 0 || gen <= 0 {
			gen = o.Duration
		}
		if o.OutputTokens > 0 && gen > 0 {
			s.tps = float64(o.OutputTokens) / gen.Seconds()
		}
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ring == nil {
		h.ring = make([]sample, 0, sampleCap)
	}
	if len(h.ring) < sampleCap {
		h.ring = append(h.ring, s)
	} else {
		h.ring[h.next] = s
		h.next = (h.next + 1) % sampleCap
	}
	h.version.Add(1)

	if o.Success {
		h.consec = 0
		if h.tripped {
			// First success after an outage: the endpoint recovered. Older
			// failures no longer count toward the error-rate rule.
			h.tripped = false
			h.trips = 0
			for i := range h.ring {
				if h.ring[i].at < now {
					h.ring[i].counted = false
				}
			}
		}
		return
	}
	h.consec++
	if o.RetryAfter > 0 {
		// The provider said when to come back: no request before then.
		// Only ever lengthens a cool-down, never shortens one.
		until := now + int64(min(o.RetryAfter, maxRetryAfterCoolDown))
		if until > h.downUntil.Load() {
			h.tripped = true
			h.downUntil.Store(until)
		}
		return
	}
	if h.down(now) {
		return // already in cool-down; in-flight failures do not extend it
	}
	trip := h.consec >= cfg.OutageFailures
	if !trip {
		win := now - int64(cfg.Window)
		n, failed := 0, 0
		for i := range h.ring {
			x := &h.ring[i]
			if x.counted && x.at >= win {
				n++
				if x.failed {
					failed++
				}
			}
		}
		trip = n >= cfg.OutageMinSamples && float64(failed) > cfg.OutageErrorRate*float64(n)
	}
	if trip {
		cool := cfg.CoolDown << min(h.trips, 4) // doubles on repeated trips, up to 16×
		h.trips++
		h.tripped = true
		h.downUntil.Store(now + int64(cool))
	}
}

// stats returns the statistics at now, recomputing them when a report came
// in since or a sample left the window. When another goroutine holds the
// lock the stale snapshot is returned rather than waiting.
func (h *health) stats(now int64, cfg *Options) *snapshot {
	s := h.snap.Load()
	if s != nil && s.computed <= now && now < s.validUntil && s.version == h.version.Load() {
		return s
	}
	if s != nil && !h.mu.TryLock() {
		return s
	}
	if s == nil {
		h.mu.Lock()
	}
	defer h.mu.Unlock()
	s = h.compute(now, cfg)
	h.snap.Store(s)
	return s
}

// compute builds a snapshot; h.mu is held.
func (h *health) compute(now int64, cfg *Options) *snapshot {
	s := &snapshot{computed: now, validUntil: now + int64(cfg.Window), version: h.version.Load()}
	win := now - int64(cfg.Window)
	var lat, tps [sampleCap]float64
	nl, nt, valid := 0, 0, 0
	for i := range h.ring {
		x := &h.ring[i]
		if x.at < win {
			continue
		}
		if exp := x.at + int64(cfg.Window); exp < s.validUntil {
			s.validUntil = exp
		}
		s.Samples++
		if x.failed {
			s.Failures++
			continue
		}
		if x.ttft > 0 {
			lat[nl] = x.ttft
			nl++
		}
		if x.tps > 0 {
			tps[nt] = x.tps
			nt++
		}
		if x.tools != ToolCallsNone {
			s.ToolCalls++
			if x.tools == ToolCallsValid {
				valid++
			}
		}
	}
	if s.ToolCalls > 0 {
		s.ToolCallRate = float64(valid) / float64(s.ToolCalls)
	}
	if s.Samples > 0 {
		s.ErrorRate = float64(s.Failures) / float64(s.Samples)
	}
	s.Latency = percentiles(lat[:nl])
	s.Throughput = percentiles(tps[:nt])
	s.ConsecutiveFailures = h.consec
	if d := h.downUntil.Load(); now < d {
		s.Down = true
		s.DownUntil = time.Unix(0, d)
		if d < s.validUntil {
			s.validUntil = d
		}
	}
	return s
}

// percentiles sorts xs and picks nearest-rank percentiles.
func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	slices.Sort(xs)
	at := func(q float64) float64 {
		i := int(q*float64(len(xs))+0.999999999) - 1 // ceil(q·n) − 1
		return xs[max(0, min(i, len(xs)-1))]
	}
	return Percentiles{P50: at(0.50), P75: at(0.75), P90: at(0.90), P99: at(0.99)}
}
