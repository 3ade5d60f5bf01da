package route

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/redistest"
	"github.com/switchyard/switchyard/host/route/shared"
)

// instance is one gateway's router over its own copy of the catalog.
type instance struct {
	r   *Router
	c   *catalog.Catalog
	clk *clock
}

func newInstance(t *testing.T, s *shared.Sessions, ttl time.Duration) instance {
	t.Helper()
	c, clk := testCatalog(), newClock()
	return instance{New(c, Options{Now: clk.Now, Rand: seeded(7), Shared: s, SessionTTL: ttl}), c, clk}
}

func (in instance) plan(t *testing.T, session string) *Plan {
	t.Helper()
	p, err := in.r.Plan(Request{Models: []string{gpt}, SessionID: session})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Two instances sharing one Redis pin a session to the same endpoint,
// whichever of them pinned it last.
func TestSharedSessionsAcrossInstances(t *testing.T) {
	srv := redistest.Start(t)
	a := newInstance(t, shared.New(srv.Client(), shared.Options{}), 0)
	b := newInstance(t, shared.New(srv.Client(), shared.Options{}), 0)

	a.r.Stick("s1", ep(a.c, gpt, "azure")) // the balancer's least likely pick
	for i := range 10 {
		if p := b.plan(t, "s1"); p.Strategy != "sticky" || p.Attempts[0] != ep(b.c, gpt, "azure") {
			t.Fatalf("b, plan %d: %s %s, want sticky to azure", i, p.Strategy, slugs(p.Attempts, false))
		}
	}
	b.r.Stick("s1", ep(b.c, gpt, "together")) // re-pinned on b after a failure there
	if p := a.plan(t, "s1"); p.Strategy != "sticky" || p.Attempts[0] != ep(a.c, gpt, "together") {
		t.Fatalf("a after b re-pinned: %s %s, want sticky to together", p.Strategy, slugs(p.Attempts, false))
	}
	if p := a.plan(t, "other"); p.Strategy != "load-balance" {
		t.Fatalf("an unknown session: %s", p.Strategy)
	}

	// An instance whose catalog lacks the endpoint ignores the pin.
	c := newInstance(t, shared.New(srv.Client(), shared.Options{}), 0)
	m := c.c.Models[gpt]
	m.Endpoints = []*catalog.Endpoint{ep(c.c, gpt, "openai"), ep(c.c, gpt, "azure")}
	c.r = New(c.c, Options{Now: c.clk.Now, Shared: c.r.opts.Shared})
	if p := c.plan(t, "s1"); p.Strategy != "load-balance" || len(p.Attempts) != 2 {
		t.Fatalf("pinned to an endpoint this catalog lacks: %s %s", p.Strategy, slugs(p.Attempts, false))
	}
}

// A session lives SessionTTL in Redis after it was last pinned or used.
func TestSharedSessionsTTL(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client()
	ctx := context.Background()
	const key = "switchyard:session:s1"
	a := newInstance(t, shared.New(rc, shared.Options{}), time.Hour)
	a.r.Stick("s1", ep(a.c, gpt, "azure"))
	if ttl := rc.PTTL(ctx, key).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("TTL after Stick %v, want the session TTL (1h)", ttl)
	}
	if v := rc.Get(ctx, key).Val(); v != gpt+"\x00azure" {
		t.Fatalf("stored %q, want model id and provider slug", v)
	}
	// A use renews it.
	rc.PExpire(ctx, key, time.Minute)
	if p := a.plan(t, "s1"); p.Strategy != "sticky" {
		t.Fatalf("plan: %s", p.Strategy)
	}
	if ttl := rc.PTTL(ctx, key).Val(); ttl <= 59*time.Minute {
		t.Fatalf("TTL after a use %v, want renewed to 1h", ttl)
	}

	// Expiry in Redis: another instance, which never saw the session, does
	// not find it once the key expired.
	b := newInstance(t, shared.New(rc, shared.Options{}), 300*time.Millisecond)
	b.r.Stick("s2", ep(b.c, gpt, "azure"))
	deadline := time.Now().Add(10 * time.Second)
	for rc.Exists(ctx, "switchyard:session:s2").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("the session's key did not expire")
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.clk.Add(time.Second) // and the local copy's TTL is over too
	if p := b.plan(t, "s2"); p.Strategy != "load-balance" {
		t.Fatalf("an expired session: %s", p.Strategy)
	}
	c := newInstance(t, shared.New(rc, shared.Options{}), 300*time.Millisecond)
	if p := c.plan(t, "s2"); p.Strategy != "load-balance" {
		t.Fatalf("an expired session on another instance: %s", p.Strategy)
	}
}

// With Redis down each instance keeps its own sessions, and Redis is used
// again once it is back.
func TestSharedSessionsRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	sa := shared.New(srv.Client(), shared.Options{RetryEvery: time.Nanosecond})
	a := newInstance(t, sa, 0)
	b := newInstance(t, shared.New(srv.Client(), shared.Options{RetryEvery: time.Nanosecond}), 0)
	a.r.Stick("s1", ep(a.c, gpt, "azure"))
	srv.Stop()
	if p := a.plan(t, "s1"); p.Strategy != "sticky" || p.Attempts[0] != ep(a.c, gpt, "azure") {
		t.Fatalf("a with Redis down: %s %s, want its own pin", p.Strategy, slugs(p.Attempts, false))
	}
	if sa.Failures() == 0 {
		t.Fatal("no failure counted")
	}
	b.r.Stick("s2", ep(b.c, gpt, "openai"))
	b.r.Stick("s2", ep(b.c, gpt, "together"))
	if p := b.plan(t, "s2"); p.Strategy != "sticky" || p.Attempts[0] != ep(b.c, gpt, "together") {
		t.Fatalf("b pinned with Redis down: %s %s", p.Strategy, slugs(p.Attempts, false))
	}

	srv.Start() // back, and empty
	if p := a.plan(t, "s1"); p.Strategy != "sticky" || p.Attempts[0] != ep(a.c, gpt, "azure") {
		t.Fatalf("a with an empty Redis: %s %s, want its own pin still", p.Strategy, slugs(p.Attempts, false))
	}
	a.r.Stick("s3", ep(a.c, gpt, "together"))
	if p := b.plan(t, "s3"); p.Strategy != "sticky" || p.Attempts[0] != ep(b.c, gpt, "together") {
		t.Fatalf("b after Redis came back: %s %s, want a's pin", p.Strategy, slugs(p.Attempts, false))
	}
}

// BenchmarkPlanSharedSession is a sticky plan with the session in Redis:
// one GETEX round trip on loopback on top of the plan.
func BenchmarkPlanSharedSession(b *testing.B) {
	srv := redistest.Start(b)
	c := testCatalog()
	r := New(c, Options{Shared: shared.New(srv.Client(), shared.Options{})})
	r.Stick("s", ep(c, gpt, "azure"))
	req := Request{Models: []string{gpt}, SessionID: "s"}
	b.ReportAllocs()
	for b.Loop() {
		p, err := r.Plan(req)
		if err != nil || p.Strategy != "sticky" {
			b.Fatal(err, p.Strategy)
		}
	}
}
