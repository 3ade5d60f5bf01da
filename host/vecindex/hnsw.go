package vecindex

import (
	"container/heap"
	"math"
	"math/rand/v2"
)

// hnsw is an approximate nearest-neighbour index (Malkov and Yashunin,
// "Efficient and robust approximate nearest neighbor search using
// Hierarchical Navigable Small World graphs", 2016) over the entries of
// one tag of one partition, built once that tag holds Limits.ANNThreshold
// entries; below it the partition is scanned exactly. No maintained pure-Go
// HNSW module is among those this build may use
// (/work/.library/env/packages/go-partial.tsv), so it is written here and
// tested for recall against the exact scan (hnsw_test.go).
//
// Similarity is the dot product of unit vectors (cosine). A removed
// entry's node stays in the graph as a waypoint (dead), never returned;
// when the dead outnumber the live the graph is rebuilt from the live.
// It is not safe for concurrent use: the partition's lock guards it
// (searches hold it shared and only read the graph).
type hnsw struct {
	dims     int
	nodes    []hnode
	entry    int32 // -1: empty
	maxLevel int
	dead     int
	rng      *rand.Rand
}

type hnode struct {
	e       *entry
	friends [][]int32 // per level, 0 up to the node's level
	dead    bool
}

// Parameters: M neighbours per node on the upper levels, 2M on level 0;
// efConstruction candidates when inserting; efSearch when searching (one
// answer is wanted, the best, so a wide beam is what buys recall).
const (
	hnswM   = 16
	hnswM0  = 2 * hnswM
	hnswEfC = 64
	hnswEfS = 96
)

func newHNSW(dims int) *hnsw {
	return &hnsw{dims: dims, entry: -1, rng: rand.New(rand.NewPCG(0x5eed, uint64(dims)))}
}

// live is the number of entries the graph returns.
func (h *hnsw) live() int { return len(h.nodes) - h.dead }

func (h *hnsw) sim(q []float32, n int32) float32 { return dot(q, h.nodes[n].e.vec) }

// randomLevel draws a node's top level: P(level ≥ l) = M^-l.
func (h *hnsw) randomLevel() int {
	l := int(-math.Log(1-h.rng.Float64()) / math.Log(hnswM))
	if l > 16 {
		l = 16
	}
	return l
}

// insert adds e (its vector has h.dims dimensions) and records its node
// in e.node.
func (h *hnsw) insert(e *entry) {
	id := int32(len(h.nodes))
	level := h.randomLevel()
	h.nodes = append(h.nodes, hnode{e: e, friends: make([][]int32, level+1)})
	e.node = id
	if h.entry < 0 {
		h.entry, h.maxLevel = id, level
		return
	}
	q := e.vec
	ep := h.entry
	for l := h.maxLevel; l > level; l-- {
		ep = h.greedy(q, ep, l)
	}
	for l := min(level, h.maxLevel); l >= 0; l-- {
		cands := h.searchLayer(q, ep, hnswEfC, l)
		max := hnswM
		if l == 0 {
			max = hnswM0
		}
		nb := h.selectNeighbours(cands, hnswM)
		h.nodes[id].friends[l] = nb
		for _, n := range nb {
			f := append(h.nodes[n].friends[l], id)
			if len(f) > max {
				f = h.prune(n, f, max)
			}
			h.nodes[n].friends[l] = f
		}
		ep = cands[0].id
	}
	if level > h.maxLevel {
		h.entry, h.maxLevel = id, level
	}
}

// remove marks e's node dead: it is still walked through, never returned.
func (h *hnsw) remove(e *entry) {
	if e.node < 0 || int(e.node) >= len(h.nodes) || h.nodes[e.node].e != e {
		return
	}
	if !h.nodes[e.node].dead {
		h.nodes[e.node].dead = true
		h.dead++
	}
	e.node = -1
}

// greedy walks level l from ep to the node most similar to q.
func (h *hnsw) greedy(q []float32, ep int32, l int) int32 {
	best := h.sim(q, ep)
	for changed := true; changed; {
		changed = false
		for _, n := range h.nodes[ep].friends[l] {
			if s := h.sim(q, n); s > best {
				best, ep, changed = s, n, true
			}
		}
	}
	return ep
}

// cand is a node and its similarity to the query.
type cand struct {
	id  int32
	sim float32
}

// maxHeap pops the most similar first (the candidates to expand);
// minHeap the least similar (the worst of the results, to drop).
type maxHeap []cand
type minHeap []cand

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i].sim > h[j].sim }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(cand)) }
func (h *maxHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }
func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i].sim < h[j].sim }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(cand)) }
func (h *minHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

// searchLayer is the ef nodes of level l most similar to q found from ep,
// most similar first (dead nodes included: they are waypoints).
func (h *hnsw) searchLayer(q []float32, ep int32, ef, l int) []cand {
	visited := map[int32]struct{}{ep: {}}
	s := h.sim(q, ep)
	cands := &maxHeap{{ep, s}}
	res := &minHeap{{ep, s}}
	for cands.Len() > 0 {
		c := heap.Pop(cands).(cand)
		if c.sim < (*res)[0].sim && res.Len() >= ef {
			break
		}
		for _, n := range h.nodes[c.id].friends[l] {
			if _, ok := visited[n]; ok {
				continue
			}
			visited[n] = struct{}{}
			s := h.sim(q, n)
			if res.Len() < ef || s > (*res)[0].sim {
				heap.Push(cands, cand{n, s})
				heap.Push(res, cand{n, s})
				if res.Len() > ef {
					heap.Pop(res)
				}
			}
		}
	}
	out := make([]cand, res.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(res).(cand)
	}
	return out
}

// selectNeighbours is the paper's heuristic (its algorithm 4): from cs,
// most similar first, keep a candidate only if it is more similar to the
// query than to every neighbour kept so far, so the links spread over the
// directions around the node (what keeps clustered data navigable); the
// places left are filled with the closest of those skipped.
func (h *hnsw) selectNeighbours(cs []cand, m int) []int32 {
	out := make([]int32, 0, m)
	var skipped []int32
	for _, c := range cs {
		if len(out) >= m {
			break
		}
		keep := true
		for _, r := range out {
			if dot(h.nodes[c.id].e.vec, h.nodes[r].e.vec) > c.sim {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c.id)
		} else {
			skipped = append(skipped, c.id)
		}
	}
	for _, s := range skipped {
		if len(out) >= m {
			break
		}
		out = append(out, s)
	}
	return out
}

// prune cuts node n's links f to max by the same heuristic.
func (h *hnsw) prune(n int32, f []int32, max int) []int32 {
	v := h.nodes[n].e.vec
	cs := make([]cand, len(f))
	for i, x := range f {
		cs[i] = cand{x, dot(v, h.nodes[x].e.vec)}
	}
	// Most similar first (a few dozen: insertion sort).
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].sim > cs[j-1].sim; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
	return h.selectNeighbours(cs, max)
}

// search returns the live, unexpired entry most similar to q (unit, h.dims
// dimensions), or nil.
func (h *hnsw) search(q []float32, now int64) (*entry, float32) {
	if h.entry < 0 {
		return nil, 0
	}
	ep := h.entry
	for l := h.maxLevel; l > 0; l-- {
		ep = h.greedy(q, ep, l)
	}
	for _, c := range h.searchLayer(q, ep, hnswEfS, 0) {
		if n := &h.nodes[c.id]; !n.dead && n.e.expires > now {
			return n.e, c.sim
		}
	}
	return nil, 0
}
