//go:build wasip1

// Command go-native-plugin is the keyword guardrail written in Go against
// the native ABI with sdk/. The C (examples/c-native-plugin),
// AssemblyScript (examples/as-extism-plugin) and Rust
// (examples/rust-native-plugin) versions do exactly the same thing, byte
// for byte, so the four can be compared on one transform.
//
// pre_request reads the blocked patterns from its configuration (the
// request's plugins[] item: {"id":…,"blocked":["secret-project",…]}) and
// scans the text of the request's messages: every string that is the value
// of a "content" or "text" member (array elements count as their member's
// value) anywhere under the top-level "messages" member, JSON escapes
// decoded, compared ASCII case-insensitively. When a pattern occurs, the
// request is blocked with
//
//	{"code":403,"message":"…","metadata":{"patterns":[…]}}
//
// listing the matched patterns in the order of the configuration; otherwise
// it continues unchanged. At most 64 patterns are used; empty ones are
// ignored.
//
// The scanner allocates nothing per call: its buffers are package-level and
// reused, as the ABI recommends (allocation is what makes a Go guest slow).
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

// init also sizes the reused buffers: an account's instance starts every
// call from its state right after init (the host resets it), so what a
// call grows is grown again on the next.
func init() {
	sdk.Handle(abi.HookPreRequest, preRequest)
	patterns = make([]pattern, 0, maxPatterns)
	text = make([]byte, 0, 16<<10)
}

const (
	maxPatterns = 64
	maxDepth    = 64
)

type pattern struct {
	raw    []byte // the JSON string token as configured, quotes included
	folded []byte // decoded and lower-cased, for matching
}

var (
	patterns []pattern // reused
	npat     int
	matched  [maxPatterns]bool
	text     []byte // decoded text of the string being checked, reused
)

type malformed struct{}

func (malformed) Error() string { return "malformed JSON" }

var errMalformed error = malformed{}

func preRequest(in *sdk.In, out *sdk.Out) error {
	if err := loadPatterns(in.Field(0)); err != nil {
		return sdk.Error("ctx is not valid JSON")
	}
	if npat > 0 {
		if err := scanRequest(in.Field(1)); err != nil {
			return sdk.Error("the request is not valid JSON")
		}
	}
	n := 0
	for i := 0; i < npat; i++ {
		if matched[i] {
			n++
		}
	}
	if n == 0 {
		out.FieldString(abi.ActionContinue)
		out.Field(nil) // the body is unchanged
		out.Field(nil)
		return nil
	}
	out.FieldString(abi.ActionBlock)
	out.Open()
	out.WriteString(`{"code":403,"message":"request blocked: it contains a blocked pattern","metadata":{"patterns":`)
	writeMatched(out)
	out.WriteString(`}}`)
	out.Close()
	out.Open()
	out.WriteString(`{"type":"guardrail","summary":"matched `)
	writeInt(out, n)
	out.WriteString(` blocked pattern(s)","data":{"action":"block","detected":true,"patterns":`)
	writeMatched(out)
	out.WriteString(`}}`)
	out.Close()
	return nil
}

func writeMatched(out *sdk.Out) {
	out.Byte('[')
	first := true
	for i := 0; i < npat; i++ {
		if !matched[i] {
			continue
		}
		if !first {
			out.Byte(',')
		}
		first = false
		out.Write(patterns[i].raw)
	}
	out.Byte(']')
}

func writeInt(out *sdk.Out, n int) {
	if n >= 10 {
		writeInt(out, n/10)
	}
	out.Byte(byte('0' + n%10))
}

// loadPatterns reads ctx.config.blocked.
func loadPatterns(ctx []byte) error {
	npat = 0
	matched = [maxPatterns]bool{}
	cfg, err := member(ctx, skipWS(ctx, 0), "config")
	if err != nil || cfg < 0 {
		return err
	}
	list, err := member(ctx, cfg, "blocked")
	if err != nil || list < 0 || ctx[list] != '[' {
		return err
	}
	i := skipWS(ctx, list+1)
	if i < len(ctx) && ctx[i] == ']' {
		return nil
	}
	for {
		i = skipWS(ctx, i)
		if i >= len(ctx) {
			return errMalformed
		}
		end, err := skip(ctx, i, 0)
		if err != nil {
			return err
		}
		if ctx[i] == '"' && end-i > 2 && npat < maxPatterns {
			if npat == len(patterns) {
				patterns = append(patterns, pattern{})
			}
			p := &patterns[npat]
			p.raw = append(p.raw[:0], ctx[i:end]...)
			p.folded = decode(p.folded[:0], ctx[i+1:end-1])
			if len(p.folded) > 0 {
				npat++
			}
		}
		i = skipWS(ctx, end)
		if i >= len(ctx) {
			return errMalformed
		}
		if ctx[i] == ']' {
			return nil
		}
		if ctx[i] != ',' {
			return errMalformed
		}
		i++
	}
}

// member returns the offset of the value of key in the object at i, or -1
// when i is not an object or has no such member.
func member(b []byte, i int, key string) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return -1, nil
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return -1, nil
	}
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return -1, errMalformed
		}
		kend, err := stringEnd(b, i)
		if err != nil {
			return -1, err
		}
		k := b[i+1 : kend-1]
		i = skipWS(b, kend)
		if i >= len(b) || b[i] != ':' {
			return -1, errMalformed
		}
		i = skipWS(b, i+1)
		if string(k) == key {
			return i, nil
		}
		end, err := skip(b, i, 0)
		if err != nil {
			return -1, err
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return -1, errMalformed
		}
		if b[i] == '}' {
			return -1, nil
		}
		if b[i] != ',' {
			return -1, errMalformed
		}
		i++
	}
}

// scanRequest checks the text of the request's messages.
func scanRequest(body []byte) error {
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return errMalformed
	}
	i = skipWS(body, i+1)
	if i < len(body) && body[i] == '}' {
		return nil
	}
	for {
		i = skipWS(body, i)
		if i >= len(body) || body[i] != '"' {
			return errMalformed
		}
		kend, err := stringEnd(body, i)
		if err != nil {
			return err
		}
		k := body[i+1 : kend-1]
		i = skipWS(body, kend)
		if i >= len(body) || body[i] != ':' {
			return errMalformed
		}
		i = skipWS(body, i+1)
		var end int
		if string(k) == "messages" {
			end, err = scan(body, i, 1, false)
		} else {
			end, err = skip(body, i, 1)
		}
		if err != nil {
			return err
		}
		i = skipWS(body, end)
		if i >= len(body) {
			return errMalformed
		}
		if body[i] == '}' {
			return nil
		}
		if body[i] != ',' {
			return errMalformed
		}
		i++
	}
}

// skip returns the offset just past the value at i.
func skip(b []byte, i, depth int) (int, error) { return walk(b, i, depth, false, false) }

// scan is skip that also checks every string under a "content" or "text"
// member against the patterns.
func scan(b []byte, i, depth int, textKey bool) (int, error) { return walk(b, i, depth, true, textKey) }

func walk(b []byte, i, depth int, check, textKey bool) (int, error) {
	if depth > maxDepth {
		return 0, errMalformed
	}
	if i >= len(b) {
		return 0, errMalformed
	}
	switch b[i] {
	case '{':
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		for {
			i = skipWS(b, i)
			if i >= len(b) || b[i] != '"' {
				return 0, errMalformed
			}
			kend, err := stringEnd(b, i)
			if err != nil {
				return 0, err
			}
			k := b[i+1 : kend-1]
			i = skipWS(b, kend)
			if i >= len(b) || b[i] != ':' {
				return 0, errMalformed
			}
			i = skipWS(b, i+1)
			isText := string(k) == "content" || string(k) == "text"
			if i, err = walk(b, i, depth+1, check, isText); err != nil {
				return 0, err
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, errMalformed
			}
			if b[i] == '}' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return 0, errMalformed
			}
			i++
		}
	case '[':
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			i = skipWS(b, i)
			var err error
			if i, err = walk(b, i, depth+1, check, textKey); err != nil {
				return 0, err
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, errMalformed
			}
			if b[i] == ']' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return 0, errMalformed
			}
			i++
		}
	case '"':
		end, err := stringEnd(b, i)
		if err != nil {
			return 0, err
		}
		if check && textKey {
			text = decode(text[:0], b[i+1:end-1])
			for p := 0; p < npat; p++ {
				if !matched[p] && contains(text, patterns[p].folded) {
					matched[p] = true
				}
			}
		}
		return end, nil
	default: // a number, true, false or null
		start := i
		for i < len(b) && !isDelim(b[i]) {
			i++
		}
		if i == start {
			return 0, errMalformed
		}
		return i, nil
	}
}

func isDelim(c byte) bool {
	return c == ',' || c == ']' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the offset just past the closing quote of the string
// whose opening quote is at i.
func stringEnd(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errMalformed
}

// decode appends the JSON string content s (without quotes) to dst with its
// escapes decoded and ASCII letters lower-cased.
func decode(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, n := hex4(s, i+1)
			i += n
			if r >= 0xD800 && r < 0xDC00 && i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo, n2 := hex4(s, i+3); n2 == 4 && lo >= 0xDC00 && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					i += 2 + n2
				}
			}
			if n < 4 || (r >= 0xD800 && r < 0xE000) {
				r = 0xFFFD
			}
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			}
			dst = appendUTF8(dst, r)
		default: // " \ / and anything else stand for themselves
			c := s[i]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
		}
	}
	return dst
}

// hex4 reads up to four hex digits at i: the value and how many were read.
func hex4(s []byte, i int) (rune, int) {
	var r rune
	n := 0
	for ; n < 4 && i+n < len(s); n++ {
		c := s[i+n]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return r, n
		}
	}
	return r, n
}

func appendUTF8(dst []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(dst, byte(r))
	case r < 0x800:
		return append(dst, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	default:
		return append(dst, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
}

// contains reports whether pat occurs in s.
func contains(s, pat []byte) bool {
	n := len(pat)
	for i := 0; i+n <= len(s); i++ {
		if s[i] == pat[0] && string(s[i:i+n]) == string(pat) {
			return true
		}
	}
	return false
}
