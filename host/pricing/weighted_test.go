package pricing

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/store"
)

// The effective price weights each request by its prompt tokens, counts
// cache reads at what they cost, leaves out records older than the window,
// and a refresh reads the records written since the last one.
func TestWeighted(t *testing.T) {
	db, err := store.OpenBoltWith(filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	n := 0
	put := func(at time.Time, model, prov string, tokens int64, promptUSD, cacheUSD float64) {
		n++
		g := &billing.Generation{ID: billing.IDAt(at) + fmt.Sprintf("%014d", n), Model: model, Provider: prov, CreatedAt: at,
			Usage: billing.Usage{PromptTokens: tokens}, Cost: billing.Cost{Prompt: billing.Nanos(promptUSD * 1e9), CacheRead: billing.Nanos(cacheUSD * 1e9)}}
		if err := db.Update(func(tx store.Tx) error { return billing.PutGenerationIn(tx, g) }); err != nil {
			t.Fatal(err)
		}
	}
	// 1M tokens at $1/M and 3M at $3/M: (1+9)/4 = $2.5/M.
	put(now.Add(-2*time.Hour), "a/m", "p", 1_000_000, 1, 0)
	put(now.Add(-time.Hour), "a/m", "p", 3_000_000, 6, 3)
	// Outside the 24 h window: ignored.
	put(now.Add(-48*time.Hour), "a/m", "p", 1_000_000, 100, 0)
	// Another endpoint of the same model, and a record without tokens.
	put(now.Add(-time.Hour), "a/m", "q", 2_000_000, 1, 0)
	put(now.Add(-time.Hour), "a/m", "r", 0, 0, 0)

	w := New(db, 24*time.Hour, time.Minute)
	w.now = func() time.Time { return now }
	got, err := w.Prices()
	if err != nil {
		t.Fatal(err)
	}
	want := map[Key]float64{{"a/m", "p"}: 2.5, {"a/m", "q"}: 0.5}
	if len(got) != len(want) {
		t.Fatalf("prices %v, want %v", got, want)
	}
	for k, v := range want {
		if math.Abs(got[k].USDPerM-v) > 1e-9 {
			t.Fatalf("%v: %v, want %v", k, got[k], v)
		}
	}
	// Within the refresh interval a new record is not read yet; after it,
	// it is.
	put(now.Add(30*time.Second), "a/m", "q", 2_000_000, 3, 0)
	if got, _ := w.Prices(); got[Key{"a/m", "q"}].USDPerM != 0.5 {
		t.Fatalf("refreshed early: %v", got)
	}
	now = now.Add(2 * time.Minute)
	if got, _ := w.Prices(); math.Abs(got[Key{"a/m", "q"}].USDPerM-1) > 1e-9 {
		t.Fatalf("after the interval: %v, want 1", got)
	}
	// A day and an hour later every record left the window.
	now = now.Add(25 * time.Hour) // the window is kept by the hour
	if got, _ := w.Prices(); len(got) != 0 {
		t.Fatalf("a day later: %v", got)
	}
}

// Requests read the prices while one of them refreshes (run with -race):
// a reader that finds a refresh running takes the last prices, and every
// record is counted once.
func TestWeightedConcurrent(t *testing.T) {
	db, err := store.OpenBoltWith(filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := New(db, 24*time.Hour, 0)
	now := time.Now()
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				at := now.Add(-time.Minute)
				rec := &billing.Generation{ID: billing.IDAt(at) + fmt.Sprintf("%02d%012d", g, i), Model: "a/m", Provider: "p", CreatedAt: at,
					Usage: billing.Usage{PromptTokens: 1000}, Cost: billing.Cost{Prompt: 2_000_000}} // $2/M
				if err := db.Update(func(tx store.Tx) error { return billing.PutGenerationIn(tx, rec) }); err != nil {
					t.Error(err)
					return
				}
				if _, err := w.Prices(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	// Past the wait the last refresh's time set: this call refreshes.
	w.now = func() time.Time { return now.Add(time.Minute) }
	got, _ := w.Prices()
	if p := got[Key{"a/m", "p"}]; p.Tokens != 200*1000 || math.Abs(p.USDPerM-2) > 1e-9 {
		t.Fatalf("%+v, want 200,000 tokens at $2/M", p)
	}
}
