package activity

import (
	"encoding/binary"
	"fmt"
	bolt "go.etcd.io/bbolt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
)

// The benchmarks run on one store of SWITCHYARD_BENCH_GENERATIONS records
// (default one million) built once per process.
var (
	benchOnce sync.Once
	benchDB   store.DB
	benchDir  string
	benchN    = 1_000_000
)

// TestMain removes the benchmarks' store (over a gigabyte for a million
// records) when the package's tests and benchmarks are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchDB != nil {
		_ = benchDB.Close()
		_ = os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

func benchStore(b *testing.B) store.DB {
	benchOnce.Do(func() {
		if v, err := strconv.Atoi(os.Getenv("SWITCHYARD_BENCH_GENERATIONS")); err == nil && v > 0 {
			benchN = v
		}
		dir, err := os.MkdirTemp("", "switchyard-activity-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
		db, err := store.OpenBoltWith(dir+"/a.db", &bolt.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		fill(b, db, benchN, true, "acct_a")
		b.Logf("built a store of %d generations in %s", benchN, time.Since(start).Round(time.Millisecond))
		benchDB = db
	})
	return benchDB
}

// BenchmarkListPage is GET /generations' work: the newest page of 50, and
// one page deep into the store, with and without a narrow filter.
func BenchmarkListPage(b *testing.B) {
	db := benchStore(b)
	deep, err := List(db, "acct_a", Filter{To: day0.Add(time.Duration(benchN/2) * time.Hour)}, "", 1)
	if err != nil || len(deep.Data) != 1 {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		f      Filter
		cursor string
	}{
		{"newest", Filter{}, ""},
		{"deep", Filter{}, deep.Next},
		{"model+status", Filter{Model: "v/m1", Status: billing.StatusError}, ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				p, err := List(db, "acct_a", bc.f, bc.cursor, DefaultLimit)
				if err != nil || len(p.Data) != DefaultLimit {
					b.Fatal(err, len(p.Data))
				}
			}
		})
	}
}

// BenchmarkActivity is GET /activity's work over 30 days of the store.
func BenchmarkActivity(b *testing.B) {
	db := benchStore(b)
	for b.Loop() {
		rows, err := Activity(db, "acct_a", "2026-03-01", "2026-03-30", ByModelAndKey)
		if err != nil || len(rows) == 0 {
			b.Fatal(err, len(rows))
		}
	}
}

// BenchmarkSettle is the ledger's whole-request work (hold, then a
// settlement: durable, or async as the default configuration has it), 16
// in flight per CPU, with and without the activity index written in each
// settlement's transaction: what the index costs the ledger writer.
func BenchmarkSettle(b *testing.B) {
	for _, bc := range []struct{ indexed, async bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		indexed := bc.indexed
		name := map[bool]string{false: "plain", true: "indexed"}[indexed] + map[bool]string{false: "/durable", true: "/async"}[bc.async]
		b.Run(name, func(b *testing.B) {
			db, err := store.OpenBoltWith(b.TempDir()+"/s.db", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ks, err := keys.Open(db)
			if err != nil {
				b.Fatal(err)
			}
			opts := billing.Options{AsyncSettle: bc.async}
			if indexed {
				if err := Open(db); err != nil {
					b.Fatal(err)
				}
				opts.Index = Index
			}
			l, err := billing.Open(db, opts)
			if err != nil {
				b.Fatal(err)
			}
			// Closing commits what async settlements queued: part of the cost.
			defer l.Close()
			a, err := ks.CreateAccount("acme")
			if err != nil {
				b.Fatal(err)
			}
			_, k, err := ks.Create(a.ID, keys.Options{Name: "k"})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.TopUp(a.ID, 1_000_000*billing.NanosPerUSD, "bench"); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			b.SetParallelism(16)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, aerr := l.Reserve(k, billing.Request{ID: fmt.Sprintf("gen-%d", n.Add(1)), Model: "acme/m", Provider: "p1",
						Price: catalog.Price{Prompt: 1, Completion: 2}, PromptTokens: 1000, MaxOutputTokens: 500})
					if aerr != nil {
						b.Fatal(aerr)
					}
					if _, err := r.Settle(billing.Outcome{Usage: billing.Usage{PromptTokens: 900, CompletionTokens: 300, Requests: 1}}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkIndexKeys is the keys one settlement's indexing writes (the
// store's writer computes them for every record): cut from one array,
// against a join each with the date formatted twice, as before.
func BenchmarkIndexKeys(b *testing.B) {
	g := &billing.Generation{ID: "gen-08E0vlcfkh3aqBIoAUnsG1g7", AccountID: "acct_c8d65c9f3d7d09fb",
		KeyHash: "98fc6926aa1d1e101ddf3d541389e980e0e270b2d87a2a352e5b4a552068ce54", Model: "bench/chat",
		Provider: "fake", Status: "success", CreatedAt: time.Now()}
	b.Run("one array", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_ = indexKeys(g)
		}
	})
	b.Run("a join each", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			suffix := string(binary.BigEndian.AppendUint64(make([]byte, 0, 64), uint64(g.CreatedAt.UnixNano()))) + g.ID
			_ = [...][]byte{join(g.AccountID, suffix), join(g.AccountID, g.KeyHash, suffix), join(g.AccountID, g.Model, suffix),
				join(g.Model, g.Provider, g.Status, g.KeyHash),
				join(g.AccountID, g.CreatedAt.UTC().Format(time.DateOnly), g.Model, g.KeyHash),
				join(g.AccountID, g.CreatedAt.UTC().Format(time.DateOnly), g.Referer, g.Title)}
		}
	})
}
