package vecindex_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/vecindex"
)

func unit(v []float32) []float32 {
	var ss float64
	for _, f := range v {
		ss += float64(f) * float64(f)
	}
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = float32(float64(f) / math.Sqrt(ss))
	}
	return out
}

func dotf(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// dataset is n unit vectors of dims dimensions: uniformly random, or in
// clusters (centres, each point its centre plus noise: what embeddings of
// one topic look like).
func dataset(r *rand.Rand, n, dims, clusters int) [][]float32 {
	var centres [][]float32
	for range clusters {
		c := make([]float32, dims)
		for j := range c {
			c[j] = float32(r.NormFloat64())
		}
		centres = append(centres, unit(c))
	}
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dims)
		for j := range v {
			v[j] = float32(r.NormFloat64())
			if clusters > 0 {
				v[j] = centres[i%clusters][j] + 0.08*v[j]
			}
		}
		out[i] = unit(v)
	}
	return out
}

// The approximate index against the exact scan: the share of queries
// whose best match it finds (recall@1), on uniformly random and on
// clustered vectors, for queries near a stored vector (a paraphrase: what
// a semantic hit is) and for arbitrary ones (a miss's best is anything).
func TestHNSWRecallAgainstExact(t *testing.T) {
	const queries = 300
	for _, c := range []struct {
		name     string
		n, dims  int
		clusters int
		near     float64 // noise of a query around a stored vector; 0: an arbitrary query
		want     float64 // least recall@1
	}{
		{"random/near", 3000, 48, 0, 0.2, 0.99},
		{"random/arbitrary", 3000, 48, 0, 0, 0.90},
		{"clustered/near", 3000, 48, 40, 0.05, 0.99},
		{"clustered/arbitrary", 3000, 48, 40, 0, 0.95},
		// The size of the embeddings the benchmarks use.
		{"clustered-256/near", 5000, 256, 100, 0.2, 0.99},
		{"clustered-256/arbitrary", 5000, 256, 100, 0, 0.95},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, dims := c.n, c.dims
			r := rand.New(rand.NewPCG(7, uint64(c.clusters)))
			data := dataset(r, n, dims, c.clusters)
			ix, _ := open(t, vecindex.Limits{MaxPerPartition: n, MaxTotal: n, ANNThreshold: 1000})
			ix.Fill(a, "a", "t", n, dims, func(i int, v []float32) { copy(v, data[i]) })
			ix.WaitBuilds()
			if on, live, _ := ix.Graph(a, "a", "t"); !on || live != n {
				t.Fatalf("graph on %t with %d nodes, want %d", on, live, n)
			}
			found := 0
			for range queries {
				var q []float32
				if c.near > 0 {
					base := data[r.IntN(n)]
					q = make([]float32, dims)
					for j := range q {
						q[j] = base[j] + float32(c.near*r.NormFloat64()/math.Sqrt(float64(dims)))
					}
				} else if c.clusters > 0 {
					q = dataset(r, 1, dims, c.clusters)[0] // in some cluster, a new point
				} else {
					q = dataset(r, 1, dims, 0)[0]
				}
				q = unit(q)
				best, bestSim := -1, float32(-2)
				for i, v := range data {
					if s := dotf(q, v); s > bestSim {
						best, bestSim = i, s
					}
				}
				m, ok := ix.Search(a, "a", "t", q, -1)
				if ok && (m.ID == fmt.Sprintf("fill-%d", best) || m.Similarity >= bestSim-1e-6) {
					found++
				}
			}
			recall := float64(found) / queries
			t.Logf("recall@1 %.3f (%d of %d)", recall, found, queries)
			if recall < c.want {
				t.Fatalf("recall@1 %.3f, want at least %.2f", recall, c.want)
			}
		})
	}
}

// Under the threshold the scan is exact; at it a graph is built; removed
// entries are never returned and dead nodes are rebuilt away; a tag that
// shrinks under half the threshold is scanned exactly again; a restart
// builds the graph from the store.
func TestHNSWLifecycle(t *testing.T) {
	lim := vecindex.Limits{MaxPerPartition: 1000, MaxTotal: 1000, ANNThreshold: 40}
	path := t.TempDir() + "/v.db"
	c := &clock{t: time.Now()} // the restart's load reads the real clock
	db, err := store.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := vecindex.Open(db, lim)
	if err != nil {
		t.Fatal(err)
	}
	ix.Now = c.now
	r := rand.New(rand.NewPCG(3, 4))
	data := dataset(r, 60, 16, 0)
	put := func(i int) {
		if _, err := ix.Put(a, "a", fmt.Sprint(i), "t", data[i], time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 39 {
		put(i)
	}
	if on, _, _ := ix.Graph(a, "a", "t"); on {
		t.Fatal("a graph under the threshold")
	}
	put(39)
	ix.WaitBuilds() // built in the background
	if on, live, _ := ix.Graph(a, "a", "t"); !on || live != 40 {
		t.Fatalf("at the threshold: graph %t, %d live", on, live)
	}
	for i := 40; i < 60; i++ {
		put(i)
	}
	for i := range 60 {
		if m, ok := ix.Search(a, "a", "t", data[i], 0.999); !ok || m.ID != fmt.Sprint(i) {
			t.Fatalf("entry %d: %v %v", i, m, ok)
		}
	}
	// Another tag stays exact and is not mixed in.
	if _, ok := ix.Search(a, "a", "other", data[5], 0.5); ok {
		t.Fatal("another tag matched")
	}
	// Deleted: never returned (its node stays as a waypoint).
	if _, err := ix.Put(a, "a", "5", "t", nil, 0); err != nil {
		t.Fatal(err)
	}
	if m, ok := ix.Search(a, "a", "t", data[5], 0.999); ok {
		t.Fatalf("a deleted entry was found: %v", m)
	}
	// A restart builds the graph from the store.
	ix.Close()
	_ = db.Close()
	ix = openAt(t, path, lim, c)
	ix.WaitBuilds()
	if on, live, _ := ix.Graph(a, "a", "t"); !on || live != 59 {
		t.Fatalf("after a restart: graph %t, %d live", on, live)
	}
	if m, ok := ix.Search(a, "a", "t", data[7], 0.999); !ok || m.ID != "7" {
		t.Fatalf("after a restart: %v %v", m, ok)
	}
	// Deleting down: dead nodes are rebuilt away, and under half the
	// threshold the tag is scanned exactly again.
	for i := 6; i < 47; i++ {
		if _, err := ix.Put(a, "a", fmt.Sprint(i), "t", nil, 0); err != nil {
			t.Fatal(err)
		}
		ix.WaitBuilds() // a rebuild when the dead outnumber the live
		if on, live, dead := ix.Graph(a, "a", "t"); on && dead > live {
			t.Fatalf("after deleting %d: %d dead, %d live", i, dead, live)
		}
	}
	if on, _, _ := ix.Graph(a, "a", "t"); on {
		t.Fatal("a graph under half the threshold")
	}
	for _, i := range []int{0, 47, 59} {
		if m, ok := ix.Search(a, "a", "t", data[i], 0.999); !ok || m.ID != fmt.Sprint(i) {
			t.Fatalf("entry %d after the deletes: %v %v", i, m, ok)
		}
	}
	// Expired entries are not found through the graph either.
	for i := range 60 {
		put(i)
	}
	c.t = c.t.Add(2 * time.Hour)
	if m, ok := ix.Search(a, "a", "t", data[50], 0.5); ok {
		t.Fatalf("an expired entry was found: %v", m)
	}
}
