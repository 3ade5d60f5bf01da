package sdk

import (
	"math/bits"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Members calls fn for each top-level member of the JSON object obj, in
// order, without copying obj: value.Raw aliases it. fn returns false to stop.
//
// Values are what gjson's ForEach gives (Type, Raw, Str unescaped, Num,
// Index), but found by skipping: a string's end with a memchr for its
// quote, a nested value by its brackets. gjson reads every byte of every
// value one at a time, and an adapter that copies a request's members
// pays that on the whole body (a 128 KB agent request is mostly long
// strings). obj is expected valid (the host validated it); on invalid
// input the walk stops early, without panicking.
func Members(obj []byte, fn func(key string, value gjson.Result) bool) {
	s := unsafeString(obj)
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return
	}
	i = skipWS(s, i+1)
	for i < len(s) && s[i] == '"' {
		e := stringEnd(s, i)
		key := s[i+1 : max(e-1, i+1)]
		if strings.IndexByte(key, '\\') >= 0 {
			key = gjson.Parse(s[i:e]).Str
		}
		i = skipWS(s, e)
		if i >= len(s) || s[i] != ':' {
			return
		}
		i = skipWS(s, i+1)
		if i >= len(s) {
			return
		}
		v, j := valueAt(s, i)
		// An object or array cut off before it closes has no value to
		// give: the walk stops there, as at any other malformed member.
		if j <= i || v.Raw == "" || !fn(key, v) {
			return
		}
		i = skipWS(s, j)
		if i < len(s) && s[i] == ',' {
			i = skipWS(s, i+1)
		}
	}
}

func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the offset just past the string that opens at s[i]
// (len(s) when it is not closed). A short string (a key, a role) ends
// within two words, found without a search call (quote16).
func stringEnd(s string, i int) int {
	i++
	if i+16 <= len(s) {
		if k := quote16(s[i : i+16]); k < 16 && s[i+k] == '"' {
			return i + k + 1
		}
	}
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s)
		}
		k := i + j
		n := 0 // an odd run of backslashes before the quote escapes it
		for m := k - 1; m >= i && s[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return k + 1
		}
		i = k + 1
	}
}

// quote16 is the offset in w16 (16 bytes) of its first quote or
// backslash, or 16: the haszero trick of "Bit Twiddling Hacks" on two
// words (in a word's mask the lowest set byte is exact).
func quote16(w16 string) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for k := 0; k < 16; k += 8 {
		b8 := w16[k : k+8]
		// One 8-byte load: the compiler combines the pattern.
		w := uint64(b8[0]) | uint64(b8[1])<<8 | uint64(b8[2])<<16 | uint64(b8[3])<<24 |
			uint64(b8[4])<<32 | uint64(b8[5])<<40 | uint64(b8[6])<<48 | uint64(b8[7])<<56
		q, b := w^(ones*'"'), w^(ones*'\\')
		if m := ((q-ones)&^q | (b-ones)&^b) & highs; m != 0 {
			return k + bits.TrailingZeros64(m)>>3
		}
	}
	return 16
}

// valueAt reads the value at s[i] as gjson would and returns it and the
// offset just past it.
func valueAt(s string, i int) (gjson.Result, int) {
	r := gjson.Result{Index: i}
	var j int
	switch c := s[i]; c {
	case '"':
		j = stringEnd(s, i)
		r.Type, r.Raw = gjson.String, s[i:j]
		if body := s[i+1 : max(j-1, i+1)]; strings.IndexByte(body, '\\') < 0 {
			r.Str = body
		} else {
			r.Str = gjson.Parse(r.Raw).Str
		}
		return r, j
	case '{', '[':
		depth := 0
		for j = i; j < len(s); j++ {
			switch s[j] {
			case '"':
				j = stringEnd(s, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					r.Type, r.Raw = gjson.JSON, s[i:j+1]
					return r, j + 1
				}
			}
		}
		return r, len(s) // not closed
	}
	for j = i + 1; j < len(s); j++ {
		if c := s[j]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
	}
	r.Raw = s[i:j]
	switch s[i] {
	case 't':
		r.Type = gjson.True
	case 'f':
		r.Type = gjson.False
	case 'n':
		r.Type = gjson.Null
	default:
		r.Type = gjson.Number
		r.Num, _ = strconv.ParseFloat(r.Raw, 64)
	}
	return r, j
}

// Get reads a gjson path from a JSON document without copying it.
func Get(doc []byte, path string) gjson.Result { return gjson.Get(unsafeString(doc), path) }

// Member writes `"key":raw` to the open field, preceded by a comma unless it
// is the first member (the byte before it is '{').
func (o *Out) Member(key, raw string) {
	if o.buf[len(o.buf)-1] != '{' {
		o.buf = append(o.buf, ',')
	}
	o.buf = append(o.buf, '"')
	o.buf = append(o.buf, key...) // keys come from gjson members or literals: no escaping needed
	o.buf = append(o.buf, '"', ':')
	o.buf = append(o.buf, raw...)
}

// MemberString writes `"key":"value"` with value JSON-escaped.
func (o *Out) MemberString(key, value string) {
	o.Member(key, "")
	o.buf = AppendJSONString(o.buf, value)
}

// AppendJSONString appends s as a JSON string literal.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
