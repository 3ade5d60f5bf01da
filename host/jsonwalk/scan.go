package jsonwalk

import (
	"encoding/binary"
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
	var small [128]int // open containers' index entries; heap past 128
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
			stack = append(stack, len(d.opens))
			d.opens = append(d.opens, i)
			d.ends = append(d.ends, len(s))
			i = WS(s, i+1)
			if i < len(s) && (s[i] == '}' && c == '{' || s[i] == ']' && c == '[') {
				d.ends[stack[len(stack)-1]] = i + 1
				stack = stack[:len(stack)-1]
				i++
				break // an empty container is a whole value
			}
			if c == '{' {
				if i = d.memberKey(i); i < 0 {
					return Invalid
				}
			}
			continue // its first value
		case c == 't':
			if !hasPrefix(s, i, "true") {
				return Invalid
			}
			i += 4
		case c == 'f':
			if !hasPrefix(s, i, "false") {
				return Invalid
			}
			i += 5
		case c == 'n':
			if !hasPrefix(s, i, "null") {
				return Invalid
			}
			i += 4
		case c == '-' || c >= '0' && c <= '9':
			if i = numberEnd(s, i); i < 0 {
				return Invalid
			}
		default:
			return Invalid
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
			obj := s[d.opens[top]] == '{'
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
				d.ends[top] = i + 1
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

// control reports whether seg holds a control character (below 0x20),
// which a JSON string may not: eight bytes at a time, with the hasless
// trick of "Bit Twiddling Hacks" (exact as a yes or no).
func control(seg string) bool {
	i := 0
	for ; i+16 <= len(seg); i += 16 {
		p := unsafe.Slice(unsafe.StringData(seg[i:]), 16)
		w, v := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
		if ((w-ones*0x20)&^w|(v-ones*0x20)&^v)&highs != 0 {
			return true
		}
	}
	for ; i < len(seg); i++ {
		if seg[i] < 0x20 {
			return true
		}
	}
	return false
}

// stringEnd returns the offset just past the string that opens at s[i],
// whether it holds an escape, and whether it is a valid JSON string: no
// control character, only the escapes JSON has. The closing quote and
// each backslash are found by strings.IndexByte (vector instructions);
// the bytes between need only the control check. A quote found once is
// not searched for again while escapes before it are read, so a string
// dense with escapes is still read once.
func stringEnd(s string, i int) (end int, esc, ok bool) {
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
