package wire

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/switchyard/switchyard/host/usage"

	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// ParseUsage reads the OpenAI-style "usage" object of a response body or a
// stream chunk. ok is false when the body has no usage with token counts
// (the caller then counts tokens itself, see host/tokenize).
//
// Read: prompt_tokens, completion_tokens, total_tokens (prompt is derived
// from it when missing, as embeddings report only these two),
// prompt_tokens_details.cached_tokens and .audio_tokens,
// completion_tokens_details.reasoning_tokens and .audio_tokens.
func ParseUsage(body []byte) (u usage.Usage, ok bool) {
	// Read in place (GetBytes copies the result): nothing read outlives
	// the call.
	return usageOf(gjson.Get(unsafe.String(unsafe.SliceData(body), len(body)), "usage"), body)
}

// usageOf is ParseUsage of body, whose usage member is us.
func usageOf(us gjson.Result, body []byte) (u usage.Usage, ok bool) {
	if !us.IsObject() {
		return usage.Usage{}, false
	}
	if !jsonwalk.Valid(us.Raw) {
		return parseUsageByGet(body)
	}
	// Each object's members in one pass (members, repair.go): a Get per
	// count rescanned the usage object nine times.
	var f [5]gjson.Result
	members(us, usageReadNames[:], f[:])
	p, c, t := f[0], f[1], f[2]
	num := func(r gjson.Result) bool { return r.Type == gjson.Number }
	if !num(p) && !num(c) && !num(t) {
		return usage.Usage{}, false
	}
	u.PromptTokens, u.CompletionTokens = p.Int(), c.Int()
	if !num(p) && num(t) {
		u.PromptTokens = t.Int() - u.CompletionTokens
	}
	pd := details(us, f[3], "prompt_tokens_details", promptDetailNames)
	cd := details(us, f[4], "completion_tokens_details", completionDetailNames)
	u.CachedTokens = pd[0].Int()
	u.ReasoningTokens = cd[0].Int()
	u.AudioTokens = pd[1].Int() + cd[1].Int()
	u.Requests = 1
	for _, r := range [...]gjson.Result{p, c, t, pd[0], cd[0]} {
		if !plausible(r) {
			// A count no request can produce is a broken or lying
			// upstream: the caller counts the tokens itself instead.
			return usage.Usage{}, false
		}
	}
	return u, true
}

// details reads the members names of the details object d, member name
// of usage us. A d that is not an object is rare and read path by path:
// gjson's path then goes on to a later member of the same name.
func details(us, d gjson.Result, name string, names [2]string) (out [2]gjson.Result) {
	if d.IsObject() || !d.Exists() {
		members(d, names[:], out[:])
		return out
	}
	for i, n := range names {
		out[i] = us.Get(name + "." + n)
	}
	return out
}

// The members of a usage object ParseUsage reads.
var (
	usageReadNames        = [...]string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"}
	promptDetailNames     = [...]string{"cached_tokens", "audio_tokens"}
	completionDetailNames = [...]string{"reasoning_tokens", "audio_tokens"}
)

// parseUsageByGet is ParseUsage a Get per count: the definition
// FuzzParseUsage holds the one-pass reading to, and the reading of a usage
// object that is not valid JSON (whatever gjson makes of it).
func parseUsageByGet(body []byte) (u usage.Usage, ok bool) {
	us := gjson.GetBytes(body, "usage")
	if !us.IsObject() {
		return usage.Usage{}, false
	}
	p, c, t := us.Get("prompt_tokens"), us.Get("completion_tokens"), us.Get("total_tokens")
	num := func(r gjson.Result) bool { return r.Type == gjson.Number }
	if !num(p) && !num(c) && !num(t) {
		return usage.Usage{}, false
	}
	u.PromptTokens, u.CompletionTokens = p.Int(), c.Int()
	if !num(p) && num(t) {
		u.PromptTokens = t.Int() - u.CompletionTokens
	}
	u.CachedTokens = us.Get("prompt_tokens_details.cached_tokens").Int()
	u.ReasoningTokens = us.Get("completion_tokens_details.reasoning_tokens").Int()
	u.AudioTokens = us.Get("prompt_tokens_details.audio_tokens").Int() + us.Get("completion_tokens_details.audio_tokens").Int()
	u.Requests = 1
	for _, r := range []gjson.Result{p, c, t, us.Get("prompt_tokens_details.cached_tokens"),
		us.Get("completion_tokens_details.reasoning_tokens")} {
		if !plausible(r) {
			// A count no request can produce is a broken or lying
			// upstream: the caller counts the tokens itself instead.
			return usage.Usage{}, false
		}
	}
	return u, true
}

// MaxPlausibleTokens is the largest token count ParseUsage believes: a
// hundred times the longest context window on offer today. Larger counts,
// negative ones and fractions are treated as no usage at all.
const MaxPlausibleTokens = 100_000_000

func plausible(r gjson.Result) bool {
	if !r.Exists() || r.Type == gjson.Null {
		return true
	}
	if r.Type != gjson.Number {
		return false
	}
	return r.Num >= 0 && r.Num <= MaxPlausibleTokens && r.Num == float64(int64(r.Num))
}

// WriteUsage sets the "usage" object of a response body or of the final
// stream chunk from a settled generation: token counts (prompt_tokens,
// completion_tokens, total_tokens, prompt_tokens_details.cached_tokens and
// completion_tokens_details.reasoning_tokens, 0 included, and "estimated":
// true when the gateway counted them), "cost" (dollars charged for the
// request, failed attempts included) and "cost_details" (OpenRouter's
// upstream_inference_* members, then the final attempt's parts plus failed
// attempts and anything uncollected). Other fields of an existing usage object are kept.
// Amounts are written as exact decimal numbers of dollars. body is valid
// JSON (RepairCompletion has checked it, or the gateway wrote it).
//
// It runs once per request: the usage object is rebuilt in one pass over
// the upstream's (mergeUsage) and spliced into the body where it was,
// instead of one sjson set per field, each re-reading the object. Shapes
// the pass does not handle go through writeUsageBySets, the field-by-field
// definition it is fuzzed against.
func WriteUsage(body []byte, g *usage.Generation) ([]byte, error) {
	// Read in place (GetBytes copies the result): mergeUsage copies what it
	// keeps, and body is not changed while cur is in use.
	cur := gjson.Get(unsafe.String(unsafe.SliceData(body), len(body)), "usage")
	old := cur.Raw
	if old == "" || old[0] != '{' {
		old = "{}"
	}
	if cur.Raw == "" || cur.Index <= 0 {
		obj, ok := mergeUsage(make([]byte, 0, len(old)+usageRoom), old, g)
		if !ok {
			return writeUsageBySets(body, g)
		}
		return sjson.SetRawBytes(body, "usage", obj)
	}
	// The new object is written straight into the answer's copy: one
	// allocation, sized for what WriteUsage adds.
	out := make([]byte, 0, len(body)+usageRoom)
	out = append(out, body[:cur.Index]...)
	out, ok := mergeUsage(out, old, g)
	if !ok {
		return writeUsageBySets(body, g)
	}
	return append(out, body[cur.Index+len(cur.Raw):]...), nil
}

// usageRoom is about what WriteUsage adds to an upstream's usage object:
// the cost, cost_details' twelve amounts, the token details (~600 bytes
// with a failed attempt's cost). More only costs a grow.
const usageRoom = 768

// usageKeys are the members of "usage" WriteUsage writes, in the order a
// missing one is appended.
var usageKeys = [...]string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details",
	"completion_tokens_details", "estimated", "cost", "cost_details"}

// mergeUsage appends to dst the usage object old (valid JSON, an object)
// with WriteUsage's members set: each replaces the first member of its name in
// place (a details object keeps its other members), the missing ones are
// appended, every other member is kept. ok is false for what it leaves to
// writeUsageBySets: invalid JSON, escaped keys, a details member that is
// an array.
func mergeUsage(dst []byte, old string, g *usage.Generation) (obj []byte, ok bool) {
	if !jsonwalk.Valid(old) || strings.IndexByte(old, '\\') >= 0 {
		return nil, false
	}
	u := g.Usage
	ok = true
	// A details member that is an array: sjson's set of a member of an
	// array is not ours to redo.
	setDetail := func(b []byte, cur gjson.Result, key string, n int64) ([]byte, bool) {
		if cur.IsArray() {
			ok = false
			return b, false
		}
		return detail(b, cur, key, n)
	}
	// value appends member i's new value; false: WriteUsage leaves the
	// member alone (a zero detail, estimated unset).
	value := func(b []byte, i int, cur gjson.Result) ([]byte, bool) {
		switch usageKeys[i] {
		case "prompt_tokens":
			return strconv.AppendInt(b, u.PromptTokens, 10), true
		case "completion_tokens":
			return strconv.AppendInt(b, u.CompletionTokens, 10), true
		case "total_tokens":
			return strconv.AppendInt(b, u.TotalTokens(), 10), true
		case "prompt_tokens_details":
			return setDetail(b, cur, "cached_tokens", u.CachedTokens)
		case "completion_tokens_details":
			return setDetail(b, cur, "reasoning_tokens", u.ReasoningTokens)
		case "estimated":
			if !u.Estimated {
				return b, false
			}
			return append(b, "true"...), true
		case "cost":
			return g.Charged.AppendUSD(b), true
		default: // cost_details
			return appendCostDetails(b, g), true
		}
	}
	b := setMembers(dst, gjson.Parse(old), usageKeys[:], value)
	if !ok {
		return nil, false
	}
	return b, true
}

// setMembers appends to b the object obj (valid JSON, keys without
// escapes) with the members named keys (at most 64) set by value: the
// first member of each name gets value's bytes in its place, a missing
// one is appended; value's false leaves the member as it was (a missing
// one is then not written). Every other member is copied as it is.
func setMembers(b []byte, obj gjson.Result, keys []string, value func(b []byte, i int, cur gjson.Result) ([]byte, bool)) []byte {
	b = append(b, '{')
	first := len(b) // no comma before the first member
	var done uint64 // bit i: keys[i] was met
	obj.ForEach(func(k, v gjson.Result) bool {
		if len(b) > first {
			b = append(b, ',')
		}
		b = append(b, k.Raw...)
		b = append(b, ':')
		for i, key := range keys {
			if done&(1<<i) == 0 && k.Str == key {
				done |= 1 << i
				var set bool
				if b, set = value(b, i, v); set {
					return true
				}
				break
			}
		}
		b = append(b, v.Raw...)
		return true
	})
	for i, key := range keys {
		if done&(1<<i) != 0 {
			continue
		}
		n := len(b)
		if len(b) > first {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		var set bool
		if b, set = value(b, i, gjson.Result{}); !set {
			b = b[:n]
		}
	}
	return append(b, '}')
}

// detail appends the details object cur (absent, or anything else
// sjson would replace by an object) with key set to n, 0 included:
// OpenRouter's clients read prompt_tokens_details.cached_tokens and
// completion_tokens_details.reasoning_tokens on every answer (issue 32).
func detail(b []byte, cur gjson.Result, key string, n int64) ([]byte, bool) {
	if !cur.IsObject() {
		b = append(b, '{', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		return append(strconv.AppendInt(b, n, 10), '}'), true
	}
	// Member by member, as the usage object (sjson's set took four
	// allocations per details object, on every answer).
	return setMembers(b, cur, []string{key}, func(b []byte, _ int, _ gjson.Result) ([]byte, bool) {
		return strconv.AppendInt(b, n, 10), true
	}), true
}

// appendCostDetails appends the "cost_details" object: OpenRouter's
// three upstream_inference_* members (upstreamCosts), then Switchyard's
// parts.
func appendCostDetails(b []byte, g *usage.Generation) []byte {
	c := g.Cost
	up := upstreamCosts(g)
	for i, f := range [...]struct {
		name string
		n    usage.Nanos
	}{{"upstream_inference_cost", up[0]}, {"upstream_inference_prompt_cost", up[1]}, {"upstream_inference_completions_cost", up[2]}} {
		if i == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.name...)
		b = append(b, '"', ':')
		b = f.n.AppendUSD(b)
	}
	for _, f := range [...]struct {
		name string
		n    usage.Nanos
	}{{"prompt", c.Prompt}, {"cache_read", c.CacheRead}, {"completion", c.Completion}, {"reasoning", c.Reasoning},
		{"audio", c.Audio}, {"request", c.Request}, {"image", c.Image}, {"failed_attempts", g.FailedCost},
		{"uncollected", g.Uncollected}} {
		b = append(b, ',', '"')
		b = append(b, f.name...)
		b = append(b, '"', ':')
		b = f.n.AppendUSD(b)
	}
	if g.FeesCost != 0 {
		b = append(b, `,"tool_fees":`...)
		b = g.FeesCost.AppendUSD(b)
		b = append(b, `,"server_tool_cost":`...)
		b = g.FeesCost.AppendUSD(b)
	}
	return append(b, '}')
}

// upstreamCosts are the members OpenRouter's cost_details defines (its
// SDKs require the prompt and completions ones, issue 32), in dollars:
// upstream_inference_cost, the final attempt's whole inference cost
// (Cost.Total: every part, request and image fees included, failed
// attempts and tool fees not); upstream_inference_prompt_cost, its input
// tokens (prompt, cache reads, audio); upstream_inference_completions_cost,
// its output tokens (completion and reasoning).
func upstreamCosts(g *usage.Generation) [3]usage.Nanos {
	c := g.Cost
	return [3]usage.Nanos{c.Total, c.Prompt + c.CacheRead + c.Audio, c.Completion + c.Reasoning}
}

// writeUsageBySets is WriteUsage one sjson set per field: the definition
// mergeUsage is fuzzed against, and the path for shapes it leaves alone.
func writeUsageBySets(body []byte, g *usage.Generation) ([]byte, error) {
	obj := gjson.GetBytes(body, "usage").Raw
	if obj == "" || obj[0] != '{' {
		obj = "{}"
	}
	u, c := g.Usage, g.Cost
	var err error
	set := func(path string, raw string) {
		if err == nil {
			obj, err = sjson.SetRaw(obj, path, raw)
		}
	}
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	set("prompt_tokens", i(u.PromptTokens))
	set("completion_tokens", i(u.CompletionTokens))
	set("total_tokens", i(u.TotalTokens()))
	set("prompt_tokens_details.cached_tokens", i(u.CachedTokens))
	set("completion_tokens_details.reasoning_tokens", i(u.ReasoningTokens))
	if u.Estimated {
		set("estimated", "true")
	}
	set("cost", g.Charged.USD())
	up := upstreamCosts(g)
	set("cost_details", `{"upstream_inference_cost":`+up[0].USD()+`,"upstream_inference_prompt_cost":`+up[1].USD()+
		`,"upstream_inference_completions_cost":`+up[2].USD()+`,"prompt":`+c.Prompt.USD()+`,"cache_read":`+c.CacheRead.USD()+
		`,"completion":`+c.Completion.USD()+`,"reasoning":`+c.Reasoning.USD()+
		`,"audio":`+c.Audio.USD()+`,"request":`+c.Request.USD()+`,"image":`+c.Image.USD()+
		`,"failed_attempts":`+g.FailedCost.USD()+`,"uncollected":`+g.Uncollected.USD()+feesField(g)+`}`)
	if err != nil {
		return body, err
	}
	return sjson.SetRawBytes(body, "usage", []byte(obj))
}

// feesField is the cost_details entry of the fees charged with a
// generation (a paid search engine's), when there are any.
func feesField(g *usage.Generation) string {
	if g.FeesCost == 0 {
		return ""
	}
	return `,"tool_fees":` + g.FeesCost.USD() + `,"server_tool_cost":` + g.FeesCost.USD()
}
