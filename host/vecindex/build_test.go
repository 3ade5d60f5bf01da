package vecindex_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/vecindex"
)

// A graph built in the background while puts, deletes, replacements and
// searches race it: the put that reaches the threshold only queues the
// build, the tag is scanned exactly until the graph is installed, and the
// graph installed finds every live entry and none of those deleted or
// replaced, whether they changed before the build's snapshot, between it
// and the linking (held there: more than the catch-up's batch, so the
// builder links a batch with no lock held) or while it linked (with two
// workers: the snapshot is over 2,000 entries).
func TestBackgroundBuildRacesPutsAndDeletes(t *testing.T) {
	const threshold, extra, dims = 2400, 600, 48
	ix, _ := open(t, vecindex.Limits{MaxPerPartition: 10_000, MaxTotal: 10_000, ANNThreshold: threshold})
	r := rand.New(rand.NewPCG(11, 12))
	// Points of 20 topics; the last 50 are the replacements' vectors.
	data := dataset(r, threshold+extra+50, dims, 20)
	other := data[threshold+extra:]
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ix.SetBuildHook(func(stop <-chan struct{}) {
		once.Do(func() { close(held) })
		select {
		case <-release:
		case <-stop:
		}
	})
	put := func(id string, v []float32) {
		if _, err := ix.Put(a, "a", id, "t", v, time.Hour); err != nil {
			t.Error(err)
		}
	}
	del := func(id string) { put(id, nil) }
	// The snapshot's entries, in memory only (a store transaction each
	// would take minutes under -race); the fill's last one queues the
	// build. Their ids are "fill-<i>".
	ix.Fill(a, "a", "t", threshold, dims, func(i int, v []float32) { copy(v, data[i]) })
	name := func(i int) string {
		if i < threshold {
			return fmt.Sprintf("fill-%d", i)
		}
		return fmt.Sprint(i)
	}
	<-held // the snapshot is taken; the linking waits
	if on, _, _ := ix.Graph(a, "a", "t"); on || !ix.Building(a, "a", "t") {
		t.Fatalf("after the threshold's put: graph %t, building %t; want a build under way", on, ix.Building(a, "a", "t"))
	}
	if m, ok := ix.Search(a, "a", "t", data[3], 0.999); !ok || m.ID != "fill-3" {
		t.Fatalf("the exact scan while building: %v %v", m, ok)
	}

	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // new entries; every fifth deleted again
		defer wg.Done()
		for i := threshold; i < threshold+extra; i++ {
			put(fmt.Sprint(i), data[i])
			if i%5 == 0 {
				del(fmt.Sprint(i))
			}
			if i == threshold+300 {
				close(release) // 300 pending: the catch-up's batch is 256
			}
		}
	}()
	go func() { // entries of the snapshot deleted, others replaced
		defer wg.Done()
		for i := range 150 {
			del(name(i))
		}
		for i := range 50 {
			put(name(150+i), other[i])
		}
	}()
	go func() { // searches all along (exact, then through the graph)
		defer wg.Done()
		for i := range 400 {
			ix.Search(a, "a", "t", data[r.IntN(threshold)], 0.5)
			if i%50 == 0 {
				ix.Graph(a, "a", "t")
			}
		}
	}()
	wg.Wait()
	ix.WaitBuilds()

	live := map[string][]float32{}
	gone := map[string][]float32{}
	for i := range threshold + extra {
		id := name(i)
		switch {
		case i < 150 || (i >= threshold && i%5 == 0):
			gone[id] = data[i]
		case i < 200:
			live[id], gone["old "+id] = other[i-150], data[i]
		default:
			live[id] = data[i]
		}
	}
	on, n, dead := ix.Graph(a, "a", "t")
	if !on || n != len(live) {
		t.Fatalf("graph %t with %d live nodes (%d dead), want %d", on, n, dead, len(live))
	}
	for id, v := range live {
		if m, ok := ix.Search(a, "a", "t", v, 0.999); !ok || m.ID != id {
			t.Errorf("live entry %s: %v %v", id, m, ok)
		}
	}
	for id, v := range gone {
		if m, ok := ix.Search(a, "a", "t", v, 0.999); ok {
			t.Errorf("deleted entry %s: found %v", id, m)
		}
	}
}

// Close stops a build under way: it returns, no graph is installed, and
// the tag is still searched exactly.
func TestCloseStopsABuild(t *testing.T) {
	const threshold = 600
	ix, _ := open(t, vecindex.Limits{MaxPerPartition: 10_000, MaxTotal: 10_000, ANNThreshold: threshold})
	data := dataset(rand.New(rand.NewPCG(13, 14)), threshold, 16, 10)
	held := make(chan struct{})
	ix.SetBuildHook(func(stop <-chan struct{}) {
		close(held)
		<-stop // never released: only Close ends the wait
	})
	ix.Fill(a, "a", "t", threshold, 16, func(i int, v []float32) { copy(v, data[i]) })
	<-held
	ix.Close()
	if on, _, _ := ix.Graph(a, "a", "t"); on {
		t.Fatal("a graph was installed after Close")
	}
	if m, ok := ix.Search(a, "a", "t", data[9], 0.999); !ok || m.ID != "fill-9" {
		t.Fatalf("the exact scan after Close: %v %v", m, ok)
	}
	ix.WaitBuilds() // returns: nothing is queued or running
}
