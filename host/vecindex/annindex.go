package vecindex

// The approximate index of large tags: a partition keeps, for each tag
// with at least Limits.ANNThreshold entries, an HNSW graph of them
// (hnsw.go), kept up to date by every set and remove (p.mu held), so a
// search of that tag walks the graph instead of scanning the partition.
// A tag that shrinks under half the threshold goes back to the exact scan
// (the hysteresis keeps a tag near the threshold from rebuilding on every
// put and delete).

// index counts e in its tag and adds it to the tag's graph, building the
// graph when the tag reaches the threshold.
func (ix *Index) index(p *partition, e *entry) {
	if p.tagN == nil {
		p.tagN, p.ann = map[string]int{}, map[string]*hnsw{}
	}
	p.tagN[e.tag]++
	if g := p.ann[e.tag]; g != nil {
		if len(e.vec) == g.dims {
			g.insert(e)
		}
		return
	}
	if p.tagN[e.tag] >= ix.lim.ANNThreshold {
		p.ann[e.tag] = build(p, e.tag, len(e.vec))
	}
}

// unindex uncounts e and drops it from its tag's graph: the graph is
// dropped when the tag falls under half the threshold, rebuilt from the
// live entries when its dead nodes outnumber them.
func (ix *Index) unindex(p *partition, e *entry) {
	if p.tagN == nil {
		return
	}
	if p.tagN[e.tag]--; p.tagN[e.tag] <= 0 {
		delete(p.tagN, e.tag)
	}
	g := p.ann[e.tag]
	if g == nil {
		return
	}
	g.remove(e)
	switch {
	case g.live() < ix.lim.ANNThreshold/2:
		delete(p.ann, e.tag)
	case g.dead > g.live():
		p.ann[e.tag] = build(p, e.tag, g.dims, e)
	}
}

// build is a graph of the entries of tag in p with dims dimensions but
// skip (one being removed).
func build(p *partition, tag string, dims int, skip ...*entry) *hnsw {
	g := newHNSW(dims)
	for _, e := range p.entries {
		if e.tag == tag && len(e.vec) == dims && (len(skip) == 0 || e != skip[0]) {
			g.insert(e)
		}
	}
	return g
}

// reindex counts p's tags and builds the graphs of the large ones (a
// partition loaded from the store at start).
func (ix *Index) reindex(p *partition) {
	p.tagN, p.ann = map[string]int{}, map[string]*hnsw{}
	for _, e := range p.entries {
		p.tagN[e.tag]++
	}
	for tag, n := range p.tagN {
		if n >= ix.lim.ANNThreshold {
			for _, e := range p.entries {
				if e.tag == tag {
					p.ann[tag] = build(p, tag, len(e.vec))
					break
				}
			}
		}
	}
}
