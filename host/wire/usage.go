package wire

import (
	"strconv"

	"github.com/switchyard/switchyard/host/billing"

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
func ParseUsage(body []byte) (u billing.Usage, ok bool) {
	us := gjson.GetBytes(body, "usage")
	if !us.IsObject() {
		return billing.Usage{}, false
	}
	p, c, t := us.Get("prompt_tokens"), us.Get("completion_tokens"), us.Get("total_tokens")
	num := func(r gjson.Result) bool { return r.Type == gjson.Number }
	if !num(p) && !num(c) && !num(t) {
		return billing.Usage{}, false
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
			return billing.Usage{}, false
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
// completion_tokens, total_tokens, cached and reasoning details when not
// zero, and "estimated": true when the gateway counted them), "cost" (dollars charged for the request, failed attempts included)
// and "cost_details" (the final attempt's parts plus failed attempts and
// anything uncollected). Other fields of an existing usage object are kept.
// Amounts are written as exact decimal numbers of dollars.
func WriteUsage(body []byte, g *billing.Generation) ([]byte, error) {
	usage := gjson.GetBytes(body, "usage").Raw
	if usage == "" || usage[0] != '{' {
		usage = "{}"
	}
	u, c := g.Usage, g.Cost
	var err error
	set := func(path string, raw string) {
		if err == nil {
			usage, err = sjson.SetRaw(usage, path, raw)
		}
	}
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	set("prompt_tokens", i(u.PromptTokens))
	set("completion_tokens", i(u.CompletionTokens))
	set("total_tokens", i(u.TotalTokens()))
	if u.CachedTokens != 0 {
		set("prompt_tokens_details.cached_tokens", i(u.CachedTokens))
	}
	if u.ReasoningTokens != 0 {
		set("completion_tokens_details.reasoning_tokens", i(u.ReasoningTokens))
	}
	if u.Estimated {
		set("estimated", "true")
	}
	set("cost", g.Charged.USD())
	set("cost_details", `{"prompt":`+c.Prompt.USD()+`,"cache_read":`+c.CacheRead.USD()+
		`,"completion":`+c.Completion.USD()+`,"reasoning":`+c.Reasoning.USD()+
		`,"audio":`+c.Audio.USD()+`,"request":`+c.Request.USD()+`,"image":`+c.Image.USD()+
		`,"failed_attempts":`+g.FailedCost.USD()+`,"uncollected":`+g.Uncollected.USD()+feesField(g)+`}`)
	if err != nil {
		return body, err
	}
	return sjson.SetRawBytes(body, "usage", []byte(usage))
}

// feesField is the cost_details entry of the fees charged with a
// generation (a paid search engine's), when there are any.
func feesField(g *billing.Generation) string {
	if g.FeesCost == 0 {
		return ""
	}
	return `,"tool_fees":` + g.FeesCost.USD()
}
