package vecindex_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/vecindex"
)

// BenchmarkVectorSearch is the host's cost of one semantic lookup
// (vector_search) in a partition of n entries of d dimensions, all of the
// query's tag (the worst case: every entry is a candidate), by exact scan
// ("flat") and through the HNSW graph ("hnsw", ann_threshold under n):
// 10k entries at 1,536 dimensions (OpenAI's text-embedding-3-small) and at
// 256, 100k and 1M at 16 (a flat index's memory at 1M × 1,536 would be
// 6 GB). An hnsw case also reports its recall@1 against the exact scan
// (50 random queries) and the seconds its graph took to build. The 1M
// hnsw case builds a million-node graph (minutes on a loaded 2-core
// machine): it runs with SWITCHYARD_BENCH_1M=1. make bench runs the rest;
// docs/response-cache.md has the figures.
func BenchmarkVectorSearch(b *testing.B) {
	for _, c := range []struct {
		n, dims int
		ann     bool
	}{
		{10_000, 1536, false}, {10_000, 256, false}, {10_000, 256, true},
		{100_000, 16, false}, {100_000, 16, true},
		{1_000_000, 16, false}, {1_000_000, 16, true},
	} {
		mode := "flat"
		if c.ann {
			mode = "hnsw"
		}
		b.Run(fmt.Sprintf("entries=%d/dims=%d/%s", c.n, c.dims, mode), func(b *testing.B) {
			if c.ann && c.n >= 1_000_000 && os.Getenv("SWITCHYARD_BENCH_1M") == "" {
				b.Skip("SWITCHYARD_BENCH_1M=1 builds the 1M-node graph")
			}
			db, err := store.OpenBolt(filepath.Join(b.TempDir(), "v.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			lim := vecindex.Limits{MaxPerPartition: c.n, MaxTotal: c.n, ANNThreshold: c.n + 1}
			if c.ann {
				lim.ANNThreshold = 1000
			}
			ix, err := vecindex.Open(db, lim)
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			r := rand.New(rand.NewPCG(1, 2))
			random := func(v []float32) {
				for j := range v {
					v[j] = float32(r.NormFloat64())
				}
			}
			var data [][]float32 // kept for the recall check
			start := time.Now()
			ix.Fill(a, "a", "t", c.n, c.dims, func(_ int, v []float32) {
				random(v)
				if c.ann {
					data = append(data, unit(v))
				}
			})
			build, recall := time.Since(start).Seconds(), 0.0
			if c.ann {
				found := 0
				for range 50 {
					q := make([]float32, c.dims)
					random(q)
					q = unit(q)
					best, bestSim := -1, float32(-2)
					for i, v := range data {
						if s := dotf(q, v); s > bestSim {
							best, bestSim = i, s
						}
					}
					if m, ok := ix.Search(a, "a", "t", q, -1); ok && (m.ID == fmt.Sprintf("fill-%d", best) || m.Similarity >= bestSim-1e-6) {
						found++
					}
				}
				recall = float64(found) / 50
			}
			q := make([]float32, c.dims)
			random(q)
			b.ResetTimer()
			for range b.N {
				// A miss at 0.95 (random vectors): the whole scan, and
				// what a hit costs too (a hit is the same scan).
				if _, ok := ix.Search(a, "a", "t", q, 0.95); ok {
					b.Fatal("random vectors matched")
				}
			}
			if c.ann {
				// After the loop: ResetTimer drops reported metrics.
				b.ReportMetric(build, "build-s")
				b.ReportMetric(recall, "recall@1")
			}
		})
	}
}
