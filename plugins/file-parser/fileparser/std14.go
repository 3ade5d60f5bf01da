package fileparser

//go:generate go run std14_gen.go

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/text/encoding/charmap"
)

// The standard 14 fonts may be used without a /Widths array (ReportLab,
// many invoice generators and hand-written PostScript do so); without their
// widths nothing tells where a string ends, and words drawn one after the
// other ran together. Their metrics, and the encodings and glyph names a
// simple font's codes are read through, are generated into std14_table.go.

// std14 numbers a standard font: 0-11 the text fonts in std14Widths'
// order, std14Symbol, std14Dingbats; -1 none.
const (
	std14None     = -1
	std14Symbol   = 12
	std14Dingbats = 13
)

// std14Of maps a BaseFont name to the standard font whose metrics it has:
// the 14 names, their common aliases (Arial, Times New Roman, Courier New,
// URW's Nimbus clones), with or without a subset prefix.
func std14Of(base string) int {
	if i := strings.IndexByte(base, '+'); i == 6 {
		base = base[i+1:]
	}
	l := strings.ToLower(base)
	family := -1
	switch {
	case strings.Contains(l, "zapfdingbats") || strings.HasPrefix(l, "d050000l") || strings.Contains(l, "dingbats"):
		return std14Dingbats
	case l == "symbol" || strings.HasPrefix(l, "standardsymbol") || strings.HasPrefix(l, "symbolmt"):
		return std14Symbol
	case strings.Contains(l, "helvetica") || strings.HasPrefix(l, "arial") || strings.HasPrefix(l, "nimbussans") || strings.HasPrefix(l, "liberationsans"):
		family = 0
	case strings.Contains(l, "times") || strings.HasPrefix(l, "nimbusroman") || strings.HasPrefix(l, "liberationserif"):
		family = 4
	case strings.Contains(l, "courier") || strings.HasPrefix(l, "nimbusmono") || strings.HasPrefix(l, "liberationmono"):
		family = 8
	default:
		return std14None
	}
	bold := strings.Contains(l, "bold") || strings.Contains(l, "black") || strings.Contains(l, "heavy")
	italic := strings.Contains(l, "italic") || strings.Contains(l, "oblique")
	if bold {
		family++
	}
	if italic {
		family += 2
	}
	// Times: Roman, Bold, Italic, BoldItalic is the same order as
	// Helvetica's and Courier's Regular, Bold, Oblique, BoldOblique.
	return family
}

// std14Width is the width of r in the text font i, 0 when it has none.
func std14Width(i int, r rune) float64 {
	j := sort.Search(len(std14Runes), func(k int) bool { return std14Runes[k] >= r })
	if j < len(std14Runes) && std14Runes[j] == r {
		return float64(std14Widths[i][j])
	}
	return 0
}

// glyphRune maps a glyph name to its character: the Adobe Glyph List,
// then the uniXXXX and uXXXX[XX] forms, then a name with a suffix
// ("a.sc", "f_i" as a ligature). 0: unknown.
func glyphRune(name string) string {
	if r := aglLookup(name); r != 0 {
		return string(r)
	}
	if h, ok := strings.CutPrefix(name, "uni"); ok && len(h) >= 4 && len(h)%4 == 0 {
		var b strings.Builder
		for i := 0; i+4 <= len(h); i += 4 {
			v, err := strconv.ParseUint(h[i:i+4], 16, 32)
			if err != nil {
				return ""
			}
			b.WriteRune(rune(v))
		}
		return b.String()
	}
	if h, ok := strings.CutPrefix(name, "u"); ok && len(h) >= 4 && len(h) <= 6 {
		if v, err := strconv.ParseUint(h, 16, 32); err == nil && v <= 0x10FFFF {
			return string(rune(v))
		}
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		return glyphRune(name[:i])
	}
	if strings.Contains(name, "_") {
		var b strings.Builder
		for _, part := range strings.Split(name, "_") {
			t := glyphRune(part)
			if t == "" {
				return ""
			}
			b.WriteString(t)
		}
		return b.String()
	}
	return ""
}

var (
	aglOnce  sync.Once
	aglIndex []int // offsets of aglData's lines
)

// aglLookup finds name in the glyph list by binary search over its lines.
func aglLookup(name string) rune {
	aglOnce.Do(func() {
		aglIndex = append(aglIndex, 0)
		for i := 0; i < len(aglData)-1; i++ {
			if aglData[i] == '\n' {
				aglIndex = append(aglIndex, i+1)
			}
		}
	})
	line := func(k int) (string, string) {
		s := aglData[aglIndex[k]:]
		s = s[:strings.IndexByte(s, '\n')]
		sp := strings.IndexByte(s, ' ')
		return s[:sp], s[sp+1:]
	}
	k := sort.Search(len(aglIndex), func(k int) bool { n, _ := line(k); return n >= name })
	if k < len(aglIndex) {
		if n, h := line(k); n == name {
			v, _ := strconv.ParseUint(h, 16, 32)
			return rune(v)
		}
	}
	return 0
}

var (
	encOnce                 sync.Once
	winAnsiEnc, macRomanEnc [256]rune
)

// baseEncoding is one of the named simple-font encodings, as characters.
func baseEncoding(name string, std int) [256]rune {
	encOnce.Do(func() {
		for i := 0; i < 256; i++ {
			winAnsiEnc[i] = charmap.Windows1252.DecodeByte(byte(i))
			macRomanEnc[i] = charmap.Macintosh.DecodeByte(byte(i))
		}
		// WinAnsiEncoding differs from code page 1252 in its unused
		// codes, which it leaves undefined (and the bullet at 0x7F..)
		for _, c := range []int{0x81, 0x8D, 0x8F, 0x90, 0x9D} {
			winAnsiEnc[c] = 0
		}
	})
	switch name {
	case "WinAnsiEncoding":
		return winAnsiEnc
	case "MacRomanEncoding":
		return macRomanEnc
	case "StandardEncoding":
		return standardEncoding
	}
	switch std {
	case std14Symbol:
		return symbolRunes
	case std14Dingbats:
		return dingbatsRunes
	}
	return standardEncoding
}
