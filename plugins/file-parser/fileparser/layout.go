package fileparser

import (
	"math"
	"strings"

	"github.com/ledongthuc/pdf"
)

// matrix is a PDF transformation [a b c d e f].
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul is m×n: m applied first, then n.
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func (m matrix) apply(x, y float64) (float64, float64) {
	return x*m[0] + y*m[2] + m[4], x*m[1] + y*m[3] + m[5]
}

// gstate is the part of the graphics state that places text, saved by q
// and restored by Q.
type gstate struct {
	ctm                matrix
	f                  *font
	fs, tc, tw, th, tl float64
	rise               float64
}

// maxSaved bounds the q stack: a stream of a million q operators must not
// hold a million states. Deeper saves are counted, not kept, so that the
// matching Q operators still pair up.
const maxSaved = 256

// Thresholds of the layout, in units of the font size on the page.
const (
	lineGap  = 0.5 // a baseline this far off the last one starts a new line
	spaceGap = 0.15
	paraGap  = 1.9 // a line this far below the last one starts a paragraph
	paraRel  = 1.5 // … or this many times the page's usual line distance
)

// writer lays glyphs out as text: each glyph is placed on the page (device
// space) and compared with where the previous glyph ended, along the
// text's direction: a baseline moved by more than half the font size is a
// new line (a blank line when the gap is much larger than the usual line
// distance), a gap wider than a thin space is a word space. This is what
// a reader sees, whatever operators made the move (Td, TD, T*, ', ",
// Tm, TJ offsets, or cm on the transformation matrix).
type writer struct {
	b        strings.Builder
	have     bool    // a glyph was placed
	ex, ey   float64 // where it ended
	ux, uy   float64 // its direction (unit vector)
	h        float64 // its font size on the page
	pend     int     // separator owed before the next text: 0, sepSpace, sepLine, sepPara
	lineDist float64 // the last ordinary line distance, 0: none yet

	// The runs of text the page is made of, for finding columns
	// (columns.go): a run ends at a line break or a gap wider than any
	// word space.
	segs    []seg
	cut     bool // the next text starts a new run
	slanted bool // a glyph was not upright: no column layout is looked for
}

const (
	sepSpace = 1
	sepLine  = 2
	sepPara  = 3
)

// place records a glyph from (sx, sy) to (ex, ey) of size h and direction
// (ux, uy), and writes its text after the separator its position calls for.
func (w *writer) place(t string, sx, sy, ex, ey, ux, uy, h float64) {
	if w.have {
		dx, dy := sx-w.ex, sy-w.ey
		along := dx*w.ux + dy*w.uy
		perp := dy*w.ux - dx*w.uy // up the page, for upright text
		hh := math.Max(h, w.h)
		switch {
		case math.Abs(perp) > lineGap*hh:
			down := -perp
			sep := sepLine
			if down < 0 || down > paraGap*hh || (w.lineDist > 0 && down > paraRel*w.lineDist) {
				sep = sepPara
			} else {
				w.lineDist = down
			}
			w.pend = max(w.pend, sep)
		case along > spaceGap*hh || along < -3*hh:
			// A gap, or a jump back along the same baseline (a
			// second column drawn after the first): words apart.
			w.pend = max(w.pend, sepSpace)
			if along > runGap*hh || along < 0 {
				w.cut = true
			}
		}
		if math.Abs(perp) > lineGap*hh {
			w.cut = true
		}
	}
	if ux < 0.999 {
		w.slanted = true
	}
	w.have, w.ex, w.ey, w.ux, w.uy, w.h = true, ex, ey, ux, uy, h
	if t == "" {
		return
	}
	if w.pend > 0 && w.b.Len() > 0 {
		switch w.pend {
		case sepSpace:
			if last := w.b.String()[w.b.Len()-1]; last != ' ' && last != '\n' && t[0] != ' ' {
				w.b.WriteByte(' ')
			}
		case sepLine:
			w.b.WriteByte('\n')
		case sepPara:
			w.b.WriteString("\n\n")
		}
	}
	w.pend = 0
	if w.cut || len(w.segs) == 0 {
		w.segs = append(w.segs, seg{start: w.b.Len(), x0: sx, y: sy, h: h})
		w.cut = false
	}
	w.b.WriteString(t)
	g := &w.segs[len(w.segs)-1]
	g.end, g.x1, g.h = w.b.Len(), ex, max(g.h, h)
}

// maxFormDepth bounds form XObjects drawn inside form XObjects.
const maxFormDepth = 8

// pageText walks the page's content in stream order and lays its text out
// (see writer), with the text of the form XObjects it draws. docFonts
// caches the document's fonts across its pages, keyed by the font
// dictionary as written (its references unresolved): pages share fonts.
// budget is what is left of Limits.Decompressed: each form drawn and each
// form's font's ToUnicode map takes its decoded size from it (a form drawn
// a thousand times costs a thousand times), so a page of a million Do
// operators is refused, not walked for ever.
//
// The cost is linear in the content: a glyph is a table lookup and a few
// multiplications, the q stack is bounded, forms nest at most
// maxFormDepth deep.
func pageText(page pdf.Value, docFonts map[string]*font, budget *int, limit int) (string, error) {
	contents := page.Key("Contents")
	if contents.IsNull() {
		return "", nil
	}
	k := &walk{docFonts: docFonts, budget: budget, limit: limit}
	k.run(contents, resources(page), gstate{ctm: identity, th: 1}, 0)
	if text, ok := k.w.columns(); ok {
		return text, k.err
	}
	return k.w.b.String(), k.err
}

type walk struct {
	w        writer
	docFonts map[string]*font
	budget   *int
	limit    int
	err      error
}

// run interprets one content stream (the page's, or a form's) with its
// resources from the graphics state gs.
func (k *walk) run(contents, res pdf.Value, gs gstate, depth int) {
	w := &k.w
	fonts := map[string]*font{}
	var saved []gstate
	extra := 0 // saves past maxSaved
	tm, tlm := identity, identity

	show := func(raw string) {
		f := gs.f
		if f == nil || raw == "" {
			return
		}
		m := tm.mul(gs.ctm)
		// The font size on the page: the length of the text's vertical
		// unit there, and the text's direction.
		h := math.Abs(gs.fs) * math.Hypot(m[2], m[3])
		if h == 0 {
			h = 1
		}
		ux, uy := m[0], m[1]
		if n := math.Hypot(ux, uy); n > 0 {
			ux, uy = ux/n, uy/n
		} else {
			ux, uy = 1, 0
		}
		n := 1
		if f.twoByte {
			n = 2
		}
		for i := 0; i+n <= len(raw); i += n {
			code := int(raw[i])
			if n == 2 {
				code = code<<8 | int(raw[i+1])
			}
			gw := f.width(code) * gs.fs
			adv := gw + gs.tc
			if n == 1 && code == ' ' {
				adv += gs.tw
			}
			adv *= gs.th
			// The glyph ends where its ink does; the character and
			// word spacing after it are a gap (Ghostscript spaces
			// words with Tc inside one string).
			gw *= gs.th
			sx, sy := m.apply(0, gs.rise)
			ex, ey := sx+gw*m[0], sy+gw*m[1]
			w.place(f.glyphText(raw[i:i+n]), sx, sy, ex, ey, ux, uy, h)
			tm[4] += adv * tm[0]
			tm[5] += adv * tm[1]
			m[4] += adv * m[0]
			m[5] += adv * m[1]
		}
	}
	// newLine moves to the start of the next line, offset by (tx, ty)
	// from the start of the current one.
	newLine := func(tx, ty float64) {
		tlm = matrix{1, 0, 0, 1, tx, ty}.mul(tlm)
		tm = tlm
	}
	pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
		n := stk.Len()
		args := make([]pdf.Value, n)
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		if k.err != nil {
			return
		}
		arg := func(i int) float64 {
			if i < n {
				return num(args[i])
			}
			return 0
		}
		mat := func() matrix {
			return matrix{arg(0), arg(1), arg(2), arg(3), arg(4), arg(5)}
		}
		switch op {
		case "q":
			if len(saved) < maxSaved {
				saved = append(saved, gs)
			} else {
				extra++
			}
		case "Q":
			switch {
			case extra > 0:
				extra--
			case len(saved) > 0:
				gs = saved[len(saved)-1]
				saved = saved[:len(saved)-1]
			}
		case "cm":
			if n >= 6 {
				gs.ctm = mat().mul(gs.ctm)
			}
		case "Do":
			if n >= 1 {
				k.form(res.Key("XObject").Key(args[0].Name()), res, gs, depth)
			}
		case "Tf":
			if n >= 2 {
				name := args[0].Name()
				if _, ok := fonts[name]; !ok {
					fv := res.Key("Font").Key(name)
					key := fv.String()
					if k.docFonts[key] == nil {
						if depth > 0 {
							// A form's own fonts were not measured
							// before the walk.
							if *k.budget, k.err = spendContent(fv.Key("ToUnicode"), *k.budget, k.limit, 0); k.err != nil {
								return
							}
						}
						k.docFonts[key] = loadFont(fv)
					}
					fonts[name] = k.docFonts[key]
				}
				gs.f, gs.fs = fonts[name], arg(1)
			}
		case "Tc":
			gs.tc = arg(0)
		case "Tw":
			gs.tw = arg(0)
		case "Tz":
			gs.th = arg(0) / 100
		case "TL":
			gs.tl = arg(0)
		case "Ts":
			gs.rise = arg(0)
		case "BT":
			tm, tlm = identity, identity
		case "Td":
			newLine(arg(0), arg(1))
		case "TD":
			gs.tl = -arg(1)
			newLine(arg(0), arg(1))
		case "Tm":
			if n >= 6 {
				tm = mat()
				tlm = tm
			}
		case "T*":
			newLine(0, -gs.tl)
		case "'", "\"":
			newLine(0, -gs.tl)
			if op == "\"" && n >= 3 {
				gs.tw, gs.tc = arg(0), arg(1)
			}
			if n >= 1 {
				show(args[n-1].RawString())
			}
		case "Tj":
			if n >= 1 {
				show(args[0].RawString())
			}
		case "TJ":
			if n >= 1 {
				v := args[0]
				for i := 0; i < v.Len(); i++ {
					e := v.Index(i)
					if e.Kind() == pdf.String {
						show(e.RawString())
						continue
					}
					// A number moves the next glyph left by
					// thousandths of the font size.
					tx := -num(e) / 1000 * gs.fs * gs.th
					tm[4] += tx * tm[0]
					tm[5] += tx * tm[1]
				}
			}
		}
	})
}

// form walks a form XObject drawn by Do (an image is skipped): its content
// with its own resources (else the drawer's), under its /Matrix, in a
// graphics state the form cannot change for what follows. Headers,
// footers and stamps are often forms, and so is every page some producers
// write.
func (k *walk) form(xo, res pdf.Value, gs gstate, depth int) {
	if xo.Kind() != pdf.Stream || xo.Key("Subtype").Name() != "Form" || depth >= maxFormDepth {
		return
	}
	if *k.budget, k.err = spendContent(xo, *k.budget, k.limit, 0); k.err != nil {
		return
	}
	if m := xo.Key("Matrix"); m.Len() == 6 {
		gs.ctm = matrix{num(m.Index(0)), num(m.Index(1)), num(m.Index(2)), num(m.Index(3)), num(m.Index(4)), num(m.Index(5))}.mul(gs.ctm)
	}
	if r := xo.Key("Resources"); r.Kind() == pdf.Dict {
		res = r
	}
	k.run(xo, res, gs, depth+1)
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
