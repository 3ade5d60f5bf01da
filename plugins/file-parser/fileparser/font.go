package fileparser

import (
	"strconv"
	"strings"

	"github.com/ledongthuc/pdf"
)

// font is what the walk needs of a font: the text of each code, how long
// its codes are, and their widths, to know where each glyph ends.
type font struct {
	twoByte bool            // a Type0 font with 2-byte codes (Identity-H and kin)
	dec     decoder         // a Type0 font's codes to text
	widths  map[int]float64 // a Type0 font's widths (glyph space)
	dw      float64         // a Type0 font's default width
	text    [256]string     // a simple font's codes to text, clean
	sw      [256]float64    // a simple font's widths (glyph space)
	scale   float64         // glyph space to text space: 1/1000, or a Type3 font's matrix
}

func (f *font) width(code int) float64 {
	if !f.twoByte {
		return f.sw[code&0xFF] * f.scale
	}
	if w, ok := f.widths[code]; ok {
		return w * f.scale
	}
	return f.dw * f.scale
}

// glyphText is the clean text of one code.
func (f *font) glyphText(raw string) string {
	if !f.twoByte {
		return f.text[raw[0]]
	}
	return cleanGlyph(f.dec.decode(raw))
}

// ligatures are the presentation forms a font's glyph names or ToUnicode
// maps give, expanded to their letters: "ﬁnd" is not found by a search
// for "find".
var ligatures = strings.NewReplacer("\uFB00", "ff", "\uFB01", "fi", "\uFB02", "fl", "\uFB03", "ffi", "\uFB04", "ffl", "\uFB05", "st", "\uFB06", "st")

// cleanGlyph drops what a glyph's text must never put in the output:
// control characters (a font without a Unicode map decoded byte for byte),
// NUL and U+FFFD, and expands ligatures.
func cleanGlyph(t string) string {
	bad := false
	for _, r := range t {
		if r < 0x20 || (r >= 0x7F && r <= 0x9F) || r == 0xFFFD || (r >= 0xFB00 && r <= 0xFB06) {
			bad = true
			break
		}
	}
	if !bad {
		return t
	}
	t = strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7F && r <= 0x9F) || r == 0xFFFD {
			return -1
		}
		return r
	}, t)
	return ligatures.Replace(t)
}

func num(v pdf.Value) float64 {
	if k := v.Kind(); k == pdf.Integer || k == pdf.Real {
		return v.Float64()
	}
	return 0
}

func loadFont(fv pdf.Value) *font {
	f := &font{scale: 0.001}
	var cm *cmap
	if tu := fv.Key("ToUnicode"); tu.Kind() == pdf.Stream {
		cm = readCMap(tu, fv)
	}
	if fv.Key("Subtype").Name() == "Type0" {
		f.twoByte = true
		f.widths = map[int]float64{}
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
	loadSimple(f, fv, cm)
	return f
}

// loadSimple reads a one-byte font: its encoding (a base encoding, the
// standard font's own for Symbol and ZapfDingbats, and /Differences read
// through the Adobe Glyph List), its ToUnicode map over that (producers
// such as groff map only their ligatures, and write the codes with two
// bytes), and its widths: /Widths, else the standard 14 metrics.
//
// The tables are built once per font and document: a glyph then costs a
// lookup.
func loadSimple(f *font, fv pdf.Value, cm *cmap) {
	std := std14Of(fv.Key("BaseFont").Name())
	enc := fv.Key("Encoding")
	baseName := enc.Name()
	if enc.Kind() == pdf.Dict {
		baseName = enc.Key("BaseEncoding").Name()
	}
	base := baseEncoding(baseName, std)
	var names [256]string // glyph names from /Differences
	encR := base          // the character each code's glyph is, for its width
	for c, r := range base {
		if r != 0 {
			f.text[c] = string(r)
		}
	}
	if d := enc.Key("Differences"); d.Kind() == pdf.Array {
		code := -1
		for i := 0; i < d.Len(); i++ {
			e := d.Index(i)
			switch e.Kind() {
			case pdf.Integer:
				code = int(e.Int64())
			case pdf.Name:
				if code >= 0 && code < 256 {
					names[code] = e.Name()
					f.text[code] = glyphRune(e.Name())
					if f.text[code] == "" {
						f.text[code] = ownCode(e.Name(), code)
					}
					encR[code] = 0
					for _, r := range f.text[code] {
						encR[code] = r
						break
					}
				}
				code++
			}
		}
	}
	if cm != nil {
		for c := range f.text {
			k := string([]byte{byte(c)})
			if t, ok := cm.lookup(k); ok {
				f.text[c] = t
			} else if t, ok := cm.lookup("\x00" + k); ok {
				f.text[c] = t
			}
		}
	}
	for c := range f.text {
		f.text[c] = cleanGlyph(f.text[c])
	}

	if fv.Key("Subtype").Name() == "Type3" {
		if m := fv.Key("FontMatrix"); m.Len() == 6 && num(m.Index(0)) != 0 {
			f.scale = abs(num(m.Index(0)))
		}
	}
	// A code outside /Widths: the descriptor's MissingWidth, else the
	// standard font's width, else half an em (a font with no metrics at
	// all still gets its words apart from the next string's).
	missing := num(fv.Key("FontDescriptor").Key("MissingWidth"))
	fc := int(fv.Key("FirstChar").Int64())
	ws := fv.Key("Widths")
	for c := range f.sw {
		if i := c - fc; ws.Kind() == pdf.Array && i >= 0 && i < ws.Len() {
			f.sw[c] = num(ws.Index(i))
			continue
		}
		switch {
		case std == std14Symbol && names[c] == "":
			f.sw[c] = float64(symbolWidths[c])
		case std == std14Dingbats && names[c] == "":
			f.sw[c] = float64(dingbatsWidths[c])
		case std >= 0 && std < 12:
			f.sw[c] = std14Width(std, encR[c])
		}
		if f.sw[c] == 0 {
			f.sw[c] = missing
		}
		if f.sw[c] == 0 && ws.Kind() != pdf.Array && std < 0 && f.scale == 0.001 {
			f.sw[c] = 500
		}
	}
}

// ownCode reads a glyph name that is its own code: pdfTeX's bitmap (Type
// 3) fonts name code 97 /a97. Such fonts are TeX's EC fonts (bitmaps are
// what LaTeX's T1 encoding falls back to without cm-super), so the codes
// are read as T1: ASCII, T1's quotes, dashes and ligatures below 32, its
// Latin-1-like upper quarter; the rest (accents as separate glyphs, T1's
// Central European block) is dropped rather than guessed. Requiring the
// number to equal the code keeps glyph indices ("g12" at code 3) from
// being read as characters.
func ownCode(name string, code int) string {
	i := 0
	for i < len(name) && i < 2 && (name[i] >= 'a' && name[i] <= 'z' || name[i] >= 'A' && name[i] <= 'Z') {
		i++
	}
	digits := name[i:]
	if i == 0 || len(digits) < 1 || len(digits) > 3 || strconv.Itoa(code) != digits {
		return ""
	}
	switch {
	case code >= 13 && code <= 22:
		return [...]string{"‚", "‹", "›", "“", "”", "„", "«", "»", "–", "—"}[code-13]
	case code >= 27 && code <= 31:
		return [...]string{"ff", "fi", "fl", "ffi", "ffl"}[code-27]
	case code >= 0x20 && code < 0x7F:
		return string(rune(code))
	case code == 0x7F:
		return "-"
	case code == 0xD7:
		return "Œ"
	case code == 0xF7:
		return "œ"
	case code == 0xDF:
		return "SS"
	case code == 0xFF:
		return "ß"
	case code >= 0xC0:
		return string(rune(code))
	}
	return ""
}

// ucs2 decodes a Type0 font without a ToUnicode map as UTF-16BE, the best
// guess for the CJK encodings (UniGB-UCS2-H and kin).
type ucs2 struct{}

func (ucs2) decode(raw string) string { return utf16BE(raw) }
