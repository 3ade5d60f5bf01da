// Package jsonstr is the host's one JSON string encoder: every JSON text the
// host builds by hand quotes its strings with it. strconv.Quote is not one
// (it writes \a, \x1b, \x7f, \xff and \U0001f600, which JSON does not have).
//
// The output is what encoding/json writes with HTML escaping off: '"', '\\'
// and the control characters U+0000–U+001F escaped (\b \f \n \r \t, else
// \u00XX), U+2028 and U+2029 escaped, each byte that is not part of valid
// UTF-8 replaced by \ufffd, and everything else — DEL, '<', '>', '&', any
// other rune — as it is. The result is always valid JSON and valid UTF-8.
package jsonstr

import (
	"unicode/utf8"
	"unsafe"
)

const hex = "0123456789abcdef"

// plain[b] is true for the ASCII bytes written as they are.
var plain = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// Append appends s to dst as a JSON string literal, quotes included.
func Append(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is plain text not yet copied
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if plain[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendBytes is Append of a byte slice (not copied to a string first).
func AppendBytes(dst, b []byte) []byte {
	return Append(dst, unsafe.String(unsafe.SliceData(b), len(b)))
}

// Quote returns s as a JSON string literal.
func Quote(s string) string {
	b := Append(make([]byte, 0, len(s)+2), s)
	return unsafe.String(unsafe.SliceData(b), len(b))
}
