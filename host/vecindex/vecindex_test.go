package vecindex_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/kv"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/vecindex"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func openAt(t *testing.T, path string, lim vecindex.Limits, c *clock) *vecindex.Index {
	t.Helper()
	db, err := store.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := vecindex.Open(db, lim)
	if err != nil {
		t.Fatal(err)
	}
	ix.Now = c.now
	t.Cleanup(func() { ix.Close(); _ = db.Close() })
	return ix
}

func open(t *testing.T, lim vecindex.Limits) (*vecindex.Index, *clock) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return openAt(t, filepath.Join(t.TempDir(), "v.db"), lim, c), c
}

var (
	a = kv.Scope{Module: "response-cache", Account: "acct-a"}
	b = kv.Scope{Module: "response-cache", Account: "acct-b"}
	o = kv.Scope{Owner: "acct-b", Module: "response-cache", Account: "acct-a"}
)

func TestSearchIsCosineWithinPartitionAndTag(t *testing.T) {
	ix, _ := open(t, vecindex.Limits{})
	// Not unit length: the index normalises, so scale does not matter.
	must(t)(ix.Put(a, "p", "x", "t", []float32{3, 0, 0}, 0))
	must(t)(ix.Put(a, "p", "y", "t", []float32{0, 2, 0}, 0))
	cases := []struct {
		name      string
		sc        kv.Scope
		part, tag string
		q         []float32
		min       float32
		want      string // "" for no match
	}{
		{"same direction", a, "p", "t", []float32{1, 0, 0}, 0.99, "x"},
		{"nearest", a, "p", "t", []float32{1, 0.2, 0}, 0.9, "x"},
		{"under the threshold", a, "p", "t", []float32{1, 1, 0}, 0.95, ""},
		{"other tag", a, "p", "u", []float32{1, 0, 0}, 0, ""},
		{"other partition", a, "q", "t", []float32{1, 0, 0}, 0, ""},
		{"other account", b, "p", "t", []float32{1, 0, 0}, 0, ""},
		{"other publisher", o, "p", "t", []float32{1, 0, 0}, 0, ""},
		{"other dimensions", a, "p", "t", []float32{1, 0}, 0, ""},
	}
	for _, c := range cases {
		m, ok := ix.Search(c.sc, c.part, c.tag, c.q, c.min)
		if got := map[bool]string{true: m.ID}[ok]; got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.name, got, m.Similarity, c.want)
		}
	}
	if m, _ := ix.Search(a, "p", "t", []float32{1, 0.2, 0}, 0); m.Similarity < 0.98 || m.Similarity > 0.981 {
		t.Errorf("similarity %v, want cos = 1/sqrt(1.04) = 0.9806", m.Similarity)
	}
}

func TestBadInputsRefused(t *testing.T) {
	ix, _ := open(t, vecindex.Limits{MaxDims: 4})
	for name, v := range map[string][]float32{"zero": {0, 0}, "too long": {1, 2, 3, 4, 5}} {
		if _, err := ix.Put(a, "p", "x", "t", v, 0); err == nil {
			t.Errorf("%s: stored", name)
		}
	}
	if _, err := ix.Put(a, "", "x", "t", []float32{1}, 0); err == nil {
		t.Error("empty partition name stored")
	}
}

func TestTTLAndDelete(t *testing.T) {
	ix, c := open(t, vecindex.Limits{})
	must(t)(ix.Put(a, "p", "x", "t", []float32{1, 0}, time.Minute))
	must(t)(ix.Put(a, "p", "y", "t", []float32{0, 1}, time.Hour))
	c.t = c.t.Add(2 * time.Minute)
	if _, ok := ix.Search(a, "p", "t", []float32{1, 0}, 0.9); ok {
		t.Error("an expired entry was found")
	}
	must(t)(ix.Put(a, "p", "y", "t", nil, 0)) // delete
	if _, ok := ix.Search(a, "p", "t", []float32{0, 1}, 0.9); ok {
		t.Error("a deleted entry was found")
	}
}

func TestLRUBounds(t *testing.T) {
	ix, c := open(t, vecindex.Limits{MaxPerPartition: 2, MaxTotal: 3})
	tick := func() { c.t = c.t.Add(time.Second) }
	must(t)(ix.Put(a, "p", "x", "t", []float32{1, 0, 0}, 0))
	tick()
	must(t)(ix.Put(a, "p", "y", "t", []float32{0, 1, 0}, 0))
	tick()
	ix.Search(a, "p", "t", []float32{1, 0, 0}, 0.9) // x used after y
	tick()
	if n, err := ix.Put(a, "p", "z", "t", []float32{0, 0, 1}, 0); err != nil || n != 1 {
		t.Fatalf("put over the partition bound evicted %d, %v", n, err)
	}
	if _, ok := ix.Search(a, "p", "t", []float32{0, 1, 0}, 0.9); ok {
		t.Error("y, the least recently used, was kept")
	}
	if _, ok := ix.Search(a, "p", "t", []float32{1, 0, 0}, 0.9); !ok {
		t.Error("x, used recently, was evicted")
	}
	tick()
	// The total bound spans accounts: b's put evicts a's least recent.
	must(t)(ix.Put(b, "p", "w", "t", []float32{1, 1, 0}, 0))
	tick()
	if n, err := ix.Put(b, "p", "v", "t", []float32{1, 0, 1}, 0); err != nil || n != 1 {
		t.Fatalf("put over the total bound evicted %d, %v", n, err)
	}
	if ix.Len() != 3 {
		t.Errorf("%d entries, want the total bound 3", ix.Len())
	}
	// x (used at 2 s) is older in use than z (written at 3 s).
	if _, ok := ix.Search(a, "p", "t", []float32{1, 0, 0}, 0.9); ok {
		t.Error("x, the whole index's least recently used, was kept")
	}
	if _, ok := ix.Search(a, "p", "t", []float32{0, 0, 1}, 0.9); !ok {
		t.Error("z was evicted before the least recently used")
	}
}

// The index is rebuilt from the store at start; expired entries are not.
func TestRebuiltAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	// Open reads the real clock to skip what expired: the test's starts now.
	c := &clock{t: time.Now()}
	db, err := store.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := vecindex.Open(db, vecindex.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ix.Now = c.now
	must(t)(ix.Put(a, "p", "x", "t", []float32{1, 0}, time.Hour))
	must(t)(ix.Put(a, "p", "y", "t", []float32{0, 1}, time.Minute))
	ix.Close()
	_ = db.Close()
	c.t = c.t.Add(2 * time.Minute)
	ix2 := openAt(t, path, vecindex.Limits{}, c)
	if m, ok := ix2.Search(a, "p", "t", []float32{1, 0}, 0.99); !ok || m.ID != "x" {
		t.Errorf("after restart: %+v %v", m, ok)
	}
	if _, ok := ix2.Search(a, "p", "t", []float32{0, 1}, 0.99); ok {
		t.Error("after restart an expired entry was found")
	}
}

func must(t *testing.T) func(int, error) {
	return func(_ int, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}
