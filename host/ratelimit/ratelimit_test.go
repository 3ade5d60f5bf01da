package ratelimit

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/redistest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// newAt returns a limiter whose epoch is t0, so test times are exact.
func newAt() *Memory {
	m := NewMemory()
	m.epoch = t0
	return m
}

// limiters are the implementations every behaviour test runs against: each
// call of new gives an empty limiter. The Redis one takes its time from the
// caller (as Memory does) so the steps' times are exact; its own clock,
// Redis TIME, is tested in redis_test.go.
func limiters(t *testing.T) []struct {
	name string
	new  func() Limiter
} {
	srv := redistest.Start(t)
	c := srv.Client()
	n := 0
	return []struct {
		name string
		new  func() Limiter
	}{
		{"memory", func() Limiter { return newAt() }},
		{"redis", func() Limiter {
			n++
			l := NewRedis(c, RedisOptions{Prefix: fmt.Sprintf("t%d:", n)})
			l.callerClock = true
			return l
		}},
	}
}

// forEach runs f against each implementation.
func forEach(t *testing.T, f func(t *testing.T, newLimiter func() Limiter)) {
	for _, l := range limiters(t) {
		t.Run(l.name, func(t *testing.T) { f(t, l.new) })
	}
}

type step struct {
	at      time.Duration
	req     Request
	settle  int64 // ≥ 0: settle the request with this many tokens right after admitting it
	allowed bool
	reason  Reason
	retry   time.Duration
	left    int64
}

func TestAdmit(t *testing.T) {
	rpm3 := Limits{RequestsPerMinute: 3}
	key := func(k string, l Limits, tokens int64) Request {
		return Request{Key: k, Account: "acct", KeyLimits: l, TokensEstimate: tokens}
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"requests per minute: a burst of the limit, then one per interval", []step{
			{at: 0, req: key("k", rpm3, 0), settle: 0, allowed: true, left: 2},
			{at: 0, req: key("k", rpm3, 0), settle: 0, allowed: true, left: 1},
			{at: 0, req: key("k", rpm3, 0), settle: 0, allowed: true, left: 0},
			{at: time.Second, req: key("k", rpm3, 0), reason: KeyRequests, retry: 19 * time.Second, left: 0},
			{at: 20 * time.Second, req: key("k", rpm3, 0), settle: 0, allowed: true, left: 0},
			{at: 80 * time.Second, req: key("k", rpm3, 0), settle: 0, allowed: true, left: 2},
		}},
		{"keys are separate, the account is shared", []step{
			{req: Request{Key: "a", Account: "x", AccountLimits: Limits{RequestsPerMinute: 2}}, settle: 0, allowed: true, left: 1},
			{req: Request{Key: "b", Account: "x", AccountLimits: Limits{RequestsPerMinute: 2}}, settle: 0, allowed: true, left: 0},
			{req: Request{Key: "c", Account: "x", AccountLimits: Limits{RequestsPerMinute: 2}}, reason: AccountRequests, retry: 30 * time.Second},
			{req: Request{Key: "c", Account: "y", AccountLimits: Limits{RequestsPerMinute: 2}}, settle: 0, allowed: true, left: 1},
		}},
		{"a refusal charges nothing: the key's allowance is intact after the account refuses", []step{
			{req: Request{Key: "k", Account: "x", KeyLimits: rpm3, AccountLimits: Limits{RequestsPerMinute: 1}}, settle: 0, allowed: true, left: 0},
			{req: Request{Key: "k", Account: "x", KeyLimits: rpm3, AccountLimits: Limits{RequestsPerMinute: 1}}, reason: AccountRequests, retry: time.Minute},
			{req: Request{Key: "k", Account: "z", KeyLimits: rpm3}, settle: 0, allowed: true, left: 1},
		}},
		{"tokens: estimate charged, corrected at settlement", []step{
			// 1000/min: an estimate of 900 is admitted and settled at 100, so 900 more fit.
			{req: key("k", Limits{TokensPerMinute: 1000}, 900), settle: 100, allowed: true},
			{req: key("k", Limits{TokensPerMinute: 1000}, 900), settle: 900, allowed: true},
			{req: key("k", Limits{TokensPerMinute: 1000}, 1), reason: KeyTokens, retry: 60 * time.Millisecond},
		}},
		{"tokens: an under-estimate becomes debt", []step{
			{req: key("k", Limits{TokensPerMinute: 1000}, 10), settle: 2000, allowed: true},
			{at: 30 * time.Second, req: key("k", Limits{TokensPerMinute: 1000}, 10), reason: KeyTokens, retry: 30*time.Second + 600*time.Millisecond},
		}},
		{"tokens: an estimate above the limit passes when the allowance is whole", []step{
			{req: key("k", Limits{TokensPerMinute: 1000}, 50_000), settle: 50_000, allowed: true},
			// charged 1000 at admission, 49,000 more at settlement: 49 minutes of debt, one of them past.
			{at: time.Minute, req: key("k", Limits{TokensPerMinute: 1000}, 10), reason: KeyTokens, retry: 48*time.Minute + 600*time.Millisecond},
		}},
		{"concurrency: the slot comes back at settlement", []step{
			{req: key("k", Limits{Concurrent: 1}, 0), settle: -1, allowed: true},
			{req: key("k", Limits{Concurrent: 1}, 0), reason: KeyConcurrent, retry: time.Second},
		}},
		{"no limits: everything passes", []step{
			{req: key("k", Limits{}, 1e9), settle: -1, allowed: true},
			{req: key("k", Limits{}, 1e9), settle: -1, allowed: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEach(t, func(t *testing.T, newLimiter func() Limiter) {
				m := newLimiter()
				for i, s := range tc.steps {
					req := s.req
					req.ID = strconv.Itoa(i)
					d := m.Admit(at(s.at), req)
					if d.Allowed != s.allowed || d.Reason != s.reason || (s.retry != 0 && d.RetryAfter != s.retry) || d.Remaining != s.left {
						t.Fatalf("step %d: %+v; want allowed %v reason %q retry %v remaining %d", i, d, s.allowed, s.reason, s.retry, s.left)
					}
					if d.Allowed && s.settle >= 0 {
						m.Settle(at(s.at), req, s.settle)
					}
				}
			})
		})
	}
}

func TestConcurrencySettles(t *testing.T) {
	forEach(t, func(t *testing.T, newLimiter func() Limiter) {
		m := newLimiter()
		r := func(id string) Request {
			return Request{ID: id, Key: "k", Account: "a", AccountLimits: Limits{Concurrent: 2}}
		}
		for i := range 2 {
			if !m.Admit(t0, r(strconv.Itoa(i))).Allowed {
				t.Fatalf("request %d of 2 refused", i+1)
			}
		}
		if d := m.Admit(t0, r("2")); d.Allowed || d.Reason != AccountConcurrent {
			t.Fatalf("third: %+v", d)
		}
		m.Settle(t0, r("0"), 0)
		if !m.Admit(t0, r("3")).Allowed {
			t.Fatal("refused after a settlement")
		}
	})
}

// Many goroutines racing for a limit of 50 get exactly 50.
func TestAdmitConcurrent(t *testing.T) {
	forEach(t, func(t *testing.T, newLimiter func() Limiter) {
		m := newLimiter()
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					r := Request{ID: fmt.Sprint(g, "-", i), Key: "k" + strconv.Itoa((g+i)%3), Account: "a", AccountLimits: Limits{RequestsPerMinute: 50}}
					if m.Admit(t0, r).Allowed {
						allowed.Add(1)
						m.Settle(t0, r, 0)
					}
				}
			}()
		}
		wg.Wait()
		if allowed.Load() != 50 {
			t.Fatalf("allowed %d, want 50", allowed.Load())
		}
	})
}

// Subjects whose allowance is whole and that have nothing in flight are
// evicted: the table follows the active subjects, not all there ever were.
func TestIdleSubjectsEvicted(t *testing.T) {
	m := newAt()
	const n = 2000
	round := func(start time.Duration, prefix string) {
		for i := range n {
			r := Request{Key: prefix + strconv.Itoa(i), Account: "acct", KeyLimits: Limits{RequestsPerMinute: 10}}
			if !m.Admit(at(start), r).Allowed {
				t.Fatalf("refused %s", r.Key)
			}
			m.Settle(at(start), r, 0)
		}
	}
	round(0, "old")
	held := Request{Key: "busy", Account: "acct"}
	m.Admit(t0, held) // in flight throughout: never evicted
	round(3*time.Minute, "new")
	if got := m.Subjects(); got > n+2 {
		t.Errorf("%d subjects after two rounds of %d keys, want ≤ %d", got, n, n+2)
	}
	m.Settle(at(3*time.Minute), held, 0)
	if d := m.Admit(at(3*time.Minute), Request{Key: "busy", Account: "acct", KeyLimits: Limits{Concurrent: 1}}); !d.Allowed {
		t.Errorf("busy key still counted in flight: %+v", d)
	}
}

func TestHeaders(t *testing.T) {
	forEach(t, func(t *testing.T, newLimiter func() Limiter) {
		m := newLimiter()
		r := Request{Key: "k", Account: "a", KeyLimits: Limits{RequestsPerMinute: 60}, AccountLimits: Limits{RequestsPerMinute: 600}}
		var d Decision
		for i := range 61 {
			r.ID = strconv.Itoa(i)
			d = m.Admit(t0, r)
		}
		got := map[string]string{}
		d.Headers(t0, func(k, v string) { got[k] = v })
		want := map[string]string{
			"Retry-After": "1", "X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0",
			"X-RateLimit-Reset": strconv.FormatInt(t0.Add(time.Minute).UnixMilli(), 10),
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("headers %v, want %v", got, want)
		}
		if d.Message() != "Rate limit exceeded: key requests per minute. Retry after 1 s." {
			t.Errorf("message %q", d.Message())
		}
	})
	if (Limits{TokensPerMinute: 5}).Or(Limits{RequestsPerMinute: 1, TokensPerMinute: 9}) != (Limits{RequestsPerMinute: 1, TokensPerMinute: 5}) {
		t.Error("Or")
	}
}

func TestShedder(t *testing.T) {
	s := NewShedder(ShedConfig{MaxInFlight: 2, RetryAfter: 3 * time.Second})
	now := time.Now()
	ok1, _, _ := s.Enter(now)
	ok2, _, _ := s.Enter(now)
	ok3, why, retry := s.Enter(now)
	if !ok1 || !ok2 || ok3 || why != TooManyInFlight || retry != 3*time.Second {
		t.Fatalf("%v %v %v %q %v", ok1, ok2, ok3, why, retry)
	}
	s.Exit()
	if ok, _, _ := s.Enter(now); !ok || s.InFlight() != 2 {
		t.Fatalf("after Exit: %v, %d in flight", ok, s.InFlight())
	}

	// Any Go program has more than one byte of heap objects.
	h := NewShedder(ShedConfig{MaxHeap: 1})
	if ok, why, _ := h.Enter(now); ok || why != HeapFull || h.InFlight() != 0 {
		t.Fatalf("heap bound: %v %q, %d in flight", ok, why, h.InFlight())
	}
	if ok, _, _ := NewShedder(ShedConfig{MaxHeap: 1 << 50}).Enter(now); !ok {
		t.Fatal("refused under a 1 PiB bound")
	}
}

func BenchmarkAdmitSettle(b *testing.B) {
	m := NewMemory()
	r := Request{Key: "sk-key-0001", Account: "acct_1",
		KeyLimits:     Limits{RequestsPerMinute: 1 << 40, TokensPerMinute: 1 << 40, Concurrent: 1 << 20},
		AccountLimits: Limits{RequestsPerMinute: 1 << 40, TokensPerMinute: 1 << 40, Concurrent: 1 << 20}, TokensEstimate: 500}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if !m.Admit(now, r).Allowed {
			b.Fatal("refused")
		}
		m.Settle(now, r, 300)
	}
}

func BenchmarkAdmitParallel(b *testing.B) {
	m := NewMemory()
	now := time.Now()
	b.ReportAllocs()
	var id atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		r := Request{Key: "key-" + strconv.FormatInt(id.Add(1), 10), Account: "acct_1",
			KeyLimits: Limits{RequestsPerMinute: 1 << 40}, AccountLimits: Limits{RequestsPerMinute: 1 << 40}}
		for pb.Next() {
			m.Admit(now, r)
			m.Settle(now, r, 0)
		}
	})
}

func BenchmarkShedderEnter(b *testing.B) {
	s := NewShedder(ShedConfig{MaxInFlight: 1 << 20, MaxHeap: 1 << 50})
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		s.Enter(now)
		s.Exit()
	}
}
