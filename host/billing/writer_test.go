package billing

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
)

// A group that settles a hold skips that hold's writes queued in the same
// group (the settlement would delete it in the same transaction); a hold
// settled in a later group is written, and a group that fails runs every
// operation alone, the hold writes included.
func TestWriterSkipsHoldsSettledInTheSameGroup(t *testing.T) {
	db := tempBolt(t)
	// A long window: everything queued below lands in one group.
	w := newWriter(db, nil, time.Hour)
	defer w.close()
	var ran []string
	rec := func(name string, err error) func(store.Tx) error {
		return func(store.Tx) error { ran = append(ran, name); return err }
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		ops  []op
		sync bool // a commit between the first op and the rest
		want string
	}{
		{"put, checkpoint and settle in one group", []op{
			{fn: rec("put", nil), hold: "h1"}, {fn: rec("other", nil), hold: "h2"},
			{fn: rec("checkpoint", nil), hold: "h1"}, {fn: rec("settle", nil), settles: "h1"}},
			false, "other settle"},
		{"settled in the next group", []op{
			{fn: rec("put", nil), hold: "h1"}, {fn: rec("settle", nil), settles: "h1"}},
			true, "put settle"},
		{"a failed group runs each alone", []op{
			{fn: rec("put", nil), hold: "h1"}, {fn: rec("bad", boom)}, {fn: rec("settle", nil), settles: "h1"}},
			false, "bad put bad settle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran = nil
			for i, o := range tc.ops {
				w.submit(o)
				if i == 0 && tc.sync {
					if err := w.sync(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := w.sync(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(ran, " "); got != tc.want {
				t.Errorf("ran %q, want %q", got, tc.want)
			}
		})
	}
}

// With settlements acknowledged from memory (AsyncSettle), a record is
// readable the moment Settle returns, though its commit is a window away;
// a write someone waits on (a top-up) commits at once, with every
// settlement queued before it; and a Sync with nothing queued commits
// nothing (an empty commit would still cost two fsyncs).
func TestSettlementReadableBeforeItsCommit(t *testing.T) {
	// A window no test outlives: only a waited-on write commits.
	e, k := newEnv(t, 10*NanosPerUSD, nil, keys.ResetNone, Options{AsyncSettle: true, CommitWindow: time.Hour})
	var commits atomic.Int64
	e.l.ObserveCommits(func(int, time.Duration) { commits.Add(1) })
	stored := func(id string) bool {
		var ok bool
		if err := e.db.View(func(tx store.Tx) error {
			ok = tx.Bucket(bucketGenerations).Get([]byte(id)) != nil
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	settle := func(id string) *Generation {
		r, aerr := e.l.Reserve(k, testReq(id))
		if aerr != nil {
			t.Fatal(aerr)
		}
		g, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 10, CompletionTokens: 5}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}

	g := settle("")
	if stored(g.ID) {
		t.Fatal("the settlement was committed at once; the test needs it queued")
	}
	got, err := e.l.Generation(g.ID)
	if err != nil {
		t.Fatalf("a settled record is not readable before its commit: %v", err)
	}
	if got.ID != g.ID || got.Charged != g.Charged || got.Charged == 0 || got.Status != StatusSuccess {
		t.Fatalf("read %+v, settled %+v", got, g)
	}
	if _, err := e.l.Generation("gen-none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unknown id: %v, want ErrNotFound", err)
	}

	g2 := settle("")
	if _, err := e.l.TopUp(e.acct, NanosPerUSD, "test"); err != nil {
		t.Fatal(err)
	}
	if !stored(g.ID) || !stored(g2.ID) {
		t.Fatal("a top-up committed without the settlements queued before it")
	}
	if got, err := e.l.Generation(g2.ID); err != nil || got.Charged != g2.Charged {
		t.Fatalf("after the commit: %+v, %v", got, err)
	}
	mustAudit(t, e.l)

	before := commits.Load()
	for range 3 {
		if err := e.l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if n := commits.Load() - before; n != 0 {
		t.Fatalf("Sync with nothing queued made %d commits, want 0", n)
	}
}
