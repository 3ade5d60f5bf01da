package jsonwalk

import (
	"slices"

	"github.com/tidwall/gjson"
)

// Cuts are byte ranges to remove from a document, applied together in one
// copy (Apply). Removing members one at a time with sjson re-parses and
// copies the whole document for each: a body with many of them costs the
// square of its size (issue 29 measured 89% of the gateway's CPU there on
// a 128 KB agent request). Collect the cuts in one walk, then apply them.
type Cuts struct {
	spans []span
	n     int // bytes removed
}

type span struct{ from, to int }

// Len is how many ranges are to be removed.
func (c *Cuts) Len() int { return len(c.spans) }

// cut removes s[from:to]. Ranges never overlap (Drop's never do).
func (c *Cuts) cut(from, to int) {
	if to > from {
		c.spans = append(c.spans, span{from, to})
		c.n += to - from
	}
}

// Drop cuts the members of object x for which drop is true, with the
// commas that separate them, so that what is left is the same object
// without them: a dropped member followed by a kept one is cut up to that
// one's key; the dropped members after the last kept one are cut from the
// end of that kept member's value, which takes the comma before them.
// drop sees each member once, in document order. The values Drop cuts must
// not hold cuts of their own (the caller does not walk into them).
func (d *Doc) Drop(c *Cuts, x gjson.Result, drop func(key string, v gjson.Result) bool) {
	keptEnd := -1 // just past the last kept value
	pending := -1 // key of the first dropped member since the last kept one
	lastEnd := -1 // just past the last value seen
	d.MembersAt(x, func(key string, at int, v gjson.Result) bool {
		end := v.Index + len(v.Raw)
		if drop(key, v) {
			if pending < 0 {
				pending = at
			}
		} else {
			if pending >= 0 {
				c.cut(pending, at) // the dropped run and its commas
				pending = -1
			}
			keptEnd = end
		}
		lastEnd = end
		return true
	})
	switch {
	case pending < 0:
	case keptEnd >= 0:
		c.cut(keptEnd, lastEnd) // ", dropped…" after the last kept member
	default:
		c.cut(pending, lastEnd) // every member dropped: {}
	}
}

// Apply returns s without the cut ranges (s itself, copied, when there are
// none). Cuts are sorted first: a caller may add them out of document
// order, as long as they do not overlap.
func (c *Cuts) Apply(s string) []byte {
	if !slices.IsSortedFunc(c.spans, func(a, b span) int { return a.from - b.from }) {
		slices.SortFunc(c.spans, func(a, b span) int { return a.from - b.from })
	}
	out := make([]byte, 0, len(s)-c.n)
	at := 0
	for _, sp := range c.spans {
		out = append(out, s[at:sp.from]...)
		at = sp.to
	}
	return append(out, s[at:]...)
}
