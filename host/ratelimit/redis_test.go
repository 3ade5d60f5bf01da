package ratelimit

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/redistest"
)

// Two instances (two limiters, each with its own fallback state) sharing one
// Redis admit exactly the limit together, although their clocks disagree by
// an hour: the time is Redis's.
func TestRedisInstancesShareLimits(t *testing.T) {
	srv := redistest.Start(t)
	a, b := NewRedis(srv.Client(), RedisOptions{}), NewRedis(srv.Client(), RedisOptions{})
	skew := map[*Redis]time.Duration{a: 0, b: time.Hour}
	// 10 per minute: a request's refill takes 6 s, far longer than the
	// 60 attempts below.
	lim := Limits{RequestsPerMinute: 10}
	var allowed, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := []*Redis{a, b}[g%2]
			for i := range 10 {
				r := Request{ID: NewID(), Key: "key" + strconv.Itoa(i%2), Account: "acct", AccountLimits: lim}
				d := l.Admit(time.Now().Add(skew[l]), r)
				if d.Allowed {
					allowed.Add(1)
					l.Settle(time.Now().Add(skew[l]), r, 0)
				} else if d.Reason == AccountRequests && d.RetryAfter > 0 {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 10 || refused.Load() != 50 {
		t.Fatalf("admitted %d and refused %d for the account's requests per minute, want 10 and 50", allowed.Load(), refused.Load())
	}
	if a.Fallbacks()+b.Fallbacks() != 0 {
		t.Fatalf("%d admissions fell back to the local limiter", a.Fallbacks()+b.Fallbacks())
	}

	// Concurrency across instances: a holds 2 of 2, b is refused until a
	// settles one.
	conc := func(id string) Request {
		return Request{ID: id, Key: "k", Account: "c", KeyLimits: Limits{Concurrent: 2}}
	}
	now := time.Now()
	if !a.Admit(now, conc("1")).Allowed || !a.Admit(now, conc("2")).Allowed {
		t.Fatal("a: refused within the concurrency limit")
	}
	if d := b.Admit(now, conc("3")); d.Allowed || d.Reason != KeyConcurrent {
		t.Fatalf("b with 2 of 2 in flight on a: %+v", d)
	}
	a.Settle(now, conc("1"), 0)
	if d := b.Admit(now, conc("3")); !d.Allowed {
		t.Fatalf("b after a settled: %+v", d)
	}
}

// Two instances racing for a key's concurrent slots admit exactly the
// limit while none settles, and more as requests end.
func TestRedisConcurrencyRace(t *testing.T) {
	srv := redistest.Start(t)
	ls := []*Redis{NewRedis(srv.Client(), RedisOptions{}), NewRedis(srv.Client(), RedisOptions{})}
	const limit = 3
	var mu sync.Mutex
	var held []Request
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := Request{ID: NewID(), Key: "k", Account: "a", KeyLimits: Limits{Concurrent: limit}}
			if ls[g%2].Admit(time.Now(), r).Allowed {
				mu.Lock()
				held = append(held, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(held) != limit {
		t.Fatalf("%d of 16 racing requests admitted by two instances, want the limit %d", len(held), limit)
	}
	ls[1].Settle(time.Now(), held[0], 0)
	if d := ls[0].Admit(time.Now(), Request{ID: NewID(), Key: "k", Account: "a", KeyLimits: Limits{Concurrent: limit}}); !d.Allowed {
		t.Fatalf("after one ended: %+v", d)
	}
}

// A token estimate charged by one instance is corrected by another's
// settlement (the same request settles where it was admitted, but the
// allowance is one).
func TestRedisSettleCorrects(t *testing.T) {
	srv := redistest.Start(t)
	a, b := NewRedis(srv.Client(), RedisOptions{}), NewRedis(srv.Client(), RedisOptions{})
	lim := Limits{TokensPerMinute: 1000} // one token per 60 ms
	r1 := Request{ID: "1", Key: "k", Account: "x", KeyLimits: lim, TokensEstimate: 900}
	now := time.Now()
	if !a.Admit(now, r1).Allowed {
		t.Fatal("first request refused")
	}
	if d := b.Admit(now, Request{ID: "2", Key: "k", Account: "x", KeyLimits: lim, TokensEstimate: 900}); d.Allowed || d.Reason != KeyTokens {
		t.Fatalf("900 more with 900 estimated in flight: %+v", d)
	}
	a.Settle(now, r1, 100) // the estimate was 800 too high
	r2 := Request{ID: "2", Key: "k", Account: "x", KeyLimits: lim, TokensEstimate: 900}
	if d := b.Admit(now, r2); !d.Allowed {
		t.Fatalf("900 after the first used 100: %+v", d)
	}
	b.Settle(now, r2, 2900) // 2000 more than estimated: debt of two minutes
	if d := a.Admit(now, Request{ID: "3", Key: "k", Account: "x", KeyLimits: lim, TokensEstimate: 1}); d.Allowed || d.RetryAfter < 100*time.Second {
		t.Fatalf("after an under-estimate of 2000 tokens: %+v, want refused for over 100 s", d)
	}
}

// An instance that crashes with a request in flight never settles it: the
// slot is held for the lease, then freed, instead of blocking the key
// forever.
func TestRedisCrashedHolderExpires(t *testing.T) {
	srv := redistest.Start(t)
	crashed := NewRedis(srv.Client(), RedisOptions{Lease: 10 * time.Minute})
	other := NewRedis(srv.Client(), RedisOptions{Lease: 10 * time.Minute})
	crashed.callerClock, other.callerClock = true, true
	r := func(id string) Request {
		return Request{ID: id, Key: "k", Account: "a", KeyLimits: Limits{Concurrent: 1}, AccountLimits: Limits{Concurrent: 5}}
	}
	if !crashed.Admit(t0, r("lost")).Allowed {
		t.Fatal("refused")
	}
	if d := other.Admit(at(9*time.Minute), r("2")); d.Allowed || d.Reason != KeyConcurrent {
		t.Fatalf("within the lease: %+v", d)
	}
	if d := other.Admit(at(10*time.Minute+time.Second), r("3")); !d.Allowed {
		t.Fatalf("after the lease: %+v", d)
	}
}

// Every key the limiter writes expires: an idle subject vanishes.
func TestRedisKeysExpire(t *testing.T) {
	srv := redistest.Start(t)
	l := NewRedis(srv.Client(), RedisOptions{Lease: time.Minute})
	full := Limits{RequestsPerMinute: 100, TokensPerMinute: 10000, Concurrent: 5}
	r := Request{ID: "1", Key: "k", Account: "a", KeyLimits: full, AccountLimits: full, TokensEstimate: 50}
	now := time.Now()
	c := srv.Client()
	ctx := context.Background()
	expiring := func(want int) {
		t.Helper()
		ks, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(ks) != want {
			t.Fatalf("keys %v, want %d", ks, want)
		}
		for _, k := range ks {
			ttl, err := c.PTTL(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			// State: debt (≤ 2 min) + lease (1 min) + a minute; sets: lease + 1 s.
			if ttl <= 0 || ttl > 4*time.Minute {
				t.Errorf("%s expires in %v, want within 4 minutes", k, ttl)
			}
		}
	}
	if !l.Admit(now, r).Allowed {
		t.Fatal("refused")
	}
	expiring(4)             // the key's and the account's state and in-flight sets
	l.Settle(now, r, 20000) // a minute of debt beyond the allowance
	expiring(2)             // the in-flight sets are empty: gone
}

// With Redis gone the limits hold per instance (never unlimited), the
// switch is logged and counted, and Redis is used again once it is back.
func TestRedisDownFallsBack(t *testing.T) {
	srv := redistest.Start(t)
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil))
	l := NewRedis(srv.Client(), RedisOptions{RetryEvery: time.Nanosecond, Log: log})
	lim := Limits{RequestsPerMinute: 3, Concurrent: 10}
	req := func(id string) Request { return Request{ID: id, Key: "k", Account: "a", KeyLimits: lim} }
	now := time.Now()
	if !l.Admit(now, req("shared")).Allowed {
		t.Fatal("refused with Redis up")
	}
	srv.Stop()
	var held []Request
	for i := range 3 {
		r := req("local" + strconv.Itoa(i))
		if !l.Admit(now, r).Allowed {
			t.Fatalf("local request %d of 3 refused", i+1)
		}
		held = append(held, r)
	}
	if d := l.Admit(now, req("over")); d.Allowed || d.Reason != KeyRequests {
		t.Fatalf("4th request with Redis down: %+v, want refused by the local limiter", d)
	}
	if l.Fallbacks() != 4 {
		t.Errorf("fallbacks %d, want 4", l.Fallbacks())
	}
	logMu.Lock()
	if !strings.Contains(logs.String(), "Redis unreachable") {
		t.Errorf("no log line: %q", logs.String())
	}
	logMu.Unlock()
	l.Settle(now, req("shared"), 0) // lost: the entry ages out with its lease

	srv.Start() // empty: a restarted Redis without persistence
	if d := l.Admit(now, req("back")); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("Redis back: %+v, want allowed with 2 left of Redis's fresh allowance", d)
	}
	if l.Fallbacks() != 4 {
		t.Errorf("fallbacks %d after Redis came back, want still 4", l.Fallbacks())
	}
	for _, r := range held {
		l.Settle(now, r, 0) // settled where admitted: locally
	}
	logMu.Lock()
	if !strings.Contains(logs.String(), "Redis reachable again") {
		t.Errorf("no recovery log line: %q", logs.String())
	}
	logMu.Unlock()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func benchLimits() Request {
	return Request{Key: "sk-key-0001", Account: "acct_1",
		KeyLimits:     Limits{RequestsPerMinute: 1 << 40, TokensPerMinute: 1 << 40, Concurrent: 1 << 20},
		AccountLimits: Limits{RequestsPerMinute: 1 << 40, TokensPerMinute: 1 << 40, Concurrent: 1 << 20}, TokensEstimate: 500}
}

// BenchmarkRedisAdmit is BenchmarkAdmitSettle against a local Redis: one
// Admit and one Settle, two round trips.
func BenchmarkRedisAdmit(b *testing.B) {
	l := NewRedis(redistest.Start(b).Client(), RedisOptions{})
	r := benchLimits()
	now := time.Now()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		r.ID = strconv.Itoa(i)
		if !l.Admit(now, r).Allowed {
			b.Fatal("refused")
		}
		l.Settle(now, r, 300)
	}
	if l.Fallbacks() != 0 {
		b.Fatal("fell back")
	}
}

func BenchmarkRedisAdmitParallel(b *testing.B) {
	l := NewRedis(redistest.Start(b).Client(), RedisOptions{})
	now := time.Now()
	b.ReportAllocs()
	var id atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		r := benchLimits()
		r.Key = "key-" + strconv.FormatInt(id.Add(1), 10)
		for pb.Next() {
			r.ID = strconv.FormatInt(id.Add(1), 10)
			l.Admit(now, r)
			l.Settle(now, r, 0)
		}
	})
	if l.Fallbacks() != 0 {
		b.Fatal("fell back")
	}
}
