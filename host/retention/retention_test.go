package retention_test

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/activity"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/retention"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/store/storetest"
)

type clock struct{ t atomic.Pointer[time.Time] }

func (c *clock) set(t time.Time) { c.t.Store(&t) }
func (c *clock) now() time.Time  { return *c.t.Load() }

type instance struct {
	l *billing.Ledger
	p *retention.Pruner
}

// Two instances of a cluster (one store presented as shared) each run a
// pruner: the first round prunes, the other instance's round right after
// it is skipped, and one an interval later runs again (finding nothing).
// A started pruner prunes on its own and stops with Stop.
func TestPrunerRounds(t *testing.T) {
	bdb, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bdb.Close() })
	db := storetest.Shared(bdb)
	ks, err := keys.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ks.CreateAccount("acme")
	if err != nil {
		t.Fatal(err)
	}
	_, k, err := ks.Create(a.ID, keys.Options{Name: "k", LimitReset: keys.ResetNone})
	if err != nil {
		t.Fatal(err)
	}
	if err := activity.Open(db); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var clk clock
	clk.set(start)
	const keep, every = 48 * time.Hour, time.Hour
	var inst [2]instance
	for i := range inst {
		l, err := billing.Open(db, activity.Indexing(billing.Options{Now: clk.now}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		p := retention.New(l, retention.Options{Retention: keep, Interval: every, Now: clk.now})
		t.Cleanup(p.Stop)
		inst[i] = instance{l, p}
	}
	if _, err := inst[0].l.TopUp(a.ID, billing.NanosPerUSD, "test"); err != nil {
		t.Fatal(err)
	}
	settle := func(n int, at time.Time) {
		t.Helper()
		clk.set(at)
		for i := range n {
			r, aerr := inst[0].l.Reserve(k, billing.Request{ID: billing.IDAt(at) + fmt.Sprintf("%014d", i), Model: "acme/m", Provider: "p",
				Price: catalog.Price{Prompt: 1, Completion: 2}, PromptTokens: 100, MaxOutputTokens: 10})
			if aerr != nil {
				t.Fatal(aerr)
			}
			if _, err := r.Settle(billing.Outcome{Usage: billing.Usage{PromptTokens: 50, CompletionTokens: 5}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := inst[0].l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	settle(5, start)
	clk.set(start.Add(10 * 24 * time.Hour))
	for i, tc := range []struct {
		inst    int
		advance time.Duration
		pruned  int
		skipped bool
	}{
		{0, 0, 5, false},
		{1, 0, 0, true},                     // the other instance did it just now
		{1, every / 4, 0, true},             // still less than half an interval ago
		{1, every / 2, 0, false},            // not any more: a round that finds nothing (a read)
		{0, 0, 0, false},                    // and leaves no record, so the next runs too
		{0, 2 * every, 0, false},            // as does one an interval later
		{0, -10 * 24 * time.Hour, 0, false}, // a clock stepped back does not skip either
	} {
		clk.set(clk.now().Add(tc.advance))
		res, skipped, err := inst[tc.inst].p.Round()
		if err != nil || res.Pruned != tc.pruned || skipped != tc.skipped {
			t.Fatalf("round %d (instance %d): %+v skipped=%v %v, want %d pruned, skipped=%v", i, tc.inst, res, skipped, err, tc.pruned, tc.skipped)
		}
	}
	if got := inst[0].p.Pruned(); got != 5 {
		t.Fatalf("instance 0 pruned %d, want 5", got)
	}
	// Started, a pruner's first round runs at once.
	settle(3, start.Add(20*24*time.Hour))
	clk.set(start.Add(30 * 24 * time.Hour))
	inst[1].p.Start()
	deadline := time.Now().Add(30 * time.Second)
	for inst[1].p.Pruned() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	inst[1].p.Stop()
	if got := inst[1].p.Pruned(); got != 3 {
		t.Fatalf("the started pruner pruned %d records, want 3", got)
	}
	if p, err := inst[0].l.Audit(); err != nil || len(p) > 0 {
		t.Fatalf("audit: %v %v", p, err)
	}
	n := 0
	if err := inst[0].l.Generations("", func(*billing.Generation) bool { n++; return true }); err != nil || n != 0 {
		t.Fatalf("%d records left (%v)", n, err)
	}
}

// A pruner without a retention does nothing and says why.
func TestPrunerNeedsRetention(t *testing.T) {
	bdb, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	l, err := billing.Open(bdb, billing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, _, err := retention.New(l, retention.Options{}).Round(); err == nil {
		t.Fatal("a round without a retention ran")
	}
}
