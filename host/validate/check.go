// Package validate checks request bodies against the interface (spec
// sections 2.1–2.6 and 8) before anything else runs, so a caller learns what
// is wrong — the field, its JSON path and the rule — with a 400 instead of a
// provider's confusing error: "messages[2].role: must be one of system, …".
//
// Cost: one pass (jsonwalk.Scan) checks the syntax and indexes where
// objects and arrays end (and bounds their depth), and one walk checks
// every rule (walk.go). The walk skips strings with memchr and unescapes a string only
// when a rule needs its text, so a long message content full of \n escapes
// is never copied. Checking allocates nothing but an invalid request's
// error message; the typed request the same walk fills (ChatRequest,
// EmbeddingsRequest: model ids, parameter names, preferences, the prompt
// bound) is what a valid request costs, once, instead of every later stage
// reading the body again.
//
// Choices where the spec is silent, in one place:
//   - Unknown top-level fields are accepted (and dropped per endpoint later):
//     OpenAI clients send new fields faster than gateways learn them, and a
//     400 would break unchanged SDKs. Unknown fields inside objects whose
//     shape is fully specified (provider, a built-in plugin, stream_options,
//     reasoning, cache_control, debug, web user_location, fusion tools, an
//     embeddings multimodal item) are a 400 naming them, so a typo is not
//     silently ignored. Unknown fields inside messages, content parts, tools
//     and response_format.json_schema are accepted (providers extend them).
//   - Fields the spec marks nullable accept null; the others do not.
//   - A key sent twice in one object is a 400: parsers disagree on which
//     occurrence wins, so what was validated must not depend on it.
//   - A model id is <vendor>/<model_name> with exactly one slash, optionally
//     followed by :<variant> (openai/gpt-4o:free), without spaces. The
//     request's model (and models) may also be a name without a vendor
//     (gpt-4o-mini, as OpenAI's SDK examples send it): the catalog's aliases
//     resolve it, or the router answers 400 with the closest catalog ids
//     (docs/interface-choices.md).
//   - Bodies nesting objects and arrays deeper than MaxDepth are refused.
//   - Other choices are documented where they are made: tool_choice shapes
//     (toolChoice), provider shapes (provider), plugins not built in
//     (plugin), stop conditions (stopCondition), embeddings input
//     (Embeddings).
package validate

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/tidwall/gjson"
)

// MaxDepth bounds the nesting of objects and arrays in a request body. JSON
// schemas in tools and response_format stay far below it; the bound keeps a
// body of ten million "[" from costing seconds and a gigabyte of stack in a
// recursive parser.
const MaxDepth = 128

// parse checks the body is one JSON object. It returns the object and the
// validator to walk it with; call v.done when finished.
func parse(body []byte) (gjson.Result, *validator, *apierr.Error) {
	s := jsonwalk.String(body)
	i := jsonwalk.WS(s, 0)
	if i == len(s) {
		return gjson.Result{}, nil, apierr.BadRequest("", "request body is empty; send a JSON object")
	}
	v := getValidator(s)
	switch v.Scan(MaxDepth) { // the syntax and the index in one pass
	case jsonwalk.TooDeep:
		v.done()
		return gjson.Result{}, nil, apierr.BadRequest("", "request body nests objects and arrays deeper than %d levels", MaxDepth)
	case jsonwalk.Invalid:
		v.done()
		return gjson.Result{}, nil, apierr.BadRequest("", "request body is not valid JSON")
	}
	root, _ := v.ValueAt(i)
	if !root.IsObject() {
		v.done()
		return gjson.Result{}, nil, apierr.BadRequest("", "request body must be a JSON object, got %s", describe(root))
	}
	return root, v, nil
}

// seg is one step of a JSON path: a member name, or an index when idx >= 0.
type seg struct {
	key string
	idx int
}

// maxPath is deeper than any path a rule reports
// (messages[0].content[0].image_url.url is 5 steps).
const maxPath = 12

// validator tracks the JSON path of the value being checked, so an error
// can name it; the path string is built only when an error is.
type validator struct {
	jsonwalk.Doc
	segs  [maxPath]seg
	depth int
	// nulls and legacy are ChatRequest's Nulls and Legacy, seen on the way;
	// messages counts the messages, parts says one has content parts (so
	// perhaps an image), for the prompt's bound (ChatRequest.finish).
	nulls, legacy, parts bool
	messages             int
}

func (v *validator) in(key string) {
	if v.depth < maxPath {
		v.segs[v.depth] = seg{key: key, idx: -1}
	}
	v.depth++
}

func (v *validator) at(i int) {
	if v.depth < maxPath {
		v.segs[v.depth] = seg{idx: i}
	}
	v.depth++
}

func (v *validator) out() { v.depth-- }

// path renders the current path, e.g. messages[2].content[0].text.
func (v *validator) path() string {
	var b strings.Builder
	for i := 0; i < v.depth && i < maxPath; i++ {
		s := v.segs[i]
		if s.idx >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(clip(s.key, 64))
	}
	return b.String()
}

// fail is a 400 naming the current path.
func (v *validator) fail(format string, args ...any) *apierr.Error {
	return apierr.BadRequest(v.path(), format, args...)
}

// failAt is a 400 naming the member key of the current path.
func (v *validator) failAt(key, format string, args ...any) *apierr.Error {
	v.in(key)
	defer v.out()
	return v.fail(format, args...)
}

// field runs check on member key of the current value; a missing member is
// "required" (call it for optional members only when they exist).
func (v *validator) field(key string, x gjson.Result, check func(gjson.Result) *apierr.Error) *apierr.Error {
	v.in(key)
	defer v.out()
	if !x.Exists() {
		return v.fail("required")
	}
	return check(x)
}

// each calls fn for every member of object x with the path extended by the
// member's key. x must be an object. A key sent twice is an error: parsers
// disagree on which occurrence wins (gjson takes the first, most others the
// last), so a validated body must not depend on it.
func (v *validator) each(x gjson.Result, fn func(key string, y gjson.Result) *apierr.Error) *apierr.Error {
	var err *apierr.Error
	var seen keySet
	v.Members(x, func(k string, y gjson.Result) bool {
		v.in(k)
		if !seen.add(k) {
			err = v.duplicate()
		} else {
			err = fn(k, y)
		}
		v.out()
		return err == nil
	})
	return err
}

func (v *validator) duplicate() *apierr.Error {
	return v.fail("duplicate field; send it once")
}

// keySet remembers the first 32 keys of an object to find duplicates
// without allocating; later keys are checked against those.
type keySet struct {
	keys [32]string
	n    int
}

// add reports false if k was added before.
func (s *keySet) add(k string) bool {
	for _, have := range s.keys[:s.n] {
		if have == k {
			return false
		}
	}
	if s.n < len(s.keys) {
		s.keys[s.n] = k
		s.n++
	}
	return true
}

// items checks that x is an array of min to max items (max < 0: no bound)
// and calls fn, if not nil, for each with the path extended by its index.
func (v *validator) items(x gjson.Result, min, max int, fn func(i int, y gjson.Result) *apierr.Error) *apierr.Error {
	if !x.IsArray() {
		return v.fail("must be an array, got %s", describe(x))
	}
	n := 0
	var err *apierr.Error
	v.Elements(x, func(i int, y gjson.Result) bool {
		n++
		if max >= 0 && n > max {
			return false
		}
		if fn != nil {
			v.at(i)
			err = fn(i, y)
			v.out()
		}
		return err == nil
	})
	switch {
	case err != nil:
		return err
	case max >= 0 && n > max:
		return v.fail("at most %d items, got %d", max, v.Count(x))
	case n < min && min == 1:
		return v.fail("must have at least 1 item")
	case n < min:
		return v.fail("must have at least %d items, got %d", min, n)
	}
	return nil
}

// describe names the JSON type of x for "got …" in messages.
func describe(x gjson.Result) string {
	switch {
	case !x.Exists():
		return "nothing"
	case x.Type == gjson.Null:
		return "null"
	case x.Type == gjson.String:
		return "a string"
	case x.Type == gjson.Number:
		return "a number"
	case x.Type == gjson.True || x.Type == gjson.False:
		return "a boolean"
	case x.IsArray():
		return "an array"
	}
	return "an object"
}

// clip bounds caller-supplied text echoed in a message, on a rune boundary.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// shown is a value as the caller wrote it, bounded, for "got …".
func shown(x gjson.Result) string {
	if !x.Exists() {
		return "nothing"
	}
	return clip(x.Raw, 40)
}

func isNull(x gjson.Result) bool { return x.Type == gjson.Null }

func (v *validator) boolean(x gjson.Result) *apierr.Error {
	if x.Type != gjson.True && x.Type != gjson.False {
		return v.fail("must be a boolean, got %s", describe(x))
	}
	return nil
}

func (v *validator) nullBool(x gjson.Result) *apierr.Error {
	if isNull(x) {
		return nil
	}
	return v.boolean(x)
}

func (v *validator) str(x gjson.Result) *apierr.Error {
	if x.Type != gjson.String {
		return v.fail("must be a string, got %s", describe(x))
	}
	return nil
}

func (v *validator) nonEmpty(x gjson.Result) *apierr.Error {
	if x.Type != gjson.String {
		return v.fail("must be a non-empty string, got %s", describe(x))
	}
	if x.Raw == `""` {
		return v.fail("must not be empty")
	}
	return nil
}

// maxChars checks a string of at most n characters (Unicode code points).
func (v *validator) maxChars(x gjson.Result, n int) *apierr.Error {
	if err := v.str(x); err != nil {
		return err
	}
	if len(x.Raw)-2 <= n { // a character is at least one byte
		return nil
	}
	if c := utf8.RuneCountInString(text(x)); c > n {
		return v.fail("at most %d characters, got %d", n, c)
	}
	return nil
}

// enum checks a string among values.
func (v *validator) enum(x gjson.Result, values []string) *apierr.Error {
	if x.Type == gjson.String {
		s := text(x)
		for _, e := range values {
			if s == e {
				return nil
			}
		}
	}
	return v.fail("must be one of %s, got %s", strings.Join(values, ", "), shown(x))
}

func (v *validator) nullEnum(x gjson.Result, values []string) *apierr.Error {
	if isNull(x) {
		return nil
	}
	return v.enum(x, values)
}

// number checks a JSON number in [lo, hi].
func (v *validator) number(x gjson.Result, lo, hi float64) *apierr.Error {
	if x.Type != gjson.Number {
		return v.fail("must be a number between %s and %s, got %s", fmtNum(lo), fmtNum(hi), describe(x))
	}
	if f := x.Num; !(f >= lo && f <= hi) {
		return v.fail("must be a number between %s and %s, got %s", fmtNum(lo), fmtNum(hi), shown(x))
	}
	return nil
}

func (v *validator) nullNumber(x gjson.Result, lo, hi float64) *apierr.Error {
	if isNull(x) {
		return nil
	}
	return v.number(x, lo, hi)
}

// atLeast checks a finite JSON number >= lo (or > lo when strict).
func (v *validator) atLeast(x gjson.Result, lo float64, strict bool) *apierr.Error {
	word := "at least"
	if strict {
		word = "greater than"
	}
	if x.Type != gjson.Number {
		return v.fail("must be a number %s %s, got %s", word, fmtNum(lo), describe(x))
	}
	f := x.Num
	if math.IsInf(f, 0) || f < lo || (strict && f == lo) {
		return v.fail("must be a number %s %s, got %s", word, fmtNum(lo), shown(x))
	}
	return nil
}

// integer checks an integral JSON number in [lo, hi]. 16.0 and 1e3 are
// integers; 1.5, "16" and numbers beyond 64 bits are not.
func (v *validator) integer(x gjson.Result, lo, hi int64) *apierr.Error {
	n, ok := integral(x)
	if !ok {
		return v.fail("must be an integer%s, got %s", rangeText(lo, hi), describeNum(x))
	}
	if n < lo || n > hi {
		return v.fail("must be an integer%s, got %s", rangeText(lo, hi), shown(x))
	}
	return nil
}

func (v *validator) nullInteger(x gjson.Result, lo, hi int64) *apierr.Error {
	if isNull(x) {
		return nil
	}
	return v.integer(x, lo, hi)
}

// integral reads an integral JSON number that fits in an int64.
func integral(x gjson.Result) (int64, bool) {
	if x.Type != gjson.Number {
		return 0, false
	}
	if !strings.ContainsAny(x.Raw, ".eE") {
		n, err := strconv.ParseInt(x.Raw, 10, 64)
		return n, err == nil
	}
	f := x.Num
	// 2^63 is the first float64 beyond int64; -2^63 itself fits.
	if f != math.Trunc(f) || f >= 9.223372036854775807e18 || f < -9.223372036854775807e18 {
		return 0, false
	}
	return int64(f), true
}

func rangeText(lo, hi int64) string {
	switch {
	case lo == math.MinInt64 && hi == math.MaxInt64:
		return " (64-bit)"
	case hi == math.MaxInt64:
		return " of at least " + strconv.FormatInt(lo, 10)
	}
	return " between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10)
}

// describeNum is what was sent where an integer was expected.
func describeNum(x gjson.Result) string {
	if x.Type == gjson.Number {
		return shown(x)
	}
	return describe(x)
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// object checks x is a JSON object.
func (v *validator) object(x gjson.Result) *apierr.Error {
	if !x.Exists() {
		return v.fail("required: an object")
	}
	if !x.IsObject() {
		return v.fail("must be an object, got %s", describe(x))
	}
	return nil
}

// strArray checks an array of strings (of any length).
func (v *validator) strArray(x gjson.Result) *apierr.Error {
	return v.items(x, 0, -1, func(_ int, y gjson.Result) *apierr.Error { return v.str(y) })
}

// modelID checks a model identifier: <vendor>/<model_name>, optionally with
// a :variant suffix (openai/gpt-4o:free). Exactly one slash; no spaces.
func (v *validator) modelID(x gjson.Result) *apierr.Error {
	if x.Type != gjson.String {
		return v.fail("must be a model id string such as openai/gpt-4o, got %s", describe(x))
	}
	if !isModelID(text(x)) {
		return v.fail("must be a model id of the form <vendor>/<model_name> (optionally :<variant>), such as openai/gpt-4o, got %s", shown(x))
	}
	return nil
}

// requestModel checks the request's model or an item of models: a model
// id, or a bare name for the catalog's aliases (no slash, no spaces).
func (v *validator) requestModel(x gjson.Result) *apierr.Error {
	if x.Type == gjson.String && isAliasName(text(x)) {
		return nil
	}
	return v.modelID(x)
}

func isAliasName(s string) bool {
	if s == "" || strings.ContainsAny(s, "/") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	return true
}

func isModelID(s string) bool {
	vendor, name, ok := strings.Cut(s, "/")
	if !ok || vendor == "" || name == "" || strings.ContainsAny(name, "/") || strings.ContainsAny(vendor, ":") {
		return false
	}
	if base, variant, ok := strings.Cut(name, ":"); ok && (base == "" || variant == "" || strings.ContainsAny(variant, ":")) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	return true
}
