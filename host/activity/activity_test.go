package activity

import (
	"bytes"
	"encoding/binary"
	"fmt"
	bolt "go.etcd.io/bbolt"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/usage"
)

var day0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// gen is record i of a synthetic store: three models, two keys, two
// providers, every seventh an error, one record per hour.
func gen(account string, i int) *billing.Generation {
	status := billing.StatusSuccess
	if i%7 == 0 {
		status = billing.StatusError
	}
	var app usage.Attribution // every fourth request sends no attribution
	if i%4 != 0 {
		app = usage.Attribution{Referer: fmt.Sprintf("https://app%d.example", i%2), Title: "App"}
	}
	return &billing.Generation{
		Attribution: app,
		ID:          fmt.Sprintf("gen-%s-%07d", account, i), AccountID: account, KeyHash: fmt.Sprintf("key%d", i%2),
		Model: fmt.Sprintf("v/m%d", i%3), Provider: fmt.Sprintf("p%d", i%2), Status: status,
		Usage:   billing.Usage{PromptTokens: 10, CompletionTokens: int64(i % 5)},
		Charged: billing.Nanos(1000 + i), CreatedAt: day0.Add(time.Duration(i) * time.Hour),
	}
}

func openDB(t testing.TB) store.DB {
	db, err := store.OpenBoltWith(filepath.Join(t.TempDir(), "a.db"), &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fill writes n records per account, indexed when index is set.
func fill(t testing.TB, db store.DB, n int, index bool, accounts ...string) {
	for start := 0; start < n; start += 20000 {
		err := db.Update(func(tx store.Tx) error {
			for i := start; i < min(n, start+20000); i++ {
				for _, a := range accounts {
					g := gen(a, i)
					if err := billing.PutGenerationIn(tx, g); err != nil {
						return err
					}
					if index {
						if err := Index(tx, g); err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// want is what a listing must return: records of account matching keep,
// newest first.
func want(account string, n int, keep func(*billing.Generation) bool) []string {
	var ids []string
	for i := n - 1; i >= 0; i-- {
		if g := gen(account, i); keep(g) {
			ids = append(ids, g.ID)
		}
	}
	return ids
}

// listAll pages through a listing and returns the ids in order.
func listAll(t *testing.T, db store.DB, account string, f Filter, limit int) ([]string, int) {
	t.Helper()
	var ids []string
	cursor, pages := "", 0
	for {
		p, err := List(db, account, f, cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(p.Data) > limit {
			t.Fatalf("page of %d records, limit %d", len(p.Data), limit)
		}
		for _, g := range p.Data {
			ids = append(ids, g.ID)
		}
		if p.Next == "" {
			return ids, pages
		}
		if len(p.Data) == 0 {
			t.Fatal("empty page with a next cursor")
		}
		cursor = p.Next
		if pages > 1000 {
			t.Fatal("pagination does not end")
		}
	}
}

func TestListFiltersAndPages(t *testing.T) {
	const n = 200
	db := openDB(t)
	fill(t, db, n, true, "acct_a", "acct_b")
	from, to := day0.Add(50*time.Hour), day0.Add(120*time.Hour)
	cases := []struct {
		name string
		f    Filter
		keep func(*billing.Generation) bool
	}{
		{"all", Filter{}, func(*billing.Generation) bool { return true }},
		{"key", Filter{Key: "key1"}, func(g *billing.Generation) bool { return g.KeyHash == "key1" }},
		{"model", Filter{Model: "v/m2"}, func(g *billing.Generation) bool { return g.Model == "v/m2" }},
		{"provider", Filter{Provider: "p0"}, func(g *billing.Generation) bool { return g.Provider == "p0" }},
		{"status", Filter{Status: billing.StatusError}, func(g *billing.Generation) bool { return g.Status == billing.StatusError }},
		{"time range", Filter{From: from, To: to}, func(g *billing.Generation) bool {
			return !g.CreatedAt.Before(from) && g.CreatedAt.Before(to)
		}},
		{"key model status and range", Filter{Key: "key0", Model: "v/m1", Status: billing.StatusSuccess, From: from, To: to},
			func(g *billing.Generation) bool {
				return g.KeyHash == "key0" && g.Model == "v/m1" && g.Status == billing.StatusSuccess &&
					!g.CreatedAt.Before(from) && g.CreatedAt.Before(to)
			}},
		{"unknown model", Filter{Model: "v/none"}, func(*billing.Generation) bool { return false }},
	}
	for _, tc := range cases {
		for _, limit := range []int{1, 7, 500} {
			t.Run(fmt.Sprintf("%s/limit%d", tc.name, limit), func(t *testing.T) {
				got, pages := listAll(t, db, "acct_a", tc.f, limit)
				exp := want("acct_a", n, tc.keep)
				if fmt.Sprint(got) != fmt.Sprint(exp) {
					t.Fatalf("got %d ids %v…, want %d %v…", len(got), head(got), len(exp), head(exp))
				}
				if wantPages := max(1, (len(exp)+limit-1)/limit); pages != wantPages {
					t.Fatalf("%d pages for %d records of %d, want %d", pages, len(exp), limit, wantPages)
				}
			})
		}
	}
	if _, err := List(db, "acct_a", Filter{}, "not-a-cursor!", 10); err != ErrBadCursor {
		t.Fatalf("bad cursor: %v", err)
	}
}

func head(ids []string) []string { return ids[:min(3, len(ids))] }

func TestActivityTotals(t *testing.T) {
	const n = 100 // 100 hours from 10:00 on day 0: days 0..4
	db := openDB(t)
	fill(t, db, n, true, "acct_a", "acct_b")
	type sums struct {
		req, prompt, completion int64
		cost                    billing.Nanos
	}
	expect := map[[3]string]*sums{}
	for i := 0; i < n; i++ {
		g := gen("acct_a", i)
		k := [3]string{g.CreatedAt.Format(time.DateOnly), g.Model, ""}
		if expect[k] == nil {
			expect[k] = &sums{}
		}
		s := expect[k]
		s.req++
		s.prompt += g.Usage.PromptTokens
		s.completion += g.Usage.CompletionTokens
		s.cost += g.Charged
	}
	rows, err := Activity(db, "acct_a", "2026-03-02", "2026-03-03", ByModel)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 { // two days × three models
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	for _, r := range rows {
		s := expect[[3]string{r.Date, r.Model, ""}]
		if s == nil || r.Key != "" || r.Requests != s.req || r.PromptTokens != s.prompt || r.CompletionTokens != s.completion || r.Cost != s.cost.USD() {
			t.Fatalf("row %+v, want %+v", r, s)
		}
	}
	// Per key, the same requests split another way; per model and key,
	// finer still. Every grouping adds up to the same totals.
	for _, by := range []GroupBy{ByKey, ByModelAndKey} {
		rows2, err := Activity(db, "acct_a", "2026-03-02", "2026-03-03", by)
		if err != nil {
			t.Fatal(err)
		}
		if total(rows2) != total(rows) {
			t.Fatalf("grouping %d totals %v, by model %v", by, total(rows2), total(rows))
		}
		for _, r := range rows2 {
			if r.Key == "" || (by == ByKey) != (r.Model == "") {
				t.Fatalf("grouping %d: row %+v", by, r)
			}
		}
	}
	// Per app (the attribution headers), the same totals again: a row per
	// day and app, one of them for the requests that sent none.
	apps, err := Activity(db, "acct_a", "2026-03-02", "2026-03-03", ByApp)
	if err != nil {
		t.Fatal(err)
	}
	if total(apps) != total(rows) || len(apps) != 6 { // two days × (app0, app1, none)
		t.Fatalf("by app: %d rows, totals %v, by model %v: %+v", len(apps), total(apps), total(rows), apps)
	}
	for _, r := range apps {
		if r.Model != "" || r.Key != "" || (r.HTTPReferer == "") != (r.AppTitle == "") {
			t.Fatalf("by app: row %+v", r)
		}
	}
	none, err := Activity(db, "acct_c", "2026-03-01", "2026-03-31", ByModel)
	if err != nil || len(none) != 0 {
		t.Fatalf("another account's activity: %v %v", none, err)
	}
}

func total(rows []Row) [3]int64 {
	var t [3]int64
	for _, r := range rows {
		t[0] += r.Requests
		t[1] += r.PromptTokens
		t[2] += r.CompletionTokens
	}
	return t
}

// A store written before the indexes existed is indexed once by Open, and
// a second Open adds nothing twice.
func TestOpenIndexesExistingRecords(t *testing.T) {
	const n = 25
	db := openDB(t)
	fill(t, db, n, false, "acct_a")
	for range 2 {
		if err := Open(db); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := listAll(t, db, "acct_a", Filter{}, 10)
	if len(got) != n {
		t.Fatalf("%d records listed after Open, want %d", len(got), n)
	}
	rows, err := Activity(db, "acct_a", "2026-03-01", "2026-03-31", ByModel)
	if err != nil {
		t.Fatal(err)
	}
	if tot := total(rows); tot[0] != n {
		t.Fatalf("activity counts %d requests, want %d", tot[0], n)
	}
}

// A backfill that was interrupted runs again over records it indexed
// already: they are not indexed (or counted) twice.
func TestBackfillAgainIndexesOnce(t *testing.T) {
	const n = 10
	db := openDB(t)
	fill(t, db, n, false, "acct_a")
	// The first half was indexed before the interruption; no mark was set.
	err := db.Update(func(tx store.Tx) error {
		for i := range n / 2 {
			if err := Index(tx, gen("acct_a", i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := Open(db); err != nil {
		t.Fatal(err)
	}
	got, _ := listAll(t, db, "acct_a", Filter{}, 10)
	rows, err := Activity(db, "acct_a", "2026-03-01", "2026-03-31", ByModel)
	if err != nil {
		t.Fatal(err)
	}
	if tot := total(rows); len(got) != n || tot[0] != n {
		t.Fatalf("%d records listed and %d requests counted, want %d", len(got), tot[0], n)
	}
}

// The keys cut from one array are byte for byte the keys the indexes
// were written with before (each its own join), so a store written by
// an earlier version reads and prunes as it did — empty provider, status
// and attribution fields included.
func TestIndexKeysAsBefore(t *testing.T) {
	at := time.Date(2026, 11, 30, 23, 59, 59, 999_999_999, time.FixedZone("x", -3600))
	for _, g := range []*billing.Generation{
		{ID: "gen-08E0vlcfkh3aqBIoAUnsG1g7", AccountID: "acct_c8d65c9f3d7d09fb", KeyHash: "98fc69", Model: "bench/chat",
			Provider: "fake", Status: "success", Attribution: usage.Attribution{Referer: "https://app.example", Title: "App"}, CreatedAt: at},
		{ID: "gen-1", AccountID: "a", CreatedAt: at},
	} {
		suffix := string(binary.BigEndian.AppendUint64(nil, uint64(g.CreatedAt.UnixNano()))) + g.ID
		date := g.CreatedAt.UTC().Format(time.DateOnly)
		k := indexKeys(g)
		for _, c := range []struct {
			name      string
			got, want []byte
		}{
			{"by time", k.byTime, join(g.AccountID, suffix)},
			{"by key", k.byKey, join(g.AccountID, g.KeyHash, suffix)},
			{"by model", k.byModel, join(g.AccountID, g.Model, suffix)},
			{"time value", k.timeValue, join(g.Model, g.Provider, g.Status, g.KeyHash)},
			{"daily", k.daily, join(g.AccountID, date, g.Model, g.KeyHash)},
			{"daily app", k.dailyApp, join(g.AccountID, date, g.Referer, g.Title)},
		} {
			if !bytes.Equal(c.got, c.want) || cap(c.got) != len(c.got) {
				t.Errorf("%s %s: %q (cap %d), want %q", g.ID, c.name, c.got, cap(c.got), c.want)
			}
		}
		if n := testing.AllocsPerRun(100, func() { _ = indexKeys(g) }); n != 1 {
			t.Errorf("indexKeys allocated %v times, want once", n)
		}
	}
}
