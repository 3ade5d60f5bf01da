package activity

import (
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	bolt "go.etcd.io/bbolt"
)

// The benchmarks run on one store of SWITCHYARD_BENCH_GENERATIONS records
// (default one million) built once per process.
var (
	benchOnce sync.Once
	benchDB   *bolt.DB
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

func benchStore(b *testing.B) *bolt.DB {
	benchOnce.Do(func() {
		if v, err := strconv.Atoi(os.Getenv("SWITCHYARD_BENCH_GENERATIONS")); err == nil && v > 0 {
			benchN = v
		}
		dir, err := os.MkdirTemp("", "switchyard-activity-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
		db, err := bolt.Open(dir+"/a.db", 0o600, &bolt.Options{NoSync: true})
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
