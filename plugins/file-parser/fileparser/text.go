package fileparser

import (
	"strings"
	"unicode/utf16"

	"github.com/ledongthuc/pdf"
)

// The library reads the file's objects and streams; the text of a page is
// walked here, because the library's own plain-text walk drops the spaces
// between words (groff and Ghostscript place words with TJ offsets and
// moves, not space characters) and its ToUnicode ranges carry only the
// last byte (a <0000> <FFFF> <0000> identity range, which Go's fpdf
// writes, turns Cyrillic into control characters).

// decoder turns a string operand of a text operator into text.
type decoder interface{ decode(raw string) string }

type libDecoder struct{ enc pdf.TextEncoding }

func (d libDecoder) decode(raw string) string { return d.enc.Decode(raw) }

// cmap is a ToUnicode map: code space ranges by code length, single codes
// and ranges to UTF-16BE.
type cmap struct {
	space  [4][][2]string
	chars  map[string]string
	ranges []cmapRange
}

type cmapRange struct {
	lo, hi string
	dst    pdf.Value // a string (the first code's text) or an array of strings
}

func codeValue(s string) uint32 {
	var v uint32
	for i := 0; i < len(s); i++ {
		v = v<<8 | uint32(s[i])
	}
	return v
}

func utf16BE(s string) string {
	if len(s)%2 != 0 {
		return s
	}
	u := make([]uint16, len(s)/2)
	for i := range u {
		u[i] = uint16(s[2*i])<<8 | uint16(s[2*i+1])
	}
	return string(utf16.Decode(u))
}

func (m *cmap) decode(raw string) string {
	var b strings.Builder
	for len(raw) > 0 {
		n := m.codeLen(raw)
		t, _ := m.lookup(raw[:n])
		b.WriteString(t)
		raw = raw[n:]
	}
	return b.String()
}

// lookup maps one code.
func (m *cmap) lookup(code string) (string, bool) {
	if t, ok := m.chars[code]; ok {
		return utf16BE(t), true
	}
	n := len(code)
	for _, r := range m.ranges {
		if len(r.lo) != n || code < r.lo || code > r.hi {
			continue
		}
		off := codeValue(code) - codeValue(r.lo)
		switch r.dst.Kind() {
		case pdf.String:
			d := r.dst.RawString()
			if len(d) >= 2 {
				// Add the offset to the last UTF-16 unit, carrying
				// across bytes (the whole unit, not its last byte).
				last := uint32(d[len(d)-2])<<8 | uint32(d[len(d)-1])
				last += off
				d = d[:len(d)-2] + string([]byte{byte(last >> 8), byte(last)})
			}
			return utf16BE(d), true
		case pdf.Array:
			if int(off) < r.dst.Len() {
				return utf16BE(r.dst.Index(int(off)).RawString()), true
			}
		}
		return "", false
	}
	return "", false
}

// simple decodes a one-byte (simple) font: its ToUnicode map for the codes
// the map has (producers such as groff map only their ligatures, and write
// the codes with two bytes), its encoding for the rest.
//
// The table is built once per font: the library's Differences decoder
// walks the whole array for every byte, which made a page cost
// milliseconds.
type simple struct{ table [256]string }

func newSimple(cm *cmap, enc decoder) *simple {
	s := &simple{}
	for i := range s.table {
		c := string([]byte{byte(i)})
		if cm != nil {
			if t, ok := cm.lookup(c); ok {
				s.table[i] = t
				continue
			}
			if t, ok := cm.lookup("\x00" + c); ok {
				s.table[i] = t
				continue
			}
		}
		s.table[i] = enc.decode(c)
	}
	return s
}

func (s *simple) decode(raw string) string {
	if len(raw) == 1 {
		return s.table[raw[0]]
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		b.WriteString(s.table[raw[i]])
	}
	return b.String()
}

// codeLen is the length of the code at the start of raw: the shortest
// code space range that holds it, else 1 byte (or 2 when every range is
// two bytes long).
func (m *cmap) codeLen(raw string) int {
	for n := 1; n <= 4 && n <= len(raw); n++ {
		for _, sp := range m.space[n-1] {
			if sp[0] <= raw[:n] && raw[:n] <= sp[1] {
				return n
			}
		}
	}
	if len(m.space[0]) == 0 && len(m.space[1]) > 0 && len(raw) >= 2 {
		return 2
	}
	return 1
}

// readCMap parses a ToUnicode CMap. scratch is a dictionary the CMap's
// "begin … def … end" may write into (the library's interpreter needs one
// for findresource; the font's own dictionary serves, and nothing reads
// the names a CMap defines).
func readCMap(v, scratch pdf.Value) *cmap {
	m := &cmap{chars: map[string]string{}}
	n := 0
	pdf.Interpret(v, func(stk *pdf.Stack, op string) {
		switch op {
		case "begincodespacerange", "beginbfchar", "beginbfrange":
			n = int(stk.Pop().Int64())
		case "endcodespacerange":
			for i := 0; i < n && stk.Len() >= 2; i++ {
				hi, lo := stk.Pop().RawString(), stk.Pop().RawString()
				if len(lo) >= 1 && len(lo) <= 4 && len(lo) == len(hi) {
					m.space[len(lo)-1] = append(m.space[len(lo)-1], [2]string{lo, hi})
				}
			}
		case "endbfchar":
			for i := 0; i < n && stk.Len() >= 2; i++ {
				dst, src := stk.Pop().RawString(), stk.Pop().RawString()
				m.chars[src] = dst
			}
		case "endbfrange":
			for i := 0; i < n && stk.Len() >= 3; i++ {
				dst, hi, lo := stk.Pop(), stk.Pop().RawString(), stk.Pop().RawString()
				m.ranges = append(m.ranges, cmapRange{lo: lo, hi: hi, dst: dst})
			}
		case "findresource":
			stk.Pop()
			stk.Pop()
			stk.Push(scratch)
		default:
			// findresource, begincmap, def and the rest: leave their
			// operands; nothing here reads them.
			for stk.Len() > 64 {
				stk.Pop()
			}
		}
	})
	return m
}

// font is what the walk needs of a font: how to decode its strings, how
// long its codes are, and their widths (thousandths of an em) to know
// where a string ends.
type font struct {
	dec     decoder
	twoByte bool // a Type0 font with 2-byte codes (Identity-H and kin)
	widths  map[int]float64
	dw      float64 // default width; 0: unknown, no gap detection
}

func (f *font) width(code int) float64 {
	if w, ok := f.widths[code]; ok {
		return w
	}
	return f.dw
}

func loadFont(page pdf.Value, name string) *font {
	fv := resources(page).Key("Font").Key(name)
	f := &font{widths: map[int]float64{}}
	var cm *cmap
	if tu := fv.Key("ToUnicode"); tu.Kind() == pdf.Stream {
		cm = readCMap(tu, fv)
	}
	if fv.Key("Subtype").Name() == "Type0" {
		f.twoByte = true
		f.dec = ucs2{}
		if cm != nil {
			f.dec = cm
		}
		d := fv.Key("DescendantFonts").Index(0)
		f.dw = 1000
		if v := d.Key("DW"); v.Kind() == pdf.Integer || v.Kind() == pdf.Real {
			f.dw = v.Float64()
		}
		w := d.Key("W")
		for i := 0; i < w.Len(); {
			first := int(w.Index(i).Int64())
			next := w.Index(i + 1)
			if next.Kind() == pdf.Array {
				for j := 0; j < next.Len(); j++ {
					f.widths[first+j] = next.Index(j).Float64()
				}
				i += 2
				continue
			}
			last := int(next.Int64())
			for c := first; c <= last && c-first < 65536; c++ {
				f.widths[c] = w.Index(i + 2).Float64()
			}
			i += 3
		}
		return f
	}
	lf := pdf.Font{V: fv}
	f.dec = newSimple(cm, libDecoder{lf.Encoder()})
	fc := int(fv.Key("FirstChar").Int64())
	ws := fv.Key("Widths")
	for i := 0; i < ws.Len(); i++ {
		f.widths[fc+i] = ws.Index(i).Float64()
	}
	if ws.Len() > 0 {
		f.dw = 500 // a code outside Widths: MissingWidth, usually near this
	}
	return f
}

// ucs2 decodes a Type0 font without a ToUnicode map as UTF-16BE, the best
// guess for the CJK encodings (UniGB-UCS2-H and kin).
type ucs2 struct{}

func (ucs2) decode(raw string) string { return utf16BE(raw) }

// pageText walks the page's content in stream order, tracking where the
// text is: a line break where it moves to another line, a space where a
// string starts right of where the last one ended by more than about a
// sixth of an em (producers such as Ghostscript place the words of a
// justified line by moves, character spacing and TJ offsets, not space
// characters).
//
// docFonts caches the document's fonts across its pages, keyed by the font
// dictionary as written (its references unresolved): pages share fonts.
func pageText(page pdf.Value, docFonts map[string]*font) string {
	contents := page.Key("Contents")
	if contents.IsNull() {
		return ""
	}
	fonts := map[string]*font{}
	var f *font
	var b strings.Builder
	var (
		fs, tc, tw, tl float64
		th             = 1.0
		scale          = 1.0 // the text matrix's scale
		lineX, lineY   float64
		x, y           float64
		endX, endY     float64
		shown          bool
	)
	sep := func(s string) {
		if b.Len() == 0 {
			return
		}
		last := b.String()[b.Len()-1]
		if last == '\n' || (s == " " && last == ' ') {
			return
		}
		b.WriteString(s)
	}
	show := func(raw string) {
		if f == nil || raw == "" {
			return
		}
		em := fs * scale
		if em <= 0 {
			em = 1
		}
		if shown {
			switch {
			case abs(y-endY) > em/2:
				sep("\n")
			case x-endX > em/6 || endX-x > 2*em:
				sep(" ")
			}
		}
		n := 1
		if f.twoByte {
			n = 2
		}
		known := f.dw > 0
		for i := 0; i+n <= len(raw); i += n {
			code := int(raw[i])
			if n == 2 {
				code = code<<8 | int(raw[i+1])
			}
			if i > 0 && tc*scale > em/6 {
				sep(" ") // letter-spaced: the gap is a word space
			}
			b.WriteString(f.dec.decode(raw[i : i+n]))
			adv := f.width(code)/1000*fs + tc
			if n == 1 && code == ' ' {
				adv += tw
			}
			x += adv * th * scale
		}
		endX, endY, shown = x, y, known
	}
	newLine := func(tx, ty float64) {
		lineX += tx * scale
		lineY += ty * scale
		x, y = lineX, lineY
	}
	pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
		n := stk.Len()
		args := make([]pdf.Value, n)
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		num := func(i int) float64 {
			if i < n {
				return args[i].Float64()
			}
			return 0
		}
		switch op {
		case "Tf":
			if n >= 2 {
				name := args[0].Name()
				if _, ok := fonts[name]; !ok {
					key := resources(page).Key("Font").Key(name).String()
					if docFonts[key] == nil {
						docFonts[key] = loadFont(page, name)
					}
					fonts[name] = docFonts[key]
				}
				f, fs = fonts[name], num(1)
			}
		case "Tc":
			tc = num(0)
		case "Tw":
			tw = num(0)
		case "Tz":
			th = num(0) / 100
		case "TL":
			tl = num(0)
		case "BT":
			lineX, lineY, x, y, scale = 0, 0, 0, 0, 1
		case "Td":
			newLine(num(0), num(1))
		case "TD":
			tl = -num(1)
			newLine(num(0), num(1))
		case "Tm":
			scale = abs(num(0))
			if scale == 0 {
				scale = abs(num(1))
			}
			if scale == 0 {
				scale = 1
			}
			lineX, lineY = num(4), num(5)
			x, y = lineX, lineY
		case "T*":
			newLine(0, -tl)
		case "'", "\"":
			newLine(0, -tl)
			if op == "\"" && n >= 3 {
				tw, tc = num(0), num(1)
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
					} else {
						x -= e.Float64() / 1000 * fs * th * scale
					}
				}
			}
		}
	})
	return b.String()
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
