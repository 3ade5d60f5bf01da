package jsonwalk

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unsafe"
)

// Status is what Scan found.
type Status uint8

const (
	// OK: one JSON value, nested at most max deep, indexed.
	OK Status = iota
	// TooDeep: the document nests deeper than max before any syntax error.
	TooDeep
	// Invalid: not JSON (the index is meaningless).
	Invalid
)

// Scan indexes d.s as Index does and checks its syntax (RFC 8259, as
// gjson.Valid does: one value, whitespace around it) in the same pass,
// so a request body is read once where Index and gjson.Valid read it
// twice. Strings, most of a chat body, are skipped eight bytes at a time.
// A document nested deeper than max is TooDeep if no syntax error came
// before the level that is too deep, as a parser reading up to there
// would say.
func (d *Doc) Scan(max int) Status {
	s := d.s
	if len(s) > MaxDocument {
		return Invalid
	}
	// The open containers, on the goroutine's stack up to 128 levels: an
	// entry is the container's index entry, or ^offset when it was not
	// noted (noteOpen), so its kind can still be read.
	var small [128]int
	stack := small[:0]
	i := WS(s, 0)
	for {
		// A value starts at s[i].
		if i >= len(s) {
			return Invalid
		}
		switch c := s[i]; {
		case c == '"':
			j, esc, ok := stringEnd(s, i)
			if !ok {
				return Invalid
			}
			d.noteString(i, j, esc)
			i = j
		case c == '{' || c == '[':
			if len(stack) >= max {
				return TooDeep
			}
			open := i
			var empty bool
			if i, empty = opened(s, open); empty {
				i++
				break // an empty container is a whole value, not noted (end reads it)
			}
			if k := d.noteOpen(open); k >= 0 {
				stack = append(stack, k)
			} else {
				stack = append(stack, ^open)
			}
			if c == '{' {
				if i = d.memberKey(i); i < 0 {
					return Invalid
				}
			}
			continue // its first value
		default:
			if i = scalarEnd(s, i); i < 0 {
				return Invalid
			}
		}
		// A value ended just before s[i]: close containers, or go to the
		// next member or element.
		for {
			i = WS(s, i)
			if len(stack) == 0 {
				if i != len(s) {
					return Invalid
				}
				return OK
			}
			if i >= len(s) {
				return Invalid
			}
			top := stack[len(stack)-1]
			at := ^top
			if top >= 0 {
				at = int(d.opens[top])
			}
			obj := s[at] == '{'
			switch s[i] {
			case ',':
				i = WS(s, i+1)
				if obj {
					if i = d.memberKey(i); i < 0 {
						return Invalid
					}
				}
			case '}', ']':
				if (s[i] == '}') != obj {
					return Invalid
				}
				if top >= 0 {
					d.ends[top] = int32(i + 1)
				}
				stack = stack[:len(stack)-1]
				i++
				continue
			default:
				return Invalid
			}
			break
		}
	}
}

// scalarEnd is where the literal (true, false, null) or number at s[i]
// ends, or -1 when none starts there.
func scalarEnd(s string, i int) int {
	switch c := s[i]; {
	case c == 't' && hasPrefix(s, i, "true"), c == 'n' && hasPrefix(s, i, "null"):
		return i + 4
	case c == 'f' && hasPrefix(s, i, "false"):
		return i + 5
	case c == '-' || c >= '0' && c <= '9':
		return numberEnd(s, i)
	}
	return -1
}

// memberKey reads `"key" :` from d.s[i], notes the key, and returns
// where the member's value may start (after whitespace), or -1.
func (d *Doc) memberKey(i int) int {
	s := d.s
	if i >= len(s) || s[i] != '"' {
		return -1
	}
	j, esc, ok := stringEnd(s, i)
	if !ok {
		return -1
	}
	d.noteString(i, j, esc)
	j = WS(s, j)
	if j >= len(s) || s[j] != ':' {
		return -1
	}
	return WS(s, j+1)
}

func hasPrefix(s string, i int, lit string) bool {
	return len(s)-i >= len(lit) && s[i:i+len(lit)] == lit
}

// numberEnd returns the offset just past the JSON number at s[i], or -1.
func numberEnd(s string, i int) int {
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(s, i)
	default:
		return -1
	}
	if i < len(s) && s[i] == '.' {
		j := digits(s, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// stringEnd returns the offset just past the string that opens at s[i],
// whether it holds an escape, and whether it is a valid JSON string: no
// control character, only the escapes JSON has. Most strings of a body
// are short (keys, roles, ids) and end within two words, which one pass
// over them finds (first16); the others, most of a body's bytes, take the
// vector search for their quote (stringEndLong).
func stringEnd(s string, i int) (end int, esc, ok bool) {
	if j := i + 1; j+16 <= len(s) {
		if k := first16(s, j); k < 16 {
			switch c := s[j+k]; {
			case c == '"':
				return j + k + 1, false, true
			case c < 0x20:
				return j + k, false, false
			}
		}
	}
	return stringEndLong(s, i)
}

// first16 is the offset in s[i:i+16] of its first quote, backslash or
// control character (below 0x20), or 16: the haszero and hasless tricks of
// "Bit Twiddling Hacks" on two words. In a word's mask the lowest set byte
// is exact (a borrow only marks bytes above a true one), so the lowest of
// the three tests is the byte sought.
func first16(s string, i int) int {
	b := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i)), 16)
	if m := specials(binary.LittleEndian.Uint64(b[:8])); m != 0 {
		return bits.TrailingZeros64(m) >> 3
	}
	if m := specials(binary.LittleEndian.Uint64(b[8:])); m != 0 {
		return 8 + bits.TrailingZeros64(m)>>3
	}
	return 16
}

// specials marks the high bit of each byte of w that may be a quote, a
// backslash or a control character; the lowest marked byte is one.
func specials(w uint64) uint64 {
	const quotes, slashes, lt = ones * '"', ones * '\\', ones * 0x20
	q, b := w^quotes, w^slashes
	return ((q-ones)&^q | (b-ones)&^b | (w-lt)&^w) & highs
}

// control reports whether seg holds a control character (below 0x20),
// which a JSON string may not: 32 bytes at a time, with the hasless
// trick (exact as a yes or no).
func control(seg string) bool {
	const lt = ones * 0x20
	i, n := 0, len(seg)
	p := unsafe.Pointer(unsafe.StringData(seg))
	for ; i+32 <= n; i += 32 {
		b := unsafe.Slice((*byte)(unsafe.Add(p, i)), 32)
		w0, w1 := binary.LittleEndian.Uint64(b[0:8]), binary.LittleEndian.Uint64(b[8:16])
		w2, w3 := binary.LittleEndian.Uint64(b[16:24]), binary.LittleEndian.Uint64(b[24:32])
		if ((w0-lt)&^w0|(w1-lt)&^w1|(w2-lt)&^w2|(w3-lt)&^w3)&highs != 0 {
			return true
		}
	}
	for ; i+8 <= n; i += 8 {
		w := binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(p, i)), 8))
		if (w-lt)&^w&highs != 0 {
			return true
		}
	}
	for ; i < n; i++ {
		if seg[i] < 0x20 {
			return true
		}
	}
	return false
}

// stringEndLong is stringEnd for any string: the closing quote and each
// backslash are found by strings.IndexByte (vector instructions); the
// bytes between need only the control check. A quote found once is not
// searched for again while escapes before it are read, so a string dense
// with escapes is still read once.
func stringEndLong(s string, i int) (end int, esc, ok bool) {
	i++
	q := -1 // the next quote at or after i, once found
	for {
		if q < i {
			k := strings.IndexByte(s[i:], '"')
			if k < 0 {
				return len(s), esc, false
			}
			q = i + k
		}
		seg := s[i:q]
		b := strings.IndexByte(seg, '\\')
		if b < 0 {
			return q + 1, esc, !control(seg)
		}
		if control(seg[:b]) {
			return i, esc, false
		}
		esc, i = true, i+b
		if i+1 >= len(s) {
			return i, esc, false
		}
		switch s[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if len(s)-i < 6 || !hex4(s[i+2:i+6]) {
				return i, esc, false
			}
			i += 6
		default:
			return i, esc, false
		}
	}
}

func hex4(h string) bool {
	for k := 0; k < 4; k++ {
		c := h[k]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
