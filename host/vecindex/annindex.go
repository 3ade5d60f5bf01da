package vecindex

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The approximate index of large tags: a partition keeps, for each tag
// with at least Limits.ANNThreshold entries, an HNSW graph of them
// (hnsw.go), so a search of that tag walks the graph instead of scanning
// the partition.
//
// The graph is built in the background, never in the request whose put
// takes the tag to the threshold (a million-node graph takes minutes):
// that put queues a build and returns; searches keep scanning exactly
// until the graph is ready. The builder snapshots the tag's entries,
// links them with no partition lock held, then catches up with the
// entries put since (each put appends to the build's pending list) and
// installs the graph under the partition's lock. Entries removed
// meanwhile are marked gone, so they are never returned (their nodes are
// waypoints, counted dead at install). One build runs at a time per
// Index, from a bounded queue; Close stops it.
//
// Once installed the graph is kept up to date by every set and remove
// (p.mu held: an insert links one node). When its dead nodes outnumber
// the live, a rebuild is queued and the old graph serves until the new
// one is ready. A tag that shrinks under half the threshold goes back to
// the exact scan (the hysteresis keeps a tag near the threshold from
// rebuilding on every put and delete).

// maxQueuedBuilds bounds the builds waiting: past it a tag that reaches
// the threshold is not queued, and the next put into it tries again.
const maxQueuedBuilds = 64

// buildWorkers is how many goroutines link one graph's nodes in parallel.
var buildWorkers = runtime.GOMAXPROCS(0)

// build is a graph being built for one tag of one partition. Its fields
// are guarded by the partition's lock.
type build struct {
	tag     string
	dims    int
	pending []*entry // put since the snapshot
	dropped bool     // the tag shrank, or the partition was reloaded
}

type buildJob struct {
	p *partition
	b *build
}

// builder runs the Index's builds, one at a time.
type builder struct {
	jobs   chan buildJob
	stop   chan struct{}
	done   chan struct{}
	closed atomic.Bool
	mu     sync.Mutex
	idle   *sync.Cond
	n      int // queued or running (for WaitBuilds)
}

func (ix *Index) startBuilder() {
	bl := &ix.bld
	bl.jobs = make(chan buildJob, maxQueuedBuilds)
	bl.stop, bl.done = make(chan struct{}), make(chan struct{})
	bl.idle = sync.NewCond(&bl.mu)
	go func() {
		defer close(bl.done)
		for {
			select {
			case <-bl.stop:
				return
			case j := <-bl.jobs:
				ix.runBuild(j.p, j.b)
				bl.mu.Lock()
				bl.n--
				bl.idle.Broadcast()
				bl.mu.Unlock()
			}
		}
	}()
}

// stopBuilder stops the running build and drops the queued ones.
func (ix *Index) stopBuilder() {
	bl := &ix.bld
	if bl.stop == nil || bl.closed.Swap(true) {
		return
	}
	close(bl.stop)
	<-bl.done
	bl.mu.Lock()
	bl.n = 0
	bl.idle.Broadcast()
	bl.mu.Unlock()
}

// WaitBuilds waits until no graph build is queued or running.
func (ix *Index) WaitBuilds() {
	bl := &ix.bld
	bl.mu.Lock()
	for bl.n > 0 {
		bl.idle.Wait()
	}
	bl.mu.Unlock()
}

// queueBuild queues a build of tag's graph in p, unless one is running
// or queued, the builder is stopped or its queue is full. p.mu is held.
func (ix *Index) queueBuild(p *partition, tag string, dims int) {
	bl := &ix.bld
	if p.building[tag] != nil || bl.jobs == nil || bl.closed.Load() {
		return
	}
	b := &build{tag: tag, dims: dims}
	bl.mu.Lock()
	select {
	case bl.jobs <- buildJob{p, b}:
		bl.n++
		p.building[tag] = b // under p.mu: the builder reads it after taking p.mu
	default:
	}
	bl.mu.Unlock()
}

// runBuild builds b's graph and installs it in p.
func (ix *Index) runBuild(p *partition, b *build) {
	// The snapshot, and from it on the puts are pending (under one
	// exclusive hold, so no entry is in both or in neither).
	p.mu.Lock()
	if b.dropped {
		p.mu.Unlock()
		return
	}
	var es []*entry
	for _, e := range p.entries {
		if e.tag == b.tag && len(e.vec) == b.dims {
			es = append(es, e)
		}
	}
	b.pending = nil
	p.mu.Unlock()
	if ix.buildHook != nil {
		ix.buildHook(ix.bld.stop)
	}

	g, ok := buildGraph(es, b.dims, buildWorkers, ix.bld.stop)
	if !ok {
		return
	}
	s := getScratch()
	defer putScratch(s)
	g.connect(s)
	for {
		p.mu.Lock()
		batch := b.pending
		b.pending = nil
		if b.dropped || ix.stopped() {
			p.mu.Unlock()
			return
		}
		if len(batch) <= 256 {
			for _, e := range batch {
				g.insert(e)
			}
			g.dead = g.countDead()
			p.ann[b.tag] = g
			delete(p.building, b.tag)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		// Many came while it was built: link them with no lock held
		// (the graph is still the builder's), then look again.
		for _, e := range batch {
			if !e.gone.Load() {
				g.insert(e)
			}
		}
		g.connect(s)
	}
}

func (ix *Index) stopped() bool { return ix.bld.closed.Load() }

// buildGraph is a graph of es (dims dimensions), its nodes linked by
// workers goroutines in parallel; false if stop closed first.
func buildGraph(es []*entry, dims, workers int, stop <-chan struct{}) (*hnsw, bool) {
	g := newHNSW(dims)
	g.nodes = make([]hnode, 0, len(es)+len(es)/8)
	for _, e := range es {
		g.add(e)
	}
	if len(es) == 0 {
		return g, true
	}
	s := getScratch()
	g.link(0, s) // the entry point
	putScratch(s)
	workers = max(1, min(workers, len(es)/1000))
	if workers > 1 {
		g.par = true
		g.locks = make([]sync.Mutex, len(g.nodes))
	}
	var next atomic.Int64
	next.Store(1)
	var halted atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := getScratch()
			defer putScratch(s)
			for {
				i := next.Add(1) - 1
				if i >= int64(len(g.nodes)) {
					return
				}
				if i%256 == 0 {
					select {
					case <-stop:
						halted.Store(true)
						return
					default:
					}
				}
				g.link(int32(i), s)
			}
		}()
	}
	wg.Wait()
	g.par, g.locks = false, nil
	return g, !halted.Load()
}

// index counts e in its tag and adds it to the tag's graph (or to the
// pending list of the graph being built), queuing a build when the tag
// reaches the threshold. p.mu is held.
func (ix *Index) index(p *partition, e *entry) {
	if p.tagN == nil {
		p.tagN, p.ann, p.building = map[string]int{}, map[string]*hnsw{}, map[string]*build{}
	}
	p.tagN[e.tag]++
	if b := p.building[e.tag]; b != nil && len(e.vec) == b.dims {
		b.pending = append(b.pending, e)
	}
	if g := p.ann[e.tag]; g != nil {
		if len(e.vec) == g.dims {
			g.insert(e)
		}
		return
	}
	if p.tagN[e.tag] >= ix.lim.ANNThreshold {
		ix.queueBuild(p, e.tag, len(e.vec))
	}
}

// unindex uncounts e and marks it gone (never returned by a graph): the
// graph is dropped when the tag falls under half the threshold (a build
// too), rebuilt from the live entries when its dead nodes outnumber
// them. p.mu is held.
func (ix *Index) unindex(p *partition, e *entry) {
	e.gone.Store(true)
	if p.tagN == nil {
		return
	}
	if p.tagN[e.tag]--; p.tagN[e.tag] <= 0 {
		delete(p.tagN, e.tag)
	}
	if b := p.building[e.tag]; b != nil && p.tagN[e.tag] < ix.lim.ANNThreshold/2 {
		b.dropped = true
		delete(p.building, e.tag)
	}
	g := p.ann[e.tag]
	if g == nil {
		return
	}
	if len(e.vec) == g.dims {
		g.dead++
	}
	switch {
	case g.live() < ix.lim.ANNThreshold/2:
		delete(p.ann, e.tag)
	case g.dead > g.live():
		ix.queueBuild(p, e.tag, g.dims)
	}
}

// reindex counts p's tags and queues the builds of the large ones' graphs
// (a partition loaded from the store, not yet shared but with the
// builder, once a build is queued).
func (ix *Index) reindex(p *partition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tagN, p.ann, p.building = map[string]int{}, map[string]*hnsw{}, map[string]*build{}
	for _, e := range p.entries {
		p.tagN[e.tag]++
	}
	for tag, n := range p.tagN {
		if n >= ix.lim.ANNThreshold {
			for _, e := range p.entries {
				if e.tag == tag {
					ix.queueBuild(p, tag, len(e.vec))
					break
				}
			}
		}
	}
}

// dropBuilds marks the builds of p dropped (p was replaced by a reload).
func dropBuilds(p *partition) {
	p.mu.Lock()
	for tag, b := range p.building {
		b.dropped = true
		delete(p.building, tag)
	}
	p.mu.Unlock()
}
