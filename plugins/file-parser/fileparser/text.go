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
