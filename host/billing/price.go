package billing

import (
	"math"
	"math/bits"

	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/usage"
)

// The vocabulary shared with host/wire lives in host/usage; these names
// keep billing's callers unchanged.
type (
	Usage      = usage.Usage
	Cost       = usage.Cost
	Fee        = usage.Fee
	Generation = usage.Generation
	Nanos      = usage.Nanos
)

// NanosPerUSD is the number of nanos in one US dollar.
const NanosPerUSD = usage.NanosPerUSD

// ParseUSD converts a decimal dollar amount to nanos (usage.ParseUSD).
func ParseUSD(s string) (Nanos, error) { return usage.ParseUSD(s) }

// FromUSD converts a float dollar amount (a catalog price) to nanos
// (usage.FromUSD).
func FromUSD(usd float64) Nanos { return usage.FromUSD(usd) }

// Rates is a catalog.Price converted once to integers. Token rates are in
// nanos per million tokens (numerically the same as femto-dollars per
// token), so a price such as $0.075/Mtok is exactly 75,000,000 and no
// realistic price loses precision. Per-unit rates (request, image) are in
// nanos per unit.
type Rates struct {
	Prompt     Nanos // per million prompt tokens not read from cache
	CacheRead  Nanos // per million cached prompt tokens
	Completion Nanos // per million completion tokens that are not reasoning
	Reasoning  Nanos // per million reasoning tokens
	Audio      Nanos // per million audio tokens
	Request    Nanos // per request
	Image      Nanos // per image
}

// RatesOf converts a catalog price. Rounding: each USD figure is multiplied
// by 1e9 and rounded half away from zero (negative and NaN prices become 0).
// A zero CacheRead price means the provider gives no cache discount, so
// cached tokens cost the prompt price; a zero Reasoning price means
// reasoning tokens cost the completion price.
func RatesOf(p catalog.Price) Rates {
	r := Rates{
		Prompt:     FromUSD(p.Prompt),
		CacheRead:  FromUSD(p.CacheRead),
		Completion: FromUSD(p.Completion),
		Reasoning:  FromUSD(p.Reasoning),
		Audio:      FromUSD(p.Audio),
		Request:    FromUSD(p.Request),
		Image:      FromUSD(p.Image),
	}
	if r.CacheRead == 0 {
		r.CacheRead = r.Prompt
	}
	if r.Reasoning == 0 {
		r.Reasoning = r.Completion
	}
	return r
}

// Compute prices a usage. Each part is tokens × rate / 1e6, computed in
// 128 bits and rounded half up to a whole nano (so a part is off by at most
// half a nano-dollar); Total is the sum of the rounded parts. Inconsistent
// counts are clamped: cached tokens beyond the prompt and reasoning tokens
// beyond the completion are treated as equal to it; negative counts as 0.
func (r Rates) Compute(u Usage) Cost {
	prompt, cached := nonNeg(u.PromptTokens), nonNeg(u.CachedTokens)
	cached = min(cached, prompt)
	completion, reasoning := nonNeg(u.CompletionTokens), nonNeg(u.ReasoningTokens)
	reasoning = min(reasoning, completion)
	c := Cost{
		Prompt:     perMillion(prompt-cached, r.Prompt),
		CacheRead:  perMillion(cached, r.CacheRead),
		Completion: perMillion(completion-reasoning, r.Completion),
		Reasoning:  perMillion(reasoning, r.Reasoning),
		Audio:      perMillion(nonNeg(u.AudioTokens), r.Audio),
		Request:    perUnit(nonNeg(u.Requests), r.Request),
		Image:      perUnit(nonNeg(u.Images), r.Image),
	}
	for _, p := range []Nanos{c.Prompt, c.CacheRead, c.Completion, c.Reasoning, c.Audio, c.Request, c.Image} {
		c.Total = usage.AddSat(c.Total, p)
	}
	return c
}

// WorstCase is the most a call can cost: every prompt token at the dearer of
// the prompt and cache prices, every output token at the dearer of the
// completion and reasoning prices, plus the images and one request fee.
func (r Rates) WorstCase(promptTokens, maxOutputTokens, images int64) Nanos {
	w := Rates{Prompt: max(r.Prompt, r.CacheRead), Completion: max(r.Completion, r.Reasoning), Request: r.Request, Image: r.Image}
	w.CacheRead, w.Reasoning = w.Prompt, w.Completion
	return w.Compute(Usage{PromptTokens: promptTokens, CompletionTokens: maxOutputTokens, Images: images, Requests: 1}).Total
}

func nonNeg(v int64) int64 { return max(v, 0) }

// perMillion returns round(n × rate / 1e6) without overflow, saturating.
func perMillion(n int64, rate Nanos) Nanos {
	if n <= 0 || rate <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(n), uint64(rate))
	lo, carry := bits.Add64(lo, 500_000, 0) // half of the divisor: round half up
	hi += carry
	if hi >= 1_000_000 { // quotient would not fit in 64 bits
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, 1_000_000)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return Nanos(q)
}

func perUnit(n int64, rate Nanos) Nanos {
	if n <= 0 || rate <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(n), uint64(rate))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return Nanos(lo)
}
