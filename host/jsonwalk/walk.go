// Package jsonwalk reads JSON documents that gjson.Valid has accepted,
// without re-checking their syntax. It differs from gjson's ForEach in two
// ways that matter on the hot path:
//
//   - a first pass (Index) records where every object and array ends, so
//     skipping a container is a lookup, not a scan: every byte is read once
//     by the walk, however deep it is nested (gjson's ForEach scans a value
//     again at every level above it);
//   - strings are skipped with strings.IndexByte, and Result.Str is left
//     empty when a string holds escapes; Text unescapes on demand, so a long
//     message content full of \n is neither scanned byte by byte nor copied.
//
// Results the walker makes have Raw, Type, Num, Str (see above) and Index,
// the offset of Raw in the document. Never read Str of a walked value
// directly: use Text.
//
// The request validator (host/validate) and the upstream answer's repair
// (host/wire) walk with it.
package jsonwalk

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Doc is a document and the index of its containers. The zero Doc is
// ready for Reset; a Doc is reused (pooled) with its index's memory.
type Doc struct {
	s string
	// opens are the offsets of the containers ('{', '[') Scan or Index
	// noted, in document order, ends[k] the offset just past the one at
	// opens[k]. Not every container is noted (noteOpen): an empty one is
	// not, nor any past the notes' bound, and end reads those again.
	// Offsets are 32 bits (a document is at most MaxDocument bytes): the
	// index of a body of brackets is half the size.
	opens, ends []int32
	hint        int // where the last lookup found its container
	// Every string Scan read, member keys and values, so the walk finds
	// each one's end by a lookup instead of reading it again (a string is
	// most of a chat body, and a short one, a key, still cost a search
	// for its quote): strs holds their offsets in document order,
	// strEnds the offset just past each, negated when the string holds an
	// escape; strHint is where the walk is. A walk goes forward through
	// the document, so the lookup is nearly always the next note.
	strs, strEnds []int32
	strHint       int
}

// MaxDocument is the largest document Scan and Index take (offsets are 32
// bits); the gateway's body and answer limits are far below it.
const MaxDocument = math.MaxInt32

// minOpens is how many containers are noted whatever the document's size
// (a variable so that the fuzz tests can make the bound bite on the small
// documents they make).
var minOpens = 64

// noteOpen notes a container opening at i and returns its index entry, or
// -1 when the notes are at their bound: one per 16 bytes of document (at
// least minOpens). A real request has one container per 20–100 bytes; a
// body of brackets built to make the index outgrow it ("[0]," repeated:
// 16 bytes of index per 4 of body, for every concurrent request the body
// budget admits) gets an index no larger than itself, and the walk reads
// again the containers it did not note (end), each at most once per level
// it descends.
func (d *Doc) noteOpen(i int) int {
	if len(d.opens) >= max(minOpens, len(d.s)/16) {
		return -1
	}
	d.opens, d.ends = append(d.opens, int32(i)), append(d.ends, int32(len(d.s)))
	return len(d.opens) - 1
}

// longString is the length from which Scan notes a string whatever the
// notes already take: at most one per 64 bytes of document.
const longString = 64

// Reset makes d the walker of s, with an empty index.
func (d *Doc) Reset(s string) {
	d.s, d.opens, d.ends, d.hint = s, d.opens[:0], d.ends[:0], 0
	d.strs, d.strEnds, d.strHint = d.strs[:0], d.strEnds[:0], 0
}

// noteString records the string s[i:j] (Scan). The notes of short
// strings are bounded by the document's size (one per 16 bytes): past
// that — a body of `"",` repeated, built to make the index outgrow it —
// only strings of longString bytes or more are noted, and the walk finds
// the others' ends again.
func (d *Doc) noteString(i, j int, esc bool) {
	if j-i < longString && len(d.strs) >= len(d.s)/16 {
		return
	}
	if esc {
		j = -j
	}
	d.strs, d.strEnds = append(d.strs, int32(i)), append(d.strEnds, int32(j))
}

// strAt is the end of the string Scan noted at p and whether it
// holds no escape; ok is false when none is noted there (p is not a
// string's start, or the index was built by Index). A walk goes forward,
// so the next noted string is tried first, a point between the last one
// and that one is known absent without a search, and anything else is
// found by galloping from there (near).
func (d *Doc) strAt(p int) (end int, plain, ok bool) {
	k, n := d.strHint, len(d.strs)
	switch {
	case k < n && int(d.strs[k]) == p:
	case (k == n || p < int(d.strs[k])) && (k == 0 || int(d.strs[k-1]) < p):
		return 0, false, false
	default:
		var found bool
		if k, found = near(d.strs, k, p); !found {
			d.strHint = k
			return 0, false, false
		}
	}
	d.strHint = k + 1
	if e := int(d.strEnds[k]); e < 0 {
		return -e, false, true
	}
	return int(d.strEnds[k]), true, true
}

// Containers is how many containers the index can hold without growing
// (a pool keeps one huge body from pinning its index forever with it).
func (d *Doc) Containers() int { return max(cap(d.opens), cap(d.strs)) }

// Root is the document's top-level value; call it after Index (and the
// syntax check) succeeded. A document of only whitespace has none.
func (d *Doc) Root() gjson.Result {
	i := WS(d.s, 0)
	if i == len(d.s) {
		return gjson.Result{}
	}
	r, _ := d.ValueAt(i)
	return r
}

// MaxNesting is the deepest nesting Valid accepts, encoding/json's bound.
// gjson's syntax check recurses once per level: ten million "[" from an
// upstream or a module's output overflowed the goroutine's stack, which is
// a fatal error, not a panic — the whole gateway. At this bound the check
// needs about a megabyte of stack.
const MaxNesting = 10000

// Valid reports whether s is valid JSON nested at most MaxNesting deep:
// gjson.Valid, safe on any input. The host checks what an upstream, a
// module or a client sent with it, never with gjson.Valid directly.
func Valid(s string) bool { return withinDepth(s, MaxNesting) && gjson.Valid(s) }

// ValidBytes is Valid of b, without a copy.
func ValidBytes(b []byte) bool { return Valid(String(b)) }

// withinDepth reports whether the containers of s nest at most max deep,
// tokenizing strings as Index does (so up to gjson's first syntax error,
// the depth it would recurse to), iteratively.
func withinDepth(s string, max int) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			i = strEnd(s, i) - 1
		case '{', '[':
			if depth++; depth > max {
				return false
			}
		case '}', ']':
			if depth == 0 {
				return true // invalid JSON, which gjson stops at
			}
			depth--
		}
	}
	return true
}

// Index records the containers of d.s and reports false when they nest
// deeper than max (or d.s is longer than MaxDocument). It runs before the
// syntax check, on any input, and tokenizes strings as a JSON parser does,
// so up to a parser's first error both see the same depth. On invalid
// input the index is meaningless (and unused).
func (d *Doc) Index(max int) bool {
	s := d.s
	if len(s) > MaxDocument {
		return false
	}
	// The open containers' stack lives on the goroutine's stack up to 128
	// levels (real documents), on the heap beyond. An entry is the
	// container's index entry, or -1 when it was not noted.
	var small [128]int
	stack := small[:0]
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			i = strEnd(s, i) - 1
		case '{', '[':
			if len(stack) >= max {
				return false
			}
			if j, empty := opened(s, i); empty {
				i = j // not noted, as in Scan
				continue
			}
			stack = append(stack, d.noteOpen(i))
		case '}', ']':
			if len(stack) == 0 {
				return true // invalid JSON; the syntax check says so
			}
			if k := stack[len(stack)-1]; k >= 0 {
				d.ends[k] = int32(i + 1)
			}
			stack = stack[:len(stack)-1]
		}
	}
	return true
}

// end returns the offset just past the container that opens at p: from
// the index, or by reading the container when it was not noted.
func (d *Doc) end(p int) int {
	if h := d.hint; h < len(d.opens) && int(d.opens[h]) == p {
		return int(d.ends[h])
	}
	if h := d.hint + 1; h < len(d.opens) && int(d.opens[h]) == p {
		d.hint = h
		return int(d.ends[h])
	}
	// An empty container is never noted: its end is a whitespace away.
	if j, empty := opened(d.s, p); empty {
		return j + 1
	}
	h, found := near(d.opens, d.hint, p)
	if !found {
		return d.read(p)
	}
	d.hint = h
	return int(d.ends[h])
}

// opened looks past the container opening at s[i] ('{' or '['): j is
// where its first value or its closing bracket stands (after whitespace),
// and empty says it is the closing bracket. Scan, Index and end agree
// through it on which containers are empty, and so never noted.
func opened(s string, i int) (j int, empty bool) {
	j = WS(s, i+1)
	return j, j < len(s) && s[j] == s[i]+2 // '{'+2 is '}', '['+2 is ']'
}

// read finds the end of the container at p, which the index does not
// hold, by reading it (on a document Scan found valid).
func (d *Doc) read(p int) int {
	s, depth := d.s, 0
	for i := p; i < len(s); i++ {
		switch s[i] {
		case '"':
			i = strEnd(s, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return len(s)
}

// near is slices.BinarySearch(xs, p) for a p near xs[k]: it gallops from
// k (1, 2, 4, … entries) to bracket p, then searches the bracket, so a
// walk that steps back into a container it skipped, or over one, pays
// the log of the distance, not of the document's size.
func near(xs []int32, k, p int) (int, bool) {
	if p > MaxDocument {
		return len(xs), false
	}
	q := int32(p)
	lo, hi := 0, len(xs)
	if k < len(xs) && xs[k] < q {
		lo = k + 1
		for step := 1; lo+step-1 < hi; step *= 2 {
			if xs[lo+step-1] >= q {
				hi = lo + step
				break
			}
			lo += step
		}
	} else {
		hi = min(k+1, len(xs)) // xs[k] >= q
		for step := 1; hi-step >= lo; step *= 2 {
			if xs[hi-step] < q {
				lo = hi - step + 1
				break
			}
			hi -= step
		}
	}
	// xs[hi] >= q: it may be q.
	i, found := slices.BinarySearch(xs[lo:min(hi+1, len(xs))], q)
	return lo + i, found
}

// String views body as a string without copying. Nothing here keeps
// the string (or a Result aliasing it) past the call.
func String(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Text is the unescaped content of a walked string value.
func Text(x gjson.Result) string {
	if x.Str == "" && len(x.Raw) > 2 && x.Type == gjson.String {
		return gjson.Parse(x.Raw).Str
	}
	return x.Str
}

// WS skips JSON whitespace from s[i].
func WS(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// strEnd returns the offset just past the string that opens at s[i] ('"').
// IndexByte beats a byte loop even on 4-byte strings.
func strEnd(s string, i int) int {
	i++
	start := i
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s) // unterminated: only on invalid input
		}
		k := i + j
		// The quote is escaped if an odd run of backslashes precedes it.
		// The run cannot reach back past start: s[start-1] is a quote.
		n := 0
		for m := k - 1; m >= start && s[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return k + 1
		}
		i, start = k+1, k+1
	}
}

// ValueAt reads the value that starts at d.s[i] and returns it and the
// offset just past it.
func (d *Doc) ValueAt(i int) (gjson.Result, int) {
	var r gjson.Result
	j := d.valueInto(&r, i)
	return r, j
}

// valueInto is ValueAt that fills *r (zero on entry) in place: a Result
// is 80 bytes, and Pick, which reads every member of every message,
// copied each one twice on its way to its slot.
func (d *Doc) valueInto(r *gjson.Result, i int) int {
	s := d.s
	var j int
	r.Index = i
	switch c := s[i]; c {
	case '"':
		r.Type = gjson.String
		if e, plain, ok := d.strAt(i); ok {
			if j = e; plain {
				r.Str = s[i+1 : j-1]
			}
			break
		}
		j = strEnd(s, i)
		if body := s[i+1 : j-1]; strings.IndexByte(body, '\\') < 0 {
			r.Str = body
		}
	case '{', '[':
		j = d.end(i)
		r.Type = gjson.JSON
	default:
		j = i + 1
		for j < len(s) {
			if c := s[j]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			j++
		}
		switch c {
		case 't':
			r.Type = gjson.True
		case 'f':
			r.Type = gjson.False
		case 'n':
			r.Type = gjson.Null
		default:
			r.Type = gjson.Number
			r.Num, _ = strconv.ParseFloat(s[i:j], 64) // ±Inf when out of range
		}
	}
	r.Raw = s[i:j]
	return j
}

// Members calls fn with each member of object x, in document order, until
// fn returns false.
func (d *Doc) Members(x gjson.Result, fn func(key string, v gjson.Result) bool) {
	d.MembersAt(x, func(key string, _ int, v gjson.Result) bool { return fn(key, v) })
}

// MembersAt is Members that also gives the offset of each member's key
// (its opening quote): where the member starts, for an edit that removes
// it (Drop).
func (d *Doc) MembersAt(x gjson.Result, fn func(key string, at int, v gjson.Result) bool) {
	for i, stop := d.firstMember(x); i < stop; {
		at := i
		key, vi := d.keyAt(i)
		v, j := d.ValueAt(vi)
		if !fn(key, at, v) {
			return
		}
		i = d.nextMember(j, stop)
	}
}

// firstMember is where the first member of object x starts (its key's
// quote) and the offset of x's closing brace; i >= stop when x has none.
func (d *Doc) firstMember(x gjson.Result) (i, stop int) {
	s, stop := d.s, x.Index+len(x.Raw)-1
	i = WS(s, x.Index+1)
	if i >= stop || s[i] != '"' {
		return stop, stop
	}
	return i, stop
}

// keyAt reads the key of the member at d.s[i] (its quote) and returns
// it, unescaped, and where the member's value starts.
func (d *Doc) keyAt(i int) (key string, value int) {
	s := d.s
	e, plain, ok := d.strAt(i)
	if !ok {
		e = strEnd(s, i)
		plain = strings.IndexByte(s[i+1:e-1], '\\') < 0
	}
	if key = s[i+1 : e-1]; !plain {
		key = gjson.Parse(s[i:e]).Str
	}
	return key, WS(s, WS(s, e)+1) // past the colon
}

// nextMember is where the member after the value that ended at j starts,
// or stop when that was the last.
func (d *Doc) nextMember(j, stop int) int {
	s := d.s
	i := WS(s, j)
	if i < stop && s[i] == ',' {
		i = WS(s, i+1)
	}
	if i >= stop || s[i] != '"' {
		return stop
	}
	return i
}

// Elements calls fn with each element of array x until fn returns false.
func (d *Doc) Elements(x gjson.Result, fn func(i int, v gjson.Result) bool) {
	s, stop := d.s, x.Index+len(x.Raw)-1
	i := WS(s, x.Index+1)
	for n := 0; i < stop; n++ {
		v, j := d.ValueAt(i)
		if !fn(n, v) {
			return
		}
		i = WS(s, j)
		if i < stop && s[i] == ',' {
			i = WS(s, i+1)
		}
	}
}

// Count is the number of elements of array x or members of object x.
func (d *Doc) Count(x gjson.Result) int {
	n := 0
	if x.IsObject() {
		d.Members(x, func(string, gjson.Result) bool { n++; return true })
	} else if x.IsArray() {
		d.Elements(x, func(int, gjson.Result) bool { n++; return true })
	}
	return n
}

// Get is member key of object x (its first occurrence), or a Result that
// does not exist.
func (d *Doc) Get(x gjson.Result, key string) gjson.Result {
	var out gjson.Result
	if x.IsObject() {
		d.Members(x, func(k string, v gjson.Result) bool {
			if k == key {
				out = v
				return false
			}
			return true
		})
	}
	return out
}

// Pick reads the members keys of object x in one walk: out[i] is member
// keys[i], or a Result that does not exist. It returns a key of keys that
// occurs twice, or "". A loop of its own, not Members with a callback:
// it runs for every message of a body.
func (d *Doc) Pick(x gjson.Result, keys []string, out []gjson.Result) (dup string) {
	if !x.IsObject() {
		return ""
	}
	for i, stop := d.firstMember(x); i < stop; {
		k, vi := d.keyAt(i)
		want := -1
		for n, key := range keys {
			if k == key {
				want = n
				break
			}
		}
		var j int
		if want >= 0 {
			if out[want].Exists() {
				return k
			}
			j = d.valueInto(&out[want], vi) // out[want] does not exist: zero
		} else {
			j = d.skip(vi)
		}
		i = d.nextMember(j, stop)
	}
	return ""
}

// skip returns the offset just past the value at d.s[i], as ValueAt
// does, without making its Result.
func (d *Doc) skip(i int) int {
	switch d.s[i] {
	case '"':
		if e, _, ok := d.strAt(i); ok {
			return e
		}
		return strEnd(d.s, i)
	case '{', '[':
		return d.end(i)
	}
	_, j := d.ValueAt(i)
	return j
}

// Borrow is a pooled Doc reset to s, with its index's memory from an
// earlier document; give it back with Release.
func Borrow(s string) *Doc {
	d := docs.Get().(*Doc)
	d.Reset(s)
	return d
}

// Release returns a Borrowed Doc to the pool; d must not be used after. One
// whose index grew past maxPooledContainers is let go, so that one huge
// document does not pin its index forever.
func (d *Doc) Release() {
	d.Reset("")
	if d.Containers() <= maxPooledContainers {
		docs.Put(d)
	}
}

var docs = sync.Pool{New: func() any { return new(Doc) }}

const maxPooledContainers = 1 << 16
