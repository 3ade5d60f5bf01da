package pricing

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	bolt "go.etcd.io/bbolt"
)

// The effective price weights each request by its prompt tokens, counts
// cache reads at what they cost, leaves out records older than the window,
// and a refresh reads the records written since the last one.
func TestWeighted(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
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
		if err := db.Update(func(tx *bolt.Tx) error { return billing.PutGenerationIn(tx, g) }); err != nil {
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
