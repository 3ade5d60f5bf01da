package billing

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/store"
)

// A record whose hold is still on disk is never pruned, however old: the
// hold means something may still settle under its id, and the record is
// what makes that settlement a no-op instead of a second charge.
func TestPruneKeepsHeldRecords(t *testing.T) {
	var now atomic.Pointer[time.Time]
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now.Store(&start)
	e, k := newEnv(t, NanosPerUSD, nil, "", Options{Now: func() time.Time { return *now.Load() }})
	var ids []string
	for i := range 3 {
		req := testReq(IDAt(start) + string(rune('a'+i)) + "0000000000000")
		r, aerr := e.l.Reserve(k, req)
		if aerr != nil {
			t.Fatal(aerr)
		}
		if _, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 10}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if err := e.l.Sync(); err != nil {
		t.Fatal(err)
	}
	held := &holdRec{ID: ids[1], Account: e.acct, Key: k.Hash, Created: start}
	if err := e.db.Update(func(tx store.Tx) error {
		return tx.Bucket(bucketHolds).Put([]byte(held.ID), held.appendJSON(nil))
	}); err != nil {
		t.Fatal(err)
	}
	later := start.Add(48 * time.Hour)
	now.Store(&later)
	res, err := e.l.Prune(time.Hour, PruneOptions{})
	if err != nil || res.Pruned != 2 || res.Held != 1 {
		t.Fatalf("prune: %+v %v, want 2 pruned and 1 held", res, err)
	}
	if _, err := e.l.Generation(ids[1]); err != nil {
		t.Fatalf("the held record was pruned: %v", err)
	}
	mustAudit(t, e.l)
}
