package fileparser

import (
	"math"
	"slices"
	"sort"
	"strings"
)

// Two-column pages. The writer lays text out in stream order, which is
// reading order for most producers; but a generator that draws a page by
// baseline, across both columns, interleaves the columns line by line
// ("left line one right line one left line two…"). So each page's text is
// also kept as runs (a line, or the part of one before a gap wider than
// any word space) with their positions, and when the runs show two columns
// of prose side by side, the page is written column by column instead,
// as a reader (and pdftotext's reading order) reads it.
//
// What counts as two columns (a table is not): a vertical gutter in the
// middle 40% of the text's width that no more than a few runs cross, with
// at least minColLines runs on each side, side by side (their heights
// overlap), and prose on both sides: a run on each side typically fills
// most of its column's width and holds several words. A table's cells are
// short runs in wide columns, so a table keeps its rows. Runs that cross
// the gutter (a title or a footer across the page) cut the page into
// bands, each read left column, right column, then the crossing run.

// seg is one run of text on the page: b[start:end] of the writer, drawn
// from x0 to x1 on the baseline y (device space), at font size h.
type seg struct {
	start, end int
	x0, x1, y  float64
	h          float64
}

const (
	runGap      = 1.0 // a gap this many font sizes wide ends a run (no word space is this wide)
	minColLines = 6   // runs a column needs on each side
	colFill     = 0.6 // a column's typical run spans this much of its width
	colWords    = 3   // … and holds this many words
	maxCrossing = 4   // runs that may cross the gutter (titles, footers)
)

// columns returns the page's text read column by column when it is laid
// out in two columns, and false when it is not (the stream-order text
// stands).
func (w *writer) columns() (string, bool) {
	if w.slanted || len(w.segs) < 2*minColLines {
		return "", false
	}
	text := w.b.String()
	left, right := math.Inf(1), math.Inf(-1)
	for _, s := range w.segs {
		left, right = min(left, s.x0), max(right, s.x1)
	}
	width := right - left
	if width <= 0 {
		return "", false
	}
	// The gutter: the stretch of the middle of the page crossed by the
	// fewest runs; of equal stretches, the widest.
	// Crossings are counted at steps+1 points, each run adding one to
	// the points strictly inside it (a difference array: linear in the
	// runs, however many a page has).
	lo, hi := left+0.3*width, left+0.7*width
	const steps = 200
	at := func(i int) float64 { return lo + (hi-lo)*float64(i)/steps }
	var diff [steps + 2]int
	for _, s := range w.segs {
		// The first point after x0 and the last before x1.
		a := int(math.Floor((s.x0-lo)/(hi-lo)*steps)) + 1
		b := int(math.Ceil((s.x1-lo)/(hi-lo)*steps)) - 1
		a, b = max(a, 0), min(b, steps)
		if a <= b {
			diff[a]++
			diff[b+1]--
		}
	}
	best, bestAt, bestRun := len(w.segs)+1, 0.0, 0
	run, runCount, runStart := 0, -1, 0.0
	n := 0
	for i := 0; i <= steps; i++ {
		x := at(i)
		n += diff[i]
		if n == runCount {
			run++
		} else {
			run, runCount, runStart = 1, n, x
		}
		if n < best || (n == best && run > bestRun) {
			best, bestRun = n, run
			bestAt = (runStart + x) / 2
		}
	}
	if best > maxCrossing {
		return "", false
	}
	g := bestAt
	var l, r, cross []seg
	for _, s := range w.segs {
		switch {
		case s.x1 <= g:
			l = append(l, s)
		case s.x0 >= g:
			r = append(r, s)
		default:
			cross = append(cross, s)
		}
	}
	if len(l) < minColLines || len(r) < minColLines {
		return "", false
	}
	// Prose on both sides: runs that fill their column and hold words.
	prose := func(ss []seg, from, to float64) bool {
		fills, words := make([]float64, len(ss)), make([]float64, len(ss))
		for i, s := range ss {
			fills[i] = (s.x1 - s.x0) / (to - from)
			words[i] = float64(len(strings.Fields(text[s.start:s.end])))
		}
		return median(fills) >= colFill && median(words) >= colWords
	}
	rightEdge := 0.0
	for _, s := range l {
		rightEdge = max(rightEdge, s.x1)
	}
	leftEdge := math.Inf(1)
	for _, s := range r {
		leftEdge = min(leftEdge, s.x0)
	}
	if !prose(l, left, rightEdge) || !prose(r, leftEdge, right) {
		return "", false
	}
	// Side by side: most runs of the shorter column lie within the
	// height of the other.
	span := func(ss []seg) (float64, float64) {
		a, b := math.Inf(1), math.Inf(-1)
		for _, s := range ss {
			a, b = min(a, s.y), max(b, s.y)
		}
		return a, b
	}
	la, lb := span(l)
	ra, rb := span(r)
	short, oa, ob := l, ra, rb
	if len(r) < len(l) {
		short, oa, ob = r, la, lb
	}
	inside := 0
	for _, s := range short {
		if s.y >= oa-s.h && s.y <= ob+s.h {
			inside++
		}
	}
	if inside*2 < len(short) {
		return "", false
	}

	// Read band by band, top to bottom: the runs above each crossing
	// run, left column then right, then the crossing run.
	sort.Slice(cross, func(i, j int) bool { return cross[i].y > cross[j].y })
	var out strings.Builder
	top := math.Inf(1)
	emit := func(ss []seg, above, below float64) {
		var band []seg
		for _, s := range ss {
			if s.y < above && s.y >= below {
				band = append(band, s)
			}
		}
		writeRuns(&out, text, band)
	}
	for _, c := range cross {
		emit(l, top, c.y)
		emit(r, top, c.y)
		writeRuns(&out, text, []seg{c})
		top = c.y
	}
	emit(l, top, math.Inf(-1))
	emit(r, top, math.Inf(-1))
	return out.String(), true
}

// writeRuns writes one column's runs of a band top to bottom, left to
// right along a line: runs on one baseline are words apart, the next
// baseline a new line, a gap clearly wider than the column's usual line
// distance a paragraph.
func writeRuns(out *strings.Builder, text string, ss []seg) {
	if len(ss) == 0 {
		return
	}
	ss = slices.Clone(ss)
	sort.SliceStable(ss, func(i, j int) bool {
		if math.Abs(ss[i].y-ss[j].y) > lineGap*max(ss[i].h, ss[j].h) {
			return ss[i].y > ss[j].y
		}
		return ss[i].x0 < ss[j].x0
	})
	var dists []float64
	for i := 1; i < len(ss); i++ {
		if d := ss[i-1].y - ss[i].y; d > lineGap*max(ss[i].h, ss[i-1].h) {
			dists = append(dists, d)
		}
	}
	usual := median(dists)
	if out.Len() > 0 {
		out.WriteString("\n\n")
	}
	for i, s := range ss {
		if i > 0 {
			p := ss[i-1]
			hh := max(s.h, p.h)
			d := p.y - s.y
			switch {
			case d <= lineGap*hh:
				out.WriteByte(' ')
			case d > paraGap*hh || (usual > 0 && d > paraRel*usual):
				out.WriteString("\n\n")
			default:
				out.WriteByte('\n')
			}
		}
		out.WriteString(strings.TrimSpace(text[s.start:s.end]))
	}
}

// median of v (0 when empty); v is reordered.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[len(v)/2]
}
