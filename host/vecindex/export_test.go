package vecindex

import "github.com/switchyard/switchyard/host/kv"

// Fill puts n entries of random-looking unit vectors of dims dimensions
// into partition name of sc, in memory only (no store transaction each):
// for benchmarks of Search at sizes a test cannot write one by one.
func (ix *Index) Fill(sc kv.Scope, name, tag string, n, dims int, vec func(i int, v []float32)) {
	p := ix.part(partKey(sc, name), true)
	p.mu.Lock()
	defer p.mu.Unlock()
	exp := ix.Now().Add(ix.lim.MaxTTL).UnixNano()
	for i := range n {
		v := make([]float32, dims)
		vec(i, v)
		u, _ := normalise(v)
		ix.set(p, &entry{id: "fill-" + itoa(i), tag: tag, vec: u, expires: exp})
	}
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// Graph reports whether tag of partition name of sc is searched through an
// HNSW graph, and the graph's live and dead nodes.
func (ix *Index) Graph(sc kv.Scope, name, tag string) (on bool, live, dead int) {
	p := ix.part(partKey(sc, name), false)
	if p == nil {
		return false, 0, 0
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	g := p.ann[tag]
	if g == nil {
		return false, 0, 0
	}
	return true, g.live(), g.dead
}

// SetBuildHook makes every graph build call f between its snapshot and
// its linking (f gets the channel Close closes). Set it before the put
// that queues the build.
func (ix *Index) SetBuildHook(f func(stop <-chan struct{})) { ix.buildHook = f }

// Building reports whether a graph of tag of partition name of sc is
// queued or being built.
func (ix *Index) Building(sc kv.Scope, name, tag string) bool {
	p := ix.part(partKey(sc, name), false)
	if p == nil {
		return false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.building[tag] != nil
}
