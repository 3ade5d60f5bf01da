package billing_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/activity"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/store/pgtest"
)

// pruneStores are the two implementations of the store contract: the
// pruner must behave the same on both.
func pruneStores(t *testing.T) map[string]func(t *testing.T) store.DB {
	var pg *pgtest.Server
	return map[string]func(t *testing.T) store.DB{
		"bbolt": func(t *testing.T) store.DB {
			db, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
		"postgres": func(t *testing.T) store.DB {
			if pg == nil {
				pg = pgtest.New(t)
			}
			db, err := store.OpenPostgres(context.Background(), pg.NewDB(t), store.PostgresOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
	}
}

// clock is a settable billing.Options.Now.
type clock struct{ t atomic.Pointer[time.Time] }

func (c *clock) set(t time.Time)     { c.t.Store(&t) }
func (c *clock) now() time.Time      { return *c.t.Load() }
func idAt(t time.Time, i int) string { return billing.IDAt(t) + fmt.Sprintf("%014d", i) }

var prunePrice = catalog.Price{Prompt: 1, Completion: 2, Request: 0.001}

// Records older than the retention go in bounded batches with their index
// entries; younger ones, the daily totals, balances and key usage stay;
// the audit holds through the archived totals.
func TestPrune(t *testing.T) {
	for name, open := range pruneStores(t) {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			ks, err := keys.Open(db)
			if err != nil {
				t.Fatal(err)
			}
			a, err := ks.CreateAccount("acme")
			if err != nil {
				t.Fatal(err)
			}
			var ks2 [2]*keys.Key
			for i := range ks2 {
				if _, ks2[i], err = ks.Create(a.ID, keys.Options{Name: fmt.Sprint("k", i), LimitReset: keys.ResetNone}); err != nil {
					t.Fatal(err)
				}
			}
			if err := activity.Open(db); err != nil {
				t.Fatal(err)
			}
			day := 24 * time.Hour
			start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
			var clk clock
			clk.set(start)
			l, err := billing.Open(db, activity.Indexing(billing.Options{Now: clk.now}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			if _, err := l.TopUp(a.ID, 100*billing.NanosPerUSD, "test"); err != nil {
				t.Fatal(err)
			}
			// 23 records one a day from day 0, each on one of two keys and
			// models; then an open hold on day 23.
			type rec struct {
				id     string
				at     time.Time
				key    string
				model  string
				charge billing.Nanos
			}
			var recs []rec
			for i := range 23 {
				at := start.Add(time.Duration(i) * day)
				clk.set(at)
				k := ks2[i%2]
				model := []string{"acme/a", "acme/b"}[i%2]
				r, aerr := l.Reserve(k, billing.Request{ID: idAt(at, i), Model: model, Provider: "p", Price: prunePrice, PromptTokens: 1000, MaxOutputTokens: 500})
				if aerr != nil {
					t.Fatal(aerr)
				}
				g, err := r.Settle(billing.Outcome{Usage: billing.Usage{PromptTokens: int64(100 + i), CompletionTokens: 10}})
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, rec{g.ID, at, k.Hash, model, g.Charged})
			}
			clk.set(start.Add(23 * day))
			open, aerr := l.Reserve(ks2[0], billing.Request{ID: idAt(start.Add(23*day), 99), Model: "acme/a", Provider: "p", Price: prunePrice, PromptTokens: 1000, MaxOutputTokens: 500})
			if aerr != nil {
				t.Fatal(aerr)
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			balance := l.Balance(a.ID)
			usage := [2]billing.KeyUsage{l.KeyUsage(ks2[0]), l.KeyUsage(ks2[1])}
			activityBefore, err := activity.Activity(db, a.ID, "2026-01-01", "2026-12-31", activity.ByModelAndKey)
			if err != nil {
				t.Fatal(err)
			}

			// Day 40, keeping 30 days: the records of days 0–9 go, in
			// batches of at most 4.
			now := start.Add(40 * day)
			clk.set(now)
			const retention, batch = 30 * 24 * time.Hour, 4
			// A round told to stop after its first batch stops there; the
			// next one goes on, pausing between its batches.
			res, err := l.Prune(retention, billing.PruneOptions{Batch: batch, Between: func(time.Duration) bool { return false }})
			if err != nil || res.Pruned != batch || res.Batches != 1 {
				t.Fatalf("stopped prune: %+v %v, want one batch of %d", res, err, batch)
			}
			pauses := 0
			res2, err := l.Prune(retention, billing.PruneOptions{Batch: batch, Between: func(time.Duration) bool { pauses++; return true }})
			if err != nil {
				t.Fatal(err)
			}
			if res2.Batches != 2 || pauses != 1 {
				t.Errorf("second round: %+v with %d pauses, want 2 batches and a pause between them", res2, pauses)
			}
			res.Pruned += res2.Pruned
			res.Batches += res2.Batches
			res.Largest = max(res.Largest, res2.Largest)
			cut := now.Add(-retention)
			var gone, kept []rec
			for _, r := range recs {
				if r.at.Before(cut) {
					gone = append(gone, r)
				} else {
					kept = append(kept, r)
				}
			}
			if len(gone) != 10 || res.Pruned != 10 || res.Batches != 3 || res.Largest > batch || res.Largest == 0 {
				t.Fatalf("prune: %+v, want 10 records in 3 batches of at most %d", res, batch)
			}
			for _, r := range gone {
				if _, err := l.Generation(r.id); !errors.Is(err, billing.ErrNotFound) {
					t.Errorf("%s (day %v) still there: %v", r.id, r.at, err)
				}
				created, st, ok, err := l.Pruned(r.id)
				if err != nil || !ok || !created.Equal(r.at) || st.Retention != retention {
					t.Errorf("Pruned(%s) = %v %+v %v %v", r.id, created, st, ok, err)
				}
			}
			for _, r := range kept {
				if _, err := l.Generation(r.id); err != nil {
					t.Errorf("%s (day %v): %v", r.id, r.at, err)
				}
			}
			// The indexes name exactly the records kept, whichever is walked.
			want := []string{}
			for _, r := range kept {
				want = append(want, r.id)
			}
			sort.Sort(sort.Reverse(sort.StringSlice(want)))
			for _, f := range []activity.Filter{{}, {Key: ks2[0].Hash}, {Model: "acme/b"}} {
				page, err := activity.List(db, a.ID, f, "", 100)
				if err != nil {
					t.Fatal(err)
				}
				var got, exp []string
				for _, g := range page.Data {
					got = append(got, g.ID)
				}
				for i, id := range want {
					r := kept[len(kept)-1-i]
					if (f.Key == "" || f.Key == r.key) && (f.Model == "" || f.Model == r.model) {
						exp = append(exp, id)
					}
				}
				if strings.Join(got, ",") != strings.Join(exp, ",") {
					t.Errorf("list %+v: %v, want %v", f, got, exp)
				}
			}
			if n := indexEntries(t, db); n != 3*len(kept) {
				t.Errorf("%d index entries, want %d (3 per record kept)", n, 3*len(kept))
			}
			// Daily totals, balances and key usage are untouched.
			activityAfter, err := activity.Activity(db, a.ID, "2026-01-01", "2026-12-31", activity.ByModelAndKey)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(activityAfter) != fmt.Sprint(activityBefore) || len(activityAfter) != 23 {
				t.Errorf("daily totals changed:\n%v\n%v", activityBefore, activityAfter)
			}
			if b := l.Balance(a.ID); b.Usage != balance.Usage || b.Balance != balance.Balance {
				t.Errorf("balance %+v, was %+v", b, balance)
			}
			for i, k := range ks2 {
				if u := l.KeyUsage(k); u.Total != usage[i].Total {
					t.Errorf("key %d usage %s, was %s", i, u.Total, usage[i].Total)
				}
			}
			// The archived totals are what the pruned records charged.
			accts, keyArch, err := l.Archived()
			if err != nil {
				t.Fatal(err)
			}
			var wantA billing.Archived
			wantK := map[string]billing.Archived{}
			for _, r := range gone {
				wantA.Charged += r.charge
				wantA.Records++
				w := wantK[r.key]
				w.Charged += r.charge
				w.Records++
				wantK[r.key] = w
			}
			if accts[a.ID] != wantA || len(accts) != 1 || fmt.Sprint(keyArch) != fmt.Sprint(wantK) {
				t.Errorf("archived %v %v, want %v %v", accts, keyArch, wantA, wantK)
			}
			mustAuditClean(t, l)

			// Again: nothing left to prune. The hold, now older than the
			// retention, settles normally and is pruned by a later round.
			if res, err := l.Prune(retention, billing.PruneOptions{Batch: batch}); err != nil || res.Pruned != 0 {
				t.Fatalf("second prune: %+v %v", res, err)
			}
			if _, err := open.Settle(billing.Outcome{Usage: billing.Usage{PromptTokens: 5, CompletionTokens: 5}}); err != nil {
				t.Fatal(err)
			}
			mustAuditClean(t, l)
			clk.set(start.Add(90 * day))
			if res, err := l.Prune(retention, billing.PruneOptions{}); err != nil || res.Pruned != 14 || res.Batches != 1 {
				t.Fatalf("third prune: %+v %v, want all 14 records in one batch", res, err)
			}
			mustAuditClean(t, l)
			if st, err := l.PruneState(); err != nil || st.Pruned != 24 || !st.Before.Equal(start.Add(60*day)) {
				t.Fatalf("state %+v %v", st, err)
			}
			// An id that carries no time, or a time after the cut, was not
			// pruned (as far as anyone can tell).
			for _, id := range []string{"gen-nope", idAt(start.Add(61*day), 1)} {
				if _, _, ok, err := l.Pruned(id); ok || err != nil {
					t.Errorf("Pruned(%s) = %v %v", id, ok, err)
				}
			}
		})
	}
}

func mustAuditClean(t *testing.T, l *billing.Ledger) {
	t.Helper()
	p, err := l.Audit()
	if err != nil || len(p) > 0 {
		t.Fatalf("audit: %v\n%s", err, strings.Join(p, "\n"))
	}
}

// indexEntries counts the entries of the per-record activity indexes.
func indexEntries(t *testing.T, db store.DB) int {
	t.Helper()
	n := 0
	if err := db.View(func(tx store.Tx) error {
		for _, b := range []string{"activity_by_time", "activity_by_key", "activity_by_model"} {
			if err := tx.Bucket([]byte(b)).ForEach(func(_, _ []byte) error { n++; return nil }); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// A ledger that indexes its records refuses to prune without a way to
// remove the index entries.
func TestPruneNeedsUnindex(t *testing.T) {
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := billing.Open(db, billing.Options{Index: activity.Index})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Prune(time.Hour, billing.PruneOptions{}); !errors.Is(err, billing.ErrNoUnindex) {
		t.Fatalf("Prune without Unindex: %v", err)
	}
}

// BenchmarkPruneBatch measures one full batch (PruneBatch records with
// their three index entries each, and the archived totals): how long a
// prune transaction holds the store's write lock.
//
//	go test -run '^$' -bench PruneBatch ./host/billing/
func BenchmarkPruneBatch(b *testing.B) {
	for name, open := range map[string]func() (store.DB, func()){
		"bbolt": func() (store.DB, func()) {
			db, err := store.OpenBolt(filepath.Join(b.TempDir(), "sy.db"))
			if err != nil {
				b.Fatal(err)
			}
			return db, func() { db.Close() }
		},
		"postgres": func() (store.DB, func()) {
			s := pgtest.New(b)
			db, err := store.OpenPostgres(context.Background(), s.NewDB(b), store.PostgresOptions{})
			if err != nil {
				b.Fatal(err)
			}
			return db, func() { db.Close() }
		},
	} {
		b.Run(name, func(b *testing.B) {
			db, done := open()
			defer done()
			if err := activity.Open(db); err != nil {
				b.Fatal(err)
			}
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			l, err := billing.Open(db, activity.Indexing(billing.Options{Now: func() time.Time { return start.Add(365 * 24 * time.Hour) }}))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			seq, totalTrips := 0, int64(0)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				// One batch of records over 20 accounts and keys, a minute apart.
				if err := db.Update(func(tx store.Tx) error {
					for range billing.PruneBatch {
						seq++
						at := start.Add(time.Duration(seq) * time.Minute)
						g := &billing.Generation{ID: idAt(at, seq), AccountID: fmt.Sprint("acct", seq%20), KeyHash: fmt.Sprint("key", seq%20),
							Model: "acme/m", Provider: "p", Status: billing.StatusSuccess, Charged: 1000, Cost: billing.Cost{Total: 1000}, CreatedAt: at}
						if err := billing.PutGenerationIn(tx, g); err != nil {
							return err
						}
						if err := activity.Index(tx, g); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				trips := roundTrips(db)
				b.StartTimer()
				res, err := l.Prune(24*time.Hour, billing.PruneOptions{})
				if err != nil || res.Pruned != billing.PruneBatch || res.Batches != 1 {
					b.Fatalf("%+v %v", res, err)
				}
				b.StopTimer()
				totalTrips += roundTrips(db) - trips
				b.StartTimer()
			}
			if name == "postgres" {
				b.ReportMetric(float64(totalTrips)/float64(b.N), "roundtrips/op")
			}
		})
	}
}

func roundTrips(db store.DB) int64 {
	if p, ok := db.(*store.Postgres); ok {
		return p.RoundTrips()
	}
	return 0
}
