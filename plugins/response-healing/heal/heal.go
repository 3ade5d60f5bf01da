// Package heal repairs the malformed JSON chat models write when they are
// asked for JSON: a Markdown fence or prose around it, trailing commas, an
// answer cut off by max_tokens, JavaScript and Python spellings (unquoted
// keys, single quotes, True/None, NaN, comments), missing commas, raw
// newlines and unescaped quotes inside strings, and typographic quotes used
// as JSON's.
//
// Heal is one forward pass over its input (plus a bounded look-ahead at a
// few places), so its cost is linear in the input's size; its result is
// valid JSON or nothing. The response-healing module's hooks (hooks.go)
// call it only for requests whose response_format asked for JSON.
package heal

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Repairs is a set of the kinds of repair Heal made.
type Repairs uint32

// The kinds of repair, in the order Kinds lists them.
const (
	Fence          Repairs = 1 << iota // the JSON was inside a Markdown code fence
	LeadingText                        // text before the JSON was dropped
	TrailingText                       // text after the JSON was dropped
	TrailingComma                      // a comma before } or ] was dropped
	Truncated                          // the input ended inside the JSON: strings and brackets closed
	UnquotedKey                        // {name: 1}
	SingleQuotes                       // 'strings'
	SmartQuotes                        // “strings” and ‘strings’
	Backticks                          // `strings`
	PythonLiteral                      // True, False, None
	NonFinite                          // NaN, Infinity: null
	Undefined                          // undefined: null
	Comment                            // // and /* */ comments dropped
	MissingComma                       // a comma inserted between members or elements
	MissingColon                       // a colon inserted after a key
	MissingValue                       // null for a key with no value
	ControlChar                        // a raw newline, tab or other control character in a string escaped
	UnescapedQuote                     // a " inside a string escaped
	InvalidEscape                      // a backslash escape JSON does not have
	UnquotedString                     // a bare word as a string
	NumberFormat                       // +1, .5, 1., 007
	Bracket                            // a ] that closes an object, or a } an array
	StrayComma                         // a leading or doubled comma dropped
	StrayChar                          // a character that belongs nowhere dropped
	Ellipsis                           // ... in an array or object dropped
	Concatenation                      // "a" + "b"
	Whitespace                         // non-breaking spaces and byte-order marks between tokens

	numKinds = iota
)

var kindNames = [numKinds]string{
	"fence", "leading_text", "trailing_text", "trailing_comma", "truncated",
	"unquoted_key", "single_quotes", "smart_quotes", "backticks", "python_literal",
	"non_finite_number", "undefined", "comment", "missing_comma", "missing_colon",
	"missing_value", "control_char", "unescaped_quote", "invalid_escape",
	"unquoted_string", "number_format", "mismatched_bracket", "stray_comma",
	"stray_char", "ellipsis", "concatenation", "whitespace",
}

// Kinds names the repairs in r, in a fixed order.
func (r Repairs) Kinds() []string {
	var ks []string
	for i := 0; i < numKinds; i++ {
		if r&(1<<i) != 0 {
			ks = append(ks, kindNames[i])
		}
	}
	return ks
}

// String is Kinds joined with ", ".
func (r Repairs) String() string { return strings.Join(r.Kinds(), ", ") }

// Root restricts the JSON value Heal looks for.
type Root uint8

const (
	AnyRoot    Root = iota // an object or an array
	ObjectRoot             // an object only (a schema of "type": "object")
	ArrayRoot              // an array only
)

// Options steer Heal.
type Options struct {
	Root Root
	// Accept, when set, judges a repaired value (e.g. against the request's
	// JSON Schema). When it refuses one, Heal tries the next place in the
	// text a JSON value could start (at most MaxCandidates in all) and
	// returns the first it accepts, or else the first it found: an answer
	// that shows a schema-shaped example before the real value gets the
	// real value.
	Accept func(json []byte) bool
}

// MaxCandidates bounds how many places Heal parses from, so a refused
// value costs at most that many passes over the input.
const MaxCandidates = 4

// maxDepth bounds nesting: deeper input is not repaired (its recursion
// would otherwise be the input's to choose).
const maxDepth = 512

// window bounds every look-ahead, so that the whole is linear.
const window = 64

// Heal returns s as valid JSON. s itself when it already is (byte for
// byte, whatever its root), else the JSON value it finds in s, repaired,
// and what was repaired; ok is false when s holds no JSON value (an object
// or an array) to repair.
func Heal(s string, opt Options) (out string, r Repairs, ok bool) {
	if gjson.Valid(s) {
		return s, 0, true
	}
	var first []byte
	var firstR Repairs
	found := false
	from := 0
	for n := 0; n < MaxCandidates; n++ {
		start, end, lead := locate(s, from, opt.Root, n == 0)
		if start < 0 {
			break
		}
		p := parser{s: s[:end], i: start, r: lead, b: make([]byte, 0, end-start+16)}
		p.value()
		next := p.i
		if next <= start {
			next = start + 1
		}
		if p.bad { // nested past maxDepth: not repaired
			break
		}
		p.pending = p.pending[:0]
		p.ws()
		if p.i < len(p.s) {
			p.r |= TrailingText
		}
		if !gjson.ValidBytes(p.b) { // cannot happen; never hand back invalid JSON
			from = next
			continue
		}
		if opt.Accept == nil || opt.Accept(p.b) {
			return string(p.b), p.r, true
		}
		if !found {
			first, firstR, found = p.b, p.r, true
		}
		from = next
	}
	if found {
		return string(first), firstR, true
	}
	return "", 0, false
}

// locate finds where the JSON value starts: at the start of s, in the
// first Markdown fence that opens with one, or at the first place in the
// prose that looks like the start of one. end is where the value's text
// ends (a fence's closing line). Later candidates (first false) come from
// the prose after from.
func locate(s string, from int, root Root, first bool) (start, end int, r Repairs) {
	if first {
		t := skipSpace(s, 0)
		if t < len(s) && opens(s[t], root) && plausible(s, t, true) {
			return t, len(s), 0
		}
		if a, e, ok := fenced(s, root); ok {
			return a, e, Fence
		}
	}
	for i := from; i < len(s); i++ {
		if opens(s[i], root) && plausible(s, i, false) {
			return i, len(s), LeadingText
		}
	}
	return -1, 0, 0
}

func opens(c byte, root Root) bool {
	switch root {
	case ObjectRoot:
		return c == '{'
	case ArrayRoot:
		return c == '['
	}
	return c == '{' || c == '['
}

// plausible reports whether the { or [ at s[i] starts a JSON value rather
// than prose ("{the}", "func main() {}", "[1] Smith"). At the start of the
// text (or of a fence) an empty container, or one cut off right after its
// bracket, counts; in prose it does not.
func plausible(s string, i int, atStart bool) bool {
	lim := min(len(s), i+window)
	j := i + 1
	for j < lim && isSpace(s[j]) {
		j++
	}
	if j >= len(s) {
		return atStart
	}
	if j >= lim {
		return false
	}
	c := s[j]
	if q, _ := quoteAt(s, j); q != 0 {
		return true
	}
	if c == '/' && j+1 < len(s) && (s[j+1] == '/' || s[j+1] == '*') {
		return true
	}
	if s[i] == '{' {
		if c == '}' {
			return atStart
		}
		if !isKeyChar(c) {
			return false
		}
		k := j
		for k < lim && isKeyChar(s[k]) {
			k++
		}
		for k < lim && (s[k] == ' ' || s[k] == '\t') {
			k++
		}
		return k < lim && s[k] == ':'
	}
	switch {
	case c == ']':
		return atStart
	case c == '{' || c == '[':
		return true
	case atStart && (isDigit(c) || c == '-'):
		return true
	case isDigit(c) || c == '-':
		// In prose, a number followed by a comma: [1, 2], not [1] Smith.
		k := j + 1
		for k < lim && (isDigit(s[k]) || s[k] == '.' || s[k] == 'e' || s[k] == 'E' || s[k] == '+' || s[k] == '-') {
			k++
		}
		for k < lim && isSpace(s[k]) {
			k++
		}
		return k < lim && s[k] == ','
	case atStart:
		k := j
		for k < lim && isLetter(s[k]) {
			k++
		}
		switch s[j:k] {
		case "true", "false", "null", "True", "False", "None", "NaN", "Infinity":
			return true
		}
	}
	return false
}

// fenced finds the first Markdown code fence (``` or ~~~) whose content
// starts with a JSON value, and returns where that value starts and where
// the content ends (the closing fence, or the end of s).
func fenced(s string, root Root) (start, end int, ok bool) {
	var next [2]int // cached positions of the next ``` and ~~~, -2: not searched
	next[0], next[1] = -2, -2
	markers := [2]string{"```", "~~~"}
	pos := 0
	for pos < len(s) {
		m := -1
		for k := range markers {
			if next[k] != -1 && next[k] < pos {
				if x := strings.Index(s[pos:], markers[k]); x >= 0 {
					next[k] = pos + x
				} else {
					next[k] = -1
				}
			}
			if next[k] >= 0 && (m < 0 || next[k] < next[m]) {
				m = k
			}
		}
		if m < 0 {
			return 0, 0, false
		}
		open := next[m]
		// The info string: more marker characters, a language tag.
		i := open + 3
		for i < len(s) && s[i] == markers[m][0] {
			i++
		}
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		for i < len(s) && (isLetter(s[i]) || isDigit(s[i]) || s[i] == '_' || s[i] == '+' || s[i] == '-' || s[i] == '#' || s[i] == '.') {
			i++
		}
		body := i
		e := len(s)
		if x := strings.Index(s[body:], markers[m]); x >= 0 {
			e = body + x
		}
		t := skipSpace(s[:e], body)
		if t < e && opens(s[t], root) && plausible(s[:e], t, true) {
			return t, e, true
		}
		pos = e + 3
	}
	return 0, 0, false
}

// parser writes the repaired JSON of s[i:] into b.
type parser struct {
	s     string
	i     int
	b     []byte
	r     Repairs
	depth int
	bad   bool // nested deeper than maxDepth
	// pending is the whitespace since the last token: written before the
	// next one, so the answer keeps its layout, and dropped at the end.
	pending []byte
}

// emit writes the pending whitespace, then c.
func (p *parser) emit(c byte) {
	p.b = append(p.b, p.pending...)
	p.pending = p.pending[:0]
	p.b = append(p.b, c)
}

func (p *parser) emitString(s string) {
	p.b = append(p.b, p.pending...)
	p.pending = p.pending[:0]
	p.b = append(p.b, s...)
}

// ws skips whitespace and comments, keeping the whitespace pending.
func (p *parser) ws() {
	s := p.s
	for p.i < len(s) {
		c := s[p.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pending = append(p.pending, c)
			p.i++
		case c == '/' && p.i+1 < len(s) && s[p.i+1] == '/':
			p.r |= Comment
			p.trimPendingLine()
			j := strings.IndexByte(s[p.i:], '\n')
			if j < 0 {
				p.i = len(s)
			} else {
				p.i += j
			}
		case c == '/' && p.i+1 < len(s) && s[p.i+1] == '*':
			p.r |= Comment
			indented := p.trimPendingLine()
			j := strings.Index(s[p.i+2:], "*/")
			if j < 0 {
				p.i = len(s)
			} else {
				p.i += j + 4
			}
			if indented { // "\n  /* x */ a": the indentation stays, the space after the comment goes
				for p.i < len(s) && (s[p.i] == ' ' || s[p.i] == '\t') {
					p.i++
				}
			}
		case c >= 0x80:
			n := specialSpace(s, p.i)
			if n == 0 {
				return
			}
			p.r |= Whitespace
			p.i += n
		default:
			return
		}
	}
}

// trimPendingLine drops the spaces before a comment that follows a token
// on its line; it keeps a line's indentation (and says so).
func (p *parser) trimPendingLine() (indented bool) {
	n := len(p.pending)
	for n > 0 && (p.pending[n-1] == ' ' || p.pending[n-1] == '\t') {
		n--
	}
	if n > 0 && p.pending[n-1] == '\n' {
		return true
	}
	p.pending = p.pending[:n]
	return false
}

func (p *parser) value() {
	p.ws()
	if p.i >= len(p.s) {
		p.emitString("null")
		p.r |= Truncated | MissingValue
		return
	}
	c := p.s[p.i]
	switch {
	case c == '{':
		p.object()
	case c == '[':
		p.array()
	case c == '-' || c == '+' || c == '.' || isDigit(c):
		p.number()
	case c == ',' || c == '}' || c == ']':
		p.emitString("null")
		p.r |= MissingValue
	default:
		if q, _ := quoteAt(p.s, p.i); q != 0 {
			p.str()
		} else {
			p.word()
		}
	}
}

func (p *parser) enter() bool {
	p.depth++
	if p.depth > maxDepth {
		p.bad = true
	}
	return p.bad
}

func (p *parser) object() {
	p.i++
	if p.enter() {
		return
	}
	p.emit('{')
	n, comma := 0, -1 // members written; where the last comma was written (-1: none since the last member)
	afterComma, closed := false, false
	for !p.bad {
		p.ws()
		if p.i >= len(p.s) {
			p.r |= Truncated
			break
		}
		c := p.s[p.i]
		if c == '}' || c == ']' {
			closed = true
			if c == '}' {
				p.i++
			} else {
				p.r |= Bracket
			}
			if afterComma {
				p.r |= TrailingComma
			}
			break
		}
		if c == ',' {
			p.i++
			if n == 0 || afterComma {
				p.r |= StrayComma
				continue
			}
			p.emit(',')
			comma, afterComma = len(p.b)-1, true
			continue
		}
		if l := ellipsisAt(p.s, p.i); l > 0 {
			p.i += l
			p.r |= Ellipsis
			p.pending = p.pending[:0]
			continue
		}
		q, _ := quoteAt(p.s, p.i)
		if q == 0 && !isKeyChar(c) && c < 0x80 {
			p.i++
			p.r |= StrayChar
			continue
		}
		if n > 0 && !afterComma { // before the whitespace: 1,\n 2
			p.r |= MissingComma
			p.b = append(p.b, ',')
		}
		afterComma, comma = false, -1
		if q != 0 {
			p.str()
		} else {
			p.bareKey()
		}
		p.ws()
		if p.i >= len(p.s) {
			p.b = append(p.b, ":null"...)
			p.r |= Truncated | MissingValue
			n++
			break
		}
		switch c := p.s[p.i]; {
		case c == ':':
			p.i++
			p.emit(':')
		case c == '=': // {a = 1}
			p.i++
			p.r |= MissingColon
			p.pending = p.pending[:0]
			p.b = append(p.b, ':')
		case c == ',' || c == '}' || c == ']':
			p.b = append(p.b, ':')
		default:
			p.r |= MissingColon
			p.b = append(p.b, ':')
		}
		p.ws()
		if p.i >= len(p.s) {
			p.b = append(p.b, "null"...)
			p.r |= Truncated | MissingValue
			n++
			break
		}
		p.value()
		n++
	}
	if p.bad {
		return
	}
	if afterComma && comma >= 0 { // a trailing comma, or one before the input ended
		p.b = append(p.b[:comma], p.b[comma+1:]...)
	}
	if closed {
		p.emit('}')
	} else { // cut off: the whitespace at the end goes
		p.pending = p.pending[:0]
		p.b = append(p.b, '}')
	}
	p.depth--
}

func (p *parser) array() {
	p.i++
	if p.enter() {
		return
	}
	p.emit('[')
	n, comma := 0, -1
	afterComma, closed := false, false
	for !p.bad {
		p.ws()
		if p.i >= len(p.s) {
			p.r |= Truncated
			break
		}
		c := p.s[p.i]
		if c == ']' || c == '}' {
			closed = true
			if c == ']' {
				p.i++
			} else {
				p.r |= Bracket
			}
			if afterComma {
				p.r |= TrailingComma
			}
			break
		}
		if c == ',' {
			p.i++
			if n == 0 || afterComma {
				p.r |= StrayComma
				continue
			}
			p.emit(',')
			comma, afterComma = len(p.b)-1, true
			continue
		}
		if l := ellipsisAt(p.s, p.i); l > 0 {
			p.i += l
			p.r |= Ellipsis
			p.pending = p.pending[:0]
			continue
		}
		if c == ':' {
			p.i++
			p.r |= StrayChar
			continue
		}
		if n > 0 && !afterComma { // before the whitespace: 1,\n 2
			p.r |= MissingComma
			p.b = append(p.b, ',')
		}
		afterComma, comma = false, -1
		at := p.i
		p.value()
		n++
		if p.i == at { // never stall
			p.i++
			p.r |= StrayChar
		}
	}
	if p.bad {
		return
	}
	if afterComma && comma >= 0 {
		p.b = append(p.b[:comma], p.b[comma+1:]...)
	}
	if closed {
		p.emit(']')
	} else {
		p.pending = p.pending[:0]
		p.b = append(p.b, ']')
	}
	p.depth--
}

// Quote kinds.
const (
	qDouble = 1 + iota
	qSingle
	qBack
	qSmartDouble
	qSmartSingle
)

// quoteAt returns the kind of quote that starts at s[i] and its length.
func quoteAt(s string, i int) (kind, n int) {
	switch s[i] {
	case '"':
		return qDouble, 1
	case '\'':
		return qSingle, 1
	case '`':
		return qBack, 1
	case 0xE2:
		if i+2 < len(s) && s[i+1] == 0x80 {
			switch s[i+2] {
			case 0x9C, 0x9D, 0x9E, 0x9F: // “ ” „ ‟
				return qSmartDouble, 3
			case 0x98, 0x99, 0x9A, 0x9B: // ‘ ’ ‚ ‛
				return qSmartSingle, 3
			}
		}
	}
	return 0, 0
}

// closerAt returns the length of a quote at s[i] that may close a string
// opened with a quote of kind open, or 0.
func closerAt(s string, i, open int) int {
	k, n := quoteAt(s, i)
	switch open {
	case qSmartDouble:
		if k == qSmartDouble || k == qDouble {
			return n
		}
	case qSmartSingle:
		if k == qSmartSingle || k == qSingle {
			return n
		}
	default:
		if k == open {
			return n
		}
	}
	return 0
}

// str writes the string (a key or a value) that starts at p.i.
func (p *parser) str() {
	open, n := quoteAt(p.s, p.i)
	p.i += n
	p.r |= quoteRepair(open)
	p.emit('"')
	s := p.s
	for {
		// The text up to the next byte that may need a decision, at once.
		j := p.i
		for j < len(s) {
			if c := s[j]; c < 0x20 || c == '"' || c == '\\' || c == '\'' || c == '`' || c == 0xE2 {
				break
			}
			j++
		}
		p.b = append(p.b, s[p.i:j]...)
		p.i = j
		if p.i >= len(s) {
			p.r |= Truncated
			break
		}
		if m := closerAt(s, p.i, open); m > 0 {
			end := p.i + m
			if endsString(s, end) {
				p.i = end
				// "a" + "b": one string.
				if j := concatAt(s, end); j > 0 {
					p.r |= Concatenation
					open, n = quoteAt(s, j)
					p.r |= quoteRepair(open)
					p.i = j + n
					continue
				}
				break
			}
			// A quote inside the text.
			if s[p.i] == '"' {
				p.b = append(p.b, '\\', '"')
				if open == qDouble {
					p.r |= UnescapedQuote
				}
			} else {
				p.b = append(p.b, s[p.i:end]...)
			}
			p.i = end
			continue
		}
		c := s[p.i]
		switch {
		case c == '\\':
			p.escape(open)
		case c == '"':
			p.b = append(p.b, '\\', '"')
			p.i++
		case c < 0x20:
			p.b = appendControl(p.b, c)
			p.r |= ControlChar
			p.i++
		default:
			p.b = append(p.b, c)
			p.i++
		}
	}
	p.b = append(p.b, '"')
}

func quoteRepair(kind int) Repairs {
	switch kind {
	case qSingle:
		return SingleQuotes
	case qBack:
		return Backticks
	case qSmartDouble, qSmartSingle:
		return SmartQuotes
	}
	return 0
}

// endsString reports whether a quote that ends at s[j] closes its string:
// whether what follows is what can follow a string (a comma, colon,
// bracket, the end of the line or the input, a comment, the next string
// or key after a missing comma). Otherwise it is a quote inside the text:
// "He said "hi" to me".
func endsString(s string, j int) bool {
	k := j
	lim := min(len(s), j+window)
	for k < lim && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	if k >= len(s) {
		return true
	}
	if k >= lim {
		return false
	}
	switch c := s[k]; {
	case c == ',' || c == ':' || c == '}' || c == ']' || c == '\n' || c == '\r':
		return true
	case c == '/' && k+1 < len(s) && (s[k+1] == '/' || s[k+1] == '*'):
		return true
	case c == '+':
		return concatAt(s, j) > 0
	case k > j:
		// After a space: the next string, or a bare key and its colon.
		if q, _ := quoteAt(s, k); q != 0 {
			return true
		}
		if isKeyChar(c) {
			m := k
			for m < lim && isKeyChar(s[m]) {
				m++
			}
			for m < lim && (s[m] == ' ' || s[m] == '\t') {
				m++
			}
			return m < lim && s[m] == ':'
		}
	}
	return false
}

// concatAt returns where the next string starts in `"a" + "b"` (j is just
// after the first's closing quote), or 0.
func concatAt(s string, j int) int {
	lim := min(len(s), j+window)
	k := j
	for k < lim && isSpace(s[k]) {
		k++
	}
	if k >= lim || s[k] != '+' {
		return 0
	}
	k++
	for k < lim && isSpace(s[k]) {
		k++
	}
	if k < lim {
		if q, _ := quoteAt(s, k); q != 0 {
			return k
		}
	}
	return 0
}

// escape writes the backslash escape at p.i.
func (p *parser) escape(open int) {
	s := p.s
	if p.i+1 >= len(s) { // cut off after the backslash
		p.i++
		p.r |= Truncated
		return
	}
	switch d := s[p.i+1]; d {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		p.b = append(p.b, '\\', d)
		p.i += 2
	case 'u':
		h := p.i + 2
		k := h
		for k < len(s) && k < h+4 && isHex(s[k]) {
			k++
		}
		switch {
		case k == h+4:
			p.b = append(p.b, s[p.i:k]...)
			p.i = k
		case k == len(s): // cut off inside the escape
			p.i = k
			p.r |= Truncated
		default:
			p.b = append(p.b, '\\', '\\')
			p.i++
			p.r |= InvalidEscape
		}
	case '\'':
		p.b = append(p.b, '\'')
		p.i += 2
		if open != qSingle {
			p.r |= InvalidEscape
		}
	case '\n':
		p.b = append(p.b, '\\', 'n')
		p.i += 2
		p.r |= InvalidEscape
	default:
		// \d, \x, \( ...: a literal backslash.
		p.b = append(p.b, '\\', '\\')
		p.i++
		p.r |= InvalidEscape
	}
}

func appendControl(b []byte, c byte) []byte {
	switch c {
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	}
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
}

// bareKey writes an unquoted key: {name: 1}.
func (p *parser) bareKey() {
	s := p.s
	start := p.i
	for p.i < len(s) && isKeyChar(s[p.i]) {
		if s[p.i] >= 0x80 && (specialSpace(s, p.i) > 0 || closerAt(s, p.i, qSmartDouble)+closerAt(s, p.i, qSmartSingle) > 0) {
			break
		}
		p.i++
	}
	if p.i == start { // a non-ASCII character that is not part of a key
		p.i++
		start = p.i
	}
	p.r |= UnquotedKey
	p.emit('"')
	p.b = appendText(p.b, s[start:p.i])
	p.b = append(p.b, '"')
}

// number writes the number at p.i, repaired, or the word it turns out to
// be part of (10px, 2024-01-15, -Infinity).
func (p *parser) number() {
	s := p.s
	start, mark := p.i, len(p.b)
	i := start
	p.b = append(p.b, p.pending...)
	switch s[i] {
	case '+':
		i++
		p.r |= NumberFormat
	case '-':
		p.b = append(p.b, '-')
		i++
	}
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	var r Repairs
	switch {
	case j > i:
		d := s[i:j]
		if len(d) > 1 && d[0] == '0' { // 007
			for len(d) > 1 && d[0] == '0' {
				d = d[1:]
			}
			r |= NumberFormat
		}
		p.b = append(p.b, d...)
	case j < len(s) && s[j] == '.' && j+1 < len(s) && isDigit(s[j+1]): // .5
		p.b = append(p.b, '0')
		r |= NumberFormat
	case j >= len(s): // cut off after the sign
		p.b = append(p.b[:mark], p.pending...)
		p.b = append(p.b, "null"...)
		p.pending = p.pending[:0]
		p.i = j
		p.r |= Truncated | MissingValue
		return
	default: // -Infinity, +inf, ...
		p.b = p.b[:mark]
		p.word()
		return
	}
	i = j
	if i < len(s) && s[i] == '.' {
		j = i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		switch {
		case j > i+1:
			p.b = append(p.b, s[i:j]...)
		case j >= len(s):
			r |= Truncated
		default:
			r |= NumberFormat // 1.
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j = i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		switch {
		case k > j:
			p.b = append(p.b, s[i:k]...)
			i = k
		case k >= len(s): // cut off in the exponent
			r |= Truncated
			i = k
		}
	}
	if i < len(s) && !endsNumber(s, i) {
		p.b = p.b[:mark]
		p.i = start
		p.word()
		return
	}
	p.pending = p.pending[:0]
	p.r |= r
	p.i = i
}

func endsNumber(s string, i int) bool {
	switch c := s[i]; c {
	case ' ', '\t', '\n', '\r', ',', '}', ']', '/', ';':
		return true
	default:
		return c >= 0x80 && specialSpace(s, i) > 0
	}
}

// word writes the bare word at p.i: a literal of another language, a
// literal cut off, or text that lacks its quotes.
func (p *parser) word() {
	s := p.s
	start := p.i
	i := start
	for i < len(s) {
		c := s[i]
		if c == ',' || c == '}' || c == ']' || c == '\n' || c == '\r' {
			break
		}
		if i > start && (s[i-1] == ' ' || s[i-1] == '\t') {
			if c == '/' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == '*') {
				break
			}
			if q, _ := quoteAt(s, i); q != 0 {
				break
			}
		}
		i++
	}
	w := trimSpaceRight(s[start:i])
	p.i = start + len(w)
	switch w {
	case "true", "false", "null":
		p.emitString(w)
	case "True", "TRUE":
		p.emitString("true")
		p.r |= PythonLiteral
	case "False", "FALSE":
		p.emitString("false")
		p.r |= PythonLiteral
	case "None", "NULL", "Null":
		p.emitString("null")
		p.r |= PythonLiteral
	case "NaN", "nan", "NAN", "-NaN", "-nan", "Infinity", "+Infinity", "-Infinity", "inf", "+inf", "-inf", "Inf", "-Inf", "+Inf":
		p.emitString("null")
		p.r |= NonFinite
	case "undefined":
		p.emitString("null")
		p.r |= Undefined
	default:
		if i == len(s) && len(w) > 0 {
			for _, lit := range [...]string{"true", "false", "null"} {
				if len(w) < len(lit) && lit[:len(w)] == w { // cut off: tr, fal, nu
					p.emitString(lit)
					p.r |= Truncated
					return
				}
			}
		}
		if len(w) == 0 { // only reached for characters that start nothing
			p.emitString("null")
			p.r |= MissingValue
			if p.i < len(s) {
				p.i++
			}
			return
		}
		p.emit('"')
		p.b = appendText(p.b, w)
		p.b = append(p.b, '"')
		p.r |= UnquotedString
	}
}

// appendText writes s as the inside of a JSON string.
func appendText(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = appendControl(b, c)
		default:
			b = append(b, c)
		}
	}
	return b
}

func ellipsisAt(s string, i int) int {
	if strings.HasPrefix(s[i:], "...") {
		return 3
	}
	if strings.HasPrefix(s[i:], "\u2026") {
		return 3
	}
	return 0
}

// specialSpace returns the length of a non-ASCII space at s[i] (no-break
// spaces, the byte-order mark, the typographic spaces), or 0.
func specialSpace(s string, i int) int {
	switch {
	case strings.HasPrefix(s[i:], "\u00a0"):
		return 2
	case strings.HasPrefix(s[i:], "\ufeff"), strings.HasPrefix(s[i:], "\u202f"),
		strings.HasPrefix(s[i:], "\u205f"), strings.HasPrefix(s[i:], "\u3000"):
		return 3
	case i+2 < len(s) && s[i] == 0xE2 && s[i+1] == 0x80 && s[i+2] >= 0x80 && s[i+2] <= 0x8B: // U+2000–U+200B
		return 3
	}
	return 0
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		if isSpace(s[i]) {
			i++
		} else if n := specialSpace(s, i); n > 0 {
			i += n
		} else {
			break
		}
	}
	return i
}

func trimSpaceRight(s string) string {
	for len(s) > 0 {
		switch {
		case isSpace(s[len(s)-1]):
			s = s[:len(s)-1]
		case strings.HasSuffix(s, "\u00a0"):
			s = s[:len(s)-2]
		default:
			return s
		}
	}
	return s
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isLetter(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// isKeyChar reports whether c may be part of an unquoted key: letters,
// digits, _ $ @ - . and any non-ASCII byte (bareKey stops at non-ASCII
// spaces and quotes).
func isKeyChar(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_' || c == '$' || c == '@' || c == '-' || c == '.' || c >= 0x80
}
