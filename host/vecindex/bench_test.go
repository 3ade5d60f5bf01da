package vecindex_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/vecindex"
)

// BenchmarkVectorSearch is the host's cost of one semantic lookup
// (vector_search) in a partition of n entries of d dimensions, all of the
// query's tag (the worst case: every entry is scanned): 10k entries at
// 1,536 dimensions (OpenAI's text-embedding-3-small) and at 256, and 1M at
// 16 (a flat index's memory at 1M × 1,536 would be 6 GB). make bench runs
// it; docs/response-cache.md has the figures.
func BenchmarkVectorSearch(b *testing.B) {
	for _, c := range []struct{ n, dims int }{{10_000, 1536}, {10_000, 256}, {1_000_000, 16}} {
		b.Run(fmt.Sprintf("entries=%d/dims=%d", c.n, c.dims), func(b *testing.B) {
			db, err := store.OpenBolt(filepath.Join(b.TempDir(), "v.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ix, err := vecindex.Open(db, vecindex.Limits{MaxPerPartition: c.n, MaxTotal: c.n})
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			r := rand.New(rand.NewPCG(1, 2))
			fill := func(_ int, v []float32) {
				for j := range v {
					v[j] = float32(r.NormFloat64())
				}
			}
			ix.Fill(a, "a", "t", c.n, c.dims, fill)
			q := make([]float32, c.dims)
			fill(0, q)
			b.ResetTimer()
			for range b.N {
				// A miss at 0.95 (random vectors): the whole scan, and
				// what a hit costs too (a hit is the same scan).
				if _, ok := ix.Search(a, "a", "t", q, 0.95); ok {
					b.Fatal("random vectors matched")
				}
			}
		})
	}
}
