package vecindex

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// hnsw is an approximate nearest-neighbour index (Malkov and Yashunin,
// "Efficient and robust approximate nearest neighbor search using
// Hierarchical Navigable Small World graphs", 2016) over the entries of
// one tag of one partition, built in the background once that tag holds
// Limits.ANNThreshold entries (annindex.go); below it, and until the graph
// is ready, the partition is scanned exactly. No maintained pure-Go HNSW
// module is among those this build may use
// (/work/.library/env/packages/go-partial.tsv), so it is written here and
// tested for recall against the exact scan (hnsw_test.go).
//
// Similarity is the dot product of unit vectors (cosine). A removed
// entry's node stays in the graph as a waypoint (its entry is marked
// gone), never returned; when the dead outnumber the live the graph is
// rebuilt from the live.
//
// Concurrency: once installed in its partition the graph is guarded by
// the partition's lock (searches hold it shared and only read the graph;
// an insert holds it exclusively). While it is being built it belongs to
// its builder, whose workers insert in parallel (par): each node's links
// are then read and written under that node's lock, and the entry point
// under top.
type hnsw struct {
	dims     int
	nodes    []hnode
	entry    int32 // -1: empty
	maxLevel int
	dead     int
	rng      *rand.Rand

	par   bool
	locks []sync.Mutex // per node, used while par
	top   sync.Mutex   // entry and maxLevel, used while par
}

type hnode struct {
	e       *entry
	vec     []float32 // e.vec (one indirection less on the hot path)
	friends [][]int32 // per level, 0 up to the node's level; capacity max+1
	// in counts the level-0 links to the node: pruning never drops a
	// node's last one (an outlier would be unreachable: never found, not
	// even by its own vector).
	in atomic.Int32
}

// Parameters: M neighbours per node on the upper levels, 2M on level 0;
// efConstruction candidates when inserting; efSearch when searching (one
// answer is wanted, the best, so a wide beam is what buys recall). Chosen
// by measured recall and build time (docs/response-cache.md, "The vector
// index"; TestHNSWRecallAgainstExact).
const (
	hnswM   = 16
	hnswM0  = 2 * hnswM
	hnswEfC = 40
	hnswEfS = 200
)

func newHNSW(dims int) *hnsw {
	return &hnsw{dims: dims, entry: -1, rng: rand.New(rand.NewPCG(0x5eed, uint64(dims)))}
}

// live is the number of entries the graph returns.
func (h *hnsw) live() int { return len(h.nodes) - h.dead }

// countDead counts the nodes whose entry is gone (a graph just built:
// entries removed while it was built).
func (h *hnsw) countDead() int {
	n := 0
	for i := range h.nodes {
		if h.nodes[i].e.gone.Load() {
			n++
		}
	}
	return n
}

// randomLevel draws a node's top level: P(level ≥ l) = M^-l.
func (h *hnsw) randomLevel() int {
	l := int(-math.Log(1-h.rng.Float64()) / math.Log(hnswM))
	if l > 16 {
		l = 16
	}
	return l
}

// add appends e's node, unlinked, and returns its id. The links' arrays
// are allocated once, one over their bound (a link is appended, then the
// list pruned).
func (h *hnsw) add(e *entry) int32 {
	level := h.randomLevel()
	fr := make([][]int32, level+1)
	fr[0] = make([]int32, 0, hnswM0+1)
	for l := 1; l <= level; l++ {
		fr[l] = make([]int32, 0, hnswM+1)
	}
	h.nodes = append(h.nodes, hnode{e: e, vec: e.vec, friends: fr})
	return int32(len(h.nodes) - 1)
}

// insert adds e (its vector has h.dims dimensions) and links it. Not
// while par.
func (h *hnsw) insert(e *entry) {
	s := getScratch()
	h.link(h.add(e), s)
	putScratch(s)
}

// entryPoint is the entry node and the top level.
func (h *hnsw) entryPoint() (int32, int) {
	if h.par {
		h.top.Lock()
		defer h.top.Unlock()
	}
	return h.entry, h.maxLevel
}

// link connects node id (added, not yet linked) to the graph. Its
// neighbours are chosen top-down (each level's search starts where the
// one above ended) but the links are written bottom-up: while par, a node
// another worker reaches on an upper level must already have its level-0
// links, or a search descending through it finds a level-0 neighbourhood
// of one node, and the node being inserted is linked to almost nothing
// (TestBackgroundBuildRacesPutsAndDeletes found nodes with two links, so
// never found even by their own vectors). It also means no other worker
// links to id on a level before id's own list there is written, so that
// write never drops a link.
func (h *hnsw) link(id int32, s *scratch) {
	n := &h.nodes[id]
	level := len(n.friends) - 1
	ep, top := h.entryPoint()
	if ep < 0 {
		h.setEntry(id, level, true)
		return
	}
	q := n.vec
	ep = h.descend(q, ep, top, level, s)
	low := min(level, top)
	for len(s.sels) <= low {
		s.sels = append(s.sels, nil)
	}
	for l := low; l >= 0; l-- {
		h.searchLayer(q, ep, hnswEfC, l, s)
		next := s.out[0].id
		// The node itself is never among the results (no link to it
		// exists yet), but it costs nothing to be sure.
		cs := s.out[:0]
		for _, c := range s.out {
			if c.id != id {
				cs = append(cs, c)
			}
		}
		s.sels[l] = h.selectNeighbours(cs, hnswM, s.sels[l][:0], s)
		ep = next
	}
	for l := 0; l <= low; l++ {
		sel := s.sels[l]
		max := hnswM
		if l == 0 {
			max = hnswM0
		}
		h.lock(id)
		n.friends[l] = append(n.friends[l][:0], sel...)
		h.unlock(id)
		if l == 0 {
			for _, m := range sel {
				h.nodes[m].in.Add(1)
			}
		}
		for _, m := range sel {
			h.addLink(m, id, l, max, s)
		}
	}
	if level > top {
		h.setEntry(id, level, false)
	}
}

// setEntry makes id the entry point if its level is above the top (or
// the graph is empty).
func (h *hnsw) setEntry(id int32, level int, empty bool) {
	if h.par {
		h.top.Lock()
		defer h.top.Unlock()
	}
	if (empty && h.entry < 0) || level > h.maxLevel {
		h.entry, h.maxLevel = id, level
	}
}

func (h *hnsw) lock(id int32) {
	if h.par {
		h.locks[id].Lock()
	}
}

func (h *hnsw) unlock(id int32) {
	if h.par {
		h.locks[id].Unlock()
	}
}

// addLink links m to id on level l, pruning m's links back to max by the
// neighbour-selection heuristic, in place.
func (h *hnsw) addLink(m, id int32, l, max int, s *scratch) {
	h.lock(m)
	defer h.unlock(m)
	f := append(h.nodes[m].friends[l], id)
	if l == 0 {
		h.nodes[id].in.Add(1)
	}
	if len(f) > max {
		old := append(s.old[:0], f...)
		s.old = old
		v := h.nodes[m].vec
		cs := s.prune[:0]
		for _, x := range f {
			cs = append(cs, cand{x, dot(v, h.nodes[x].vec)})
		}
		// Most similar first (a few dozen: insertion sort).
		for i := 1; i < len(cs); i++ {
			for j := i; j > 0 && cs[j].sim > cs[j-1].sim; j-- {
				cs[j], cs[j-1] = cs[j-1], cs[j]
			}
		}
		s.prune = cs
		f = h.selectNeighbours(cs, max, f[:0], s)
		if l == 0 {
			h.keepLastLinks(old, f)
		}
	}
	h.nodes[m].friends[l] = f
}

// keepLastLinks fixes a level-0 pruning of old into kept (in place): a
// dropped node whose only incoming link this was takes the place of the
// least similar kept one that has others; then the dropped are
// uncounted.
func (h *hnsw) keepLastLinks(old, kept []int32) {
	has := func(x int32) bool {
		for _, k := range kept {
			if k == x {
				return true
			}
		}
		return false
	}
	for _, x := range old {
		if has(x) || h.nodes[x].in.Load() > 1 {
			continue
		}
		for j := len(kept) - 1; j >= 0; j-- {
			if y := kept[j]; h.nodes[y].in.Load() > 1 {
				kept[j] = x
				break
			}
		}
	}
	for _, x := range old {
		if !has(x) {
			h.nodes[x].in.Add(-1)
		}
	}
}

// friendsOf is node n's links on level l: the node's own slice, or a copy
// taken under its lock while par.
func (h *hnsw) friendsOf(n int32, l int, s *scratch) []int32 {
	if !h.par {
		return h.nodes[n].friends[l]
	}
	h.locks[n].Lock()
	s.nb = append(s.nb[:0], h.nodes[n].friends[l]...)
	h.locks[n].Unlock()
	return s.nb
}

// descend walks from ep on level top down to level bottom+1 and returns
// where to start on level bottom. Not greedily (the paper's one best
// node per level): a beam of efConstruction. On clustered data a greedy
// walk of the sparse upper levels can stop in another cluster, whose
// nodes all score about 0 against the query, and the node inserted from
// there is linked into that cluster, so searches of its own cluster never
// reach it (TestBackgroundBuildRacesPutsAndDeletes found such nodes); the
// upper levels hold a sixteenth of the nodes, so the beam costs little.
func (h *hnsw) descend(q []float32, ep int32, top, bottom int, s *scratch) int32 {
	for l := top; l > bottom; l-- {
		h.searchLayer(q, ep, hnswEfC, l, s)
		ep = s.out[0].id
	}
	return ep
}

// cand is a node and its similarity to the query.
type cand struct {
	id  int32
	sim float32
}

// candHeap is a binary min-heap by sim, without container/heap's
// interface boxing (an allocation a push). The candidates to expand, most
// similar first, are kept in one with their similarity negated.
type candHeap []cand

func (h *candHeap) push(c cand) {
	a := append(*h, c)
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].sim <= a[i].sim {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
	*h = a
}

func (h *candHeap) pop() cand {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(a) {
			break
		}
		if r := l + 1; r < len(a) && a[r].sim < a[l].sim {
			l = r
		}
		if a[i].sim <= a[l].sim {
			break
		}
		a[i], a[l] = a[l], a[i]
		i = l
	}
	*h = a
	return top
}

// scratch is one search's reusable memory: the visited set (a generation
// stamp per node: clearing it is a counter's increment, not a map's
// allocation), the heaps and the buffers of the neighbour selection.
type scratch struct {
	seen  []uint32
	gen   uint32
	cands candHeap // similarity negated: most similar on top
	res   candHeap // least similar on top
	out   []cand
	sels  [][]int32 // per level, while linking
	skip  []int32
	prune []cand
	nb    []int32
	old   []int32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch  { return scratchPool.Get().(*scratch) }
func putScratch(s *scratch) { scratchPool.Put(s) }

// reset starts a new visited set over n nodes.
func (s *scratch) reset(n int) {
	if len(s.seen) < n {
		s.seen = make([]uint32, n+n/4)
		s.gen = 0
	}
	if s.gen++; s.gen == 0 { // wrapped: old stamps could collide
		clear(s.seen)
		s.gen = 1
	}
}

// visit marks n visited and reports whether it already was.
func (s *scratch) visit(n int32) bool {
	if s.seen[n] == s.gen {
		return true
	}
	s.seen[n] = s.gen
	return false
}

// searchLayer leaves in s.out the ef nodes of level l most similar to q
// found from ep, most similar first (dead nodes included: they are
// waypoints).
func (h *hnsw) searchLayer(q []float32, ep int32, ef, l int, s *scratch) {
	s.reset(len(h.nodes))
	s.visit(ep)
	sim := dot(q, h.nodes[ep].vec)
	s.cands, s.res = s.cands[:0], s.res[:0]
	s.cands.push(cand{ep, -sim})
	s.res.push(cand{ep, sim})
	for len(s.cands) > 0 {
		c := s.cands.pop()
		if -c.sim < s.res[0].sim && len(s.res) >= ef {
			break
		}
		for _, n := range h.friendsOf(c.id, l, s) {
			if s.visit(n) {
				continue
			}
			sim := dot(q, h.nodes[n].vec)
			if len(s.res) < ef || sim > s.res[0].sim {
				s.cands.push(cand{n, -sim})
				s.res.push(cand{n, sim})
				if len(s.res) > ef {
					s.res.pop()
				}
			}
		}
	}
	s.out = s.out[:0]
	for len(s.res) > 0 {
		s.out = append(s.out, s.res.pop())
	}
	for i, j := 0, len(s.out)-1; i < j; i, j = i+1, j-1 {
		s.out[i], s.out[j] = s.out[j], s.out[i]
	}
}

// selectNeighbours is the paper's heuristic (its algorithm 4): from cs,
// most similar first, keep a candidate only if it is more similar to the
// query than to every neighbour kept so far, so the links spread over the
// directions around the node (what keeps clustered data navigable); the
// places left are filled with the closest of those skipped. It appends to
// out (never cs's memory) and returns it.
func (h *hnsw) selectNeighbours(cs []cand, m int, out []int32, s *scratch) []int32 {
	s.skip = s.skip[:0]
	for _, c := range cs {
		if len(out) >= m {
			break
		}
		keep := true
		cv := h.nodes[c.id].vec
		for _, r := range out {
			if dot(cv, h.nodes[r].vec) > c.sim {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c.id)
		} else {
			s.skip = append(s.skip, c.id)
		}
	}
	for _, x := range s.skip {
		if len(out) >= m {
			break
		}
		out = append(out, x)
	}
	return out
}

// search returns the live, unexpired entry most similar to q (unit, h.dims
// dimensions), or nil. Not while par.
func (h *hnsw) search(q []float32, now int64) (*entry, float32) {
	if h.entry < 0 {
		return nil, 0
	}
	s := getScratch()
	defer putScratch(s)
	ep := h.descend(q, h.entry, h.maxLevel, 0, s)
	h.searchLayer(q, ep, hnswEfS, 0, s)
	for _, c := range s.out {
		if n := &h.nodes[c.id]; !n.e.gone.Load() && n.e.expires > now {
			return n.e, c.sim
		}
	}
	return nil, 0
}

// connect links to the graph every node that level 0 does not reach from
// the entry point, and returns how many links it added. The pruning
// heuristic can leave an island: a few nodes of a tight cluster linked to
// each other, none of the rest to them, so no search finds them, not even
// with their own vectors (TestBackgroundBuildRacesPutsAndDeletes found
// such islands at 3,000 nodes). Each island gets one link from the
// reachable node most similar to one of its nodes (as Lucene's HNSW
// connects components after a merge). O(nodes × links) plus a search per
// island; the builder runs it with no partition lock held. Not while par.
func (h *hnsw) connect(s *scratch) int {
	if h.entry < 0 {
		return 0
	}
	reach := make([]bool, len(h.nodes))
	var queue []int32
	mark := func(from int32) {
		reach[from] = true
		queue = append(queue[:0], from)
		for len(queue) > 0 {
			x := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, f := range h.nodes[x].friends[0] {
				if !reach[f] {
					reach[f] = true
					queue = append(queue, f)
				}
			}
		}
	}
	mark(h.entry)
	added := 0
	for u := range h.nodes {
		if reach[u] {
			continue
		}
		q := h.nodes[u].vec
		h.searchLayer(q, h.descend(q, h.entry, h.maxLevel, 0, s), hnswEfC, 0, s)
		r := h.entry
		for _, c := range s.out {
			if reach[c.id] {
				r = c.id
				break
			}
		}
		h.nodes[r].friends[0] = append(h.nodes[r].friends[0], int32(u))
		h.nodes[u].in.Add(1)
		added++
		mark(int32(u))
	}
	return added
}
