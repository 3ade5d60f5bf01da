package tokenize

import (
	"strings"
	"sync"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
)

// Why this file exists: tiktoken-go's byte-pair merge rescans the whole
// piece for its lowest-ranked pair after every merge and deletes from the
// middle of a slice, so one regex piece of n bytes costs O(n²) — 200,000
// 'x' (one piece, since the pre-tokenizer keeps a run of letters whole)
// took 42 s of CPU. Counting runs here instead, with the same vocabularies
// and pre-tokenizer patterns, and a merge that keeps the candidate pairs in
// a min-heap keyed by (rank, position): the same merges in the same order as
// tiktoken's (lowest rank first, leftmost on ties), so the same tokens, but
// O(n log n) for a piece — at most n pushes of the initial pairs, two more
// per merge and n-1 merges, each entry popped at most once, so fewer than 6n
// heap operations of O(log n) each. The pre-tokenizer's pieces are found by
// hand-written splitters (split.go) that match the patterns below exactly
// (their tests hold them to regexp2's matches); each is linear: every
// alternative is a greedy run of one character class that gives back at
// most its own run, and every position of the text starts some piece.

// Pre-tokenizer patterns, copied from tiktoken-go's encoding.go (which does
// not export them); TestMatchesTiktoken compares the resulting token ids with
// tiktoken's own on a varied corpus, so a drift in either shows.
var patterns = map[string]string{
	CL100K: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	O200K: strings.Join([]string{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`\p{N}{1,3}`,
		` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
		`\s*[\r\n]+`,
		`\s+(?!\S)`,
		`\s+`,
	}, "|"),
}

// capturingLoader hands tiktoken the embedded vocabularies and keeps the
// rank maps it returns, so the counter here and tiktoken share one map
// instead of holding two copies (≈10-20 MB per vocabulary).
type capturingLoader struct {
	inner tiktoken.BpeLoader
	mu    sync.Mutex
	ranks map[string]map[string]int // by vocabulary name
}

func (c *capturingLoader) LoadTiktokenBpe(file string) (map[string]int, error) {
	name := strings.TrimSuffix(file[strings.LastIndexByte(file, '/')+1:], ".tiktoken")
	c.mu.Lock()
	defer c.mu.Unlock()
	// Loaded once: the counter's map, then tiktoken's when something
	// decodes, are the same map (neither writes to it).
	if r := c.ranks[name]; r != nil {
		return r, nil
	}
	r, err := c.inner.LoadTiktokenBpe(file)
	if err == nil {
		c.ranks[name] = r
	}
	return r, err
}

// rankFile is the URL tiktoken-go asks its loader for, per vocabulary.
func rankFile(name string) string {
	return "https://openaipublic.blob.core.windows.net/encodings/" + name + ".tiktoken"
}

// ranksOf returns the rank map of vocabulary name, loading it once.
func (c *capturingLoader) ranksOf(name string) (map[string]int, error) {
	c.mu.Lock()
	r := c.ranks[name]
	c.mu.Unlock()
	if r != nil {
		return r, nil
	}
	return c.LoadTiktokenBpe(rankFile(name))
}

// bpe is one vocabulary's counter: pre-tokenizer and merge ranks.
type bpe struct {
	ranks map[string]int
	// piece finds the pre-tokenizer's pieces (split.go): the end of the
	// piece of patterns[name] that starts at text[i].
	piece func(text string, i int) int
}

// workStats counts the work of one encoding, for the test that bounds it.
type workStats struct {
	pieces  int // regex matches
	heapOps int // pushes and pops of candidate pairs
	merges  int
}

// encode calls emit for each token of text (with its id) and returns the
// number of tokens. Special-token markers are ordinary text. emit and st may
// be nil.
func (b *bpe) encode(text string, emit func(id int), st *workStats) int {
	if !utf8.ValidString(text) {
		// tiktoken-go cuts its pieces from []rune(text), which turns each
		// invalid byte into U+FFFD; do the same so counts agree.
		text = string([]rune(text))
	}
	var m mergeState
	n := 0
	for i := 0; i < len(text); {
		j := b.piece(text, i)
		n += b.token(text[i:j], &m, emit, st)
		i = j
	}
	return n
}

// token encodes one piece and returns its number of tokens.
func (b *bpe) token(piece string, m *mergeState, emit func(id int), st *workStats) int {
	if st != nil {
		st.pieces++
	}
	if id, ok := b.ranks[piece]; ok {
		if emit != nil {
			emit(id)
		}
		return 1
	}
	return m.merge(piece, b.ranks, emit, st)
}

// mergeState is the scratch space of merge, reused across the pieces of
// one text.
type mergeState struct {
	next, prev []int32 // linked list of part starts: next[i] is the start of the part after the one at i
	rank       []int32 // rank of merging the part at i with its next, or noRank
	heap       []uint64
}

const noRank = int32(-1)

// merge byte-pair-encodes one piece and returns its number of tokens.
// Parts are identified by their start offset; a part ends where next[i]
// starts. Heap entries pack (rank, start) into one uint64 so the heap order
// is tiktoken's merge order; an entry whose part has since merged or whose
// rank changed is stale and skipped when popped.
func (m *mergeState) merge(piece string, ranks map[string]int, emit func(int), st *workStats) int {
	n := len(piece)
	if n == 1 {
		if emit != nil {
			emit(ranks[piece])
		}
		return 1
	}
	m.next = resize(m.next, n)
	m.prev = resize(m.prev, n)
	m.rank = resize(m.rank, n)
	m.heap = m.heap[:0]
	// rankAt is the rank of the part at i joined with its next part.
	rankAt := func(i int32) int32 {
		j := m.next[i]
		if int(j) >= n {
			return noRank
		}
		end := n
		if k := m.next[j]; int(k) < n {
			end = int(k)
		}
		if r, ok := ranks[piece[i:end]]; ok {
			return int32(r)
		}
		return noRank
	}
	for i := range n {
		m.next[i], m.prev[i] = int32(i+1), int32(i-1)
	}
	for i := range int32(n) {
		m.rank[i] = rankAt(i)
		if m.rank[i] != noRank {
			m.push(uint64(m.rank[i])<<32|uint64(i), st)
		}
	}
	parts := n
	for len(m.heap) > 0 {
		top := m.pop(st)
		i, r := int32(top&0xffffffff), int32(top>>32)
		if m.rank[i] != r { // merged away (noRank) or re-ranked since
			continue
		}
		// Join part i with its next part j.
		j := m.next[i]
		m.next[i] = m.next[j]
		if int(m.next[j]) < n {
			m.prev[m.next[j]] = i
		}
		m.rank[j] = noRank
		parts--
		if st != nil {
			st.merges++
		}
		if m.rank[i] = rankAt(i); m.rank[i] != noRank {
			m.push(uint64(m.rank[i])<<32|uint64(i), st)
		}
		if p := m.prev[i]; p >= 0 {
			if m.rank[p] = rankAt(p); m.rank[p] != noRank {
				m.push(uint64(m.rank[p])<<32|uint64(p), st)
			}
		}
	}
	if emit != nil {
		for i := 0; i < n; i = int(m.next[i]) {
			emit(ranks[piece[i:m.next[i]]])
		}
	}
	return parts
}

func resize(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

func (m *mergeState) push(v uint64, st *workStats) {
	if st != nil {
		st.heapOps++
	}
	h := append(m.heap, v)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p] <= v {
			break
		}
		h[i], h[p] = h[p], v
		i = p
	}
	m.heap = h
}

func (m *mergeState) pop(st *workStats) uint64 {
	if st != nil {
		st.heapOps++
	}
	h := m.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		c := l
		if r := l + 1; r < len(h) && h[r] < h[l] {
			c = r
		}
		if h[i] <= h[c] {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	m.heap = h
	return top
}
