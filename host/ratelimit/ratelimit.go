// Package ratelimit decides whether a request may start: per API key and
// per account, requests per minute, tokens per minute and concurrent
// requests (section 7's 429), and global load shedding (Shedder, 503).
//
// # Algorithm
//
// Requests and tokens per minute use GCRA (the generic cell rate algorithm,
// a token bucket kept as one timestamp). A limit of L per minute has an
// emission interval T = 1 min / L; each subject keeps its theoretical
// arrival time TAT. A request of cost c (1 for requests, its estimated
// tokens for tokens) is admitted when max(TAT, now) + c·T − now ≤ 1 min,
// and then TAT becomes that sum. So a subject idle for a minute may spend its
// whole minute's allowance at once (burst L), and after that one unit per T:
// no fixed-window edge where 2L pass in a second, and no per-request
// bookkeeping — 16 bytes per subject and dimension.
//
// Tokens are charged at admission with an estimate and corrected at
// settlement (Settle with the real count): the difference moves TAT back or
// forward, so an over-estimate is returned and an under-estimate becomes
// debt that delays the subject's next requests. A single request's estimate
// is capped at the whole minute's allowance, so a prompt larger than the
// limit is admitted when the bucket is full (and its real cost then becomes
// debt) instead of never.
//
// Concurrent requests are a counter per subject, taken at admission and
// given back by Settle. Admission is all-or-nothing: the key's and the
// account's six checks are made under both subjects' locks (key first, then
// account, always in that order) and nothing is charged unless all pass.
//
// # Headers
//
// Decision.Headers writes Retry-After (whole seconds, rounded up),
// X-RateLimit-Limit (the requests-per-minute limit that is tightest, or the
// one that refused), X-RateLimit-Remaining (requests that could start now)
// and X-RateLimit-Reset (Unix time in milliseconds when the allowance is
// whole again).
//
// # Memory
//
// One entry per key and per account seen, about 150 bytes with the map
// overhead. Only authenticated subjects reach the limiter, so the entries are
// bounded by the keys that exist; on top of that an entry whose allowance is
// whole again and that has nothing in flight is evicted by a sweep that runs
// at most once per minute per shard, so memory follows the subjects active in
// the last minute or two, not all that ever were.
//
// # Clocks
//
// Time is measured from the limiter's creation on Go's monotonic clock
// (time.Time.Sub), so a wall-clock step (NTP, a VM resume) neither frees nor
// blocks anyone; only X-RateLimit-Reset is converted to wall time. Memory
// limits each gateway process on its own: behind N instances a subject
// would get up to N times its limits. Redis (redis.go) is the same algorithm
// with TATs and in-flight requests in Redis and "now" from Redis TIME, so
// instances with skewed clocks share one timeline; the gateway uses it when
// the configuration has a redis section (docs/cluster.md).
package ratelimit

import (
	"encoding/hex"
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// Limits are one subject's limits; 0 means unlimited. A key record carries
// its own in this form, and so do an account and the configured defaults.
type Limits struct {
	RequestsPerMinute int64 `json:"requests_per_minute,omitempty" yaml:"requests_per_minute,omitempty"`
	TokensPerMinute   int64 `json:"tokens_per_minute,omitempty" yaml:"tokens_per_minute,omitempty"`
	Concurrent        int64 `json:"concurrent,omitempty" yaml:"concurrent,omitempty"`
}

// Or returns l with each unset field taken from d (an account's own limits
// over the configured defaults).
func (l Limits) Or(d Limits) Limits {
	if l.RequestsPerMinute == 0 {
		l.RequestsPerMinute = d.RequestsPerMinute
	}
	if l.TokensPerMinute == 0 {
		l.TokensPerMinute = d.TokensPerMinute
	}
	if l.Concurrent == 0 {
		l.Concurrent = d.Concurrent
	}
	return l
}

// Request identifies what is admitted: the key, its account, the limits
// of each, and the estimated tokens of the request.
type Request struct {
	// ID names this admission among its subjects' requests in flight
	// (unique per request; NewID). The Redis limiter keys its concurrency
	// entries by it; Memory does not need it.
	ID             string
	Key, Account   string
	KeyLimits      Limits
	AccountLimits  Limits
	TokensEstimate int64
}

// NewID returns a random admission id (128 bits, hex): unique across
// instances without coordination.
func NewID() string {
	var b [16]byte
	for i := range 2 {
		u := rand.Uint64()
		for j := range 8 {
			b[i*8+j] = byte(u >> (8 * j))
		}
	}
	return hex.EncodeToString(b[:])
}

// Reason names the limit that refused a request.
type Reason string

// Reasons.
const (
	KeyRequests         Reason = "key requests per minute"
	KeyTokens           Reason = "key tokens per minute"
	KeyConcurrent       Reason = "key concurrent requests"
	AccountRequests     Reason = "account requests per minute"
	AccountTokens       Reason = "account tokens per minute"
	AccountConcurrent   Reason = "account concurrent requests"
	concurrentRetryHint        = time.Second
)

// Decision is the outcome of an admission.
type Decision struct {
	Allowed bool
	Reason  Reason // what refused; empty when allowed
	// RetryAfter is when the refused request would pass (concurrency: a
	// hint, since it depends on other requests finishing).
	RetryAfter time.Duration
	// Limit, Remaining and Reset describe the requests-per-minute allowance
	// reported in the headers: the one that refused, else the tightest;
	// Limit 0 when there is none. Reset is the time until it is whole.
	Limit, Remaining int64
	Reset            time.Duration
}

// Headers writes the decision's headers with set (Retry-After only when
// refused). now is the wall time of the answer.
func (d Decision) Headers(now time.Time, set func(name, value string)) {
	if !d.Allowed {
		set("Retry-After", strconv.FormatInt(int64((d.RetryAfter+time.Second-1)/time.Second), 10))
	}
	if d.Limit > 0 {
		set("X-RateLimit-Limit", strconv.FormatInt(d.Limit, 10))
		set("X-RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
		set("X-RateLimit-Reset", strconv.FormatInt(now.Add(d.Reset).UnixMilli(), 10))
	}
}

// Message is the text of a 429 envelope for a refused decision.
func (d Decision) Message() string {
	return "Rate limit exceeded: " + string(d.Reason) + ". Retry after " +
		strconv.FormatInt(int64((d.RetryAfter+time.Second-1)/time.Second), 10) + " s."
}

// Limiter admits requests and settles them: Memory for one instance, Redis
// for instances sharing one Redis (redis.go).
type Limiter interface {
	// Admit decides and, when allowed, charges one request, its estimated
	// tokens and one concurrent slot to the key and the account.
	Admit(now time.Time, r Request) Decision
	// Settle ends an admitted request: frees its concurrent slots and
	// corrects the tokens charged from r.TokensEstimate to actualTokens.
	Settle(now time.Time, r Request, actualTokens int64)
}

const window = time.Minute

// gcra is one per-minute allowance: the theoretical arrival time, in
// nanoseconds since the limiter's epoch.
type gcra struct{ tat int64 }

// interval is the emission interval of limit per minute.
func interval(limit int64) int64 { return max(int64(window)/limit, 1) }

// check returns the TAT after charging cost, and how long the request must
// wait for it to fit (0 when it fits now).
func (g gcra) check(now, limit, cost int64) (tat, wait int64) {
	t := interval(limit)
	cost = min(cost, limit) // a request bigger than the allowance passes when it is whole
	tat = max(g.tat, now) + cost*t
	if over := tat - now - int64(window); over > 0 {
		return tat, over
	}
	return tat, 0
}

// remaining is how many units fit now, and the time until the allowance is
// whole, for a TAT.
func remaining(tat, now, limit int64) (int64, time.Duration) {
	debt := max(tat-now, 0)
	left := (int64(window) - debt) / interval(limit)
	return max(left, 0), time.Duration(debt)
}

// subject is one key's or account's state.
type subject struct {
	mu       sync.Mutex
	requests gcra
	tokens   gcra
	inFlight int64
	dead     bool // evicted: whoever locked it after the sweep looks it up again
}

func (s *subject) idle(now int64) bool {
	return s.inFlight == 0 && s.requests.tat <= now && s.tokens.tat <= now
}

const shards = 64

type shard struct {
	mu        sync.RWMutex
	m         map[string]*subject
	lastSweep int64
}

// table is a sharded map of subjects.
type table struct {
	seed   maphash.Seed
	shards [shards]shard
}

func (t *table) init() {
	t.seed = maphash.MakeSeed()
	for i := range t.shards {
		t.shards[i].m = map[string]*subject{}
	}
}

func (t *table) get(id string, now int64) *subject {
	sh := &t.shards[maphash.String(t.seed, id)%shards]
	sh.mu.RLock()
	s := sh.m[id]
	sh.mu.RUnlock()
	if s != nil {
		return s
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if now-sh.lastSweep > int64(window) {
		sh.sweep(now)
	}
	if s = sh.m[id]; s == nil {
		s = &subject{}
		sh.m[id] = s
	}
	return s
}

// sweep drops idle subjects. A caller that got a subject from the map just
// before may lock it after; the dead mark sends it back to the map for a
// fresh one, so no charge is made to a subject no one will see again. A
// subject with requests in flight is never idle, so Settle always finds the
// subject Admit charged.
func (sh *shard) sweep(now int64) {
	sh.lastSweep = now
	for id, s := range sh.m {
		if s.mu.TryLock() {
			if s.idle(now) {
				s.dead = true
				delete(sh.m, id)
			}
			s.mu.Unlock()
		}
	}
}

func (t *table) len() int {
	n := 0
	for i := range t.shards {
		t.shards[i].mu.RLock()
		n += len(t.shards[i].m)
		t.shards[i].mu.RUnlock()
	}
	return n
}
