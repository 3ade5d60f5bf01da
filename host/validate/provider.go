package validate

import (
	"math"
	"strings"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/route"
	"github.com/tidwall/gjson"
)

var (
	dataCollection = []string{"allow", "deny"}
	sortKeys       = []string{"price", "throughput", "latency"}
	partitions     = []string{"model", "none"}
	quantizations  = []string{"int4", "int8", "fp4", "fp6", "fp8", "fp16", "bf16", "fp32", "unknown"}
)

// provider checks the provider preferences of spec 2.4 (the path is already
// provider). The object and every field are nullable; no other field is
// allowed. Shapes the spec leaves open:
//   - max_price.{prompt,completion,request,image,audio}: a string holding a
//     non-negative decimal ("0.15", "1e-6"), or, for client convenience, a
//     non-negative JSON number;
//   - preferred_max_latency (seconds) and preferred_min_throughput (tokens
//     per second): a number >= 0, the p50 threshold, or an object with any
//     of p50, p75, p90, p99, each a number >= 0;
//   - quantizations: values among int4, int8, fp4, fp6, fp8, fp16, bf16,
//     fp32, unknown (case-insensitive);
//   - sort: "price", "throughput" or "latency", or
//     {"by": one of those (required), "partition": "model" | "none"}.
//
// route.ParsePreferences, which the router uses, accepts the same shapes.
func (v *validator) provider(x gjson.Result) *apierr.Error {
	if isNull(x) {
		return nil
	}
	return v.strict(x, func(k string, y gjson.Result) *apierr.Error {
		switch k {
		case "allow_fallbacks", "enforce_distillable_text", "require_parameters", "zdr":
			return v.nullBool(y)
		case "data_collection":
			return v.nullEnum(y, dataCollection)
		case "ignore", "only", "order":
			if isNull(y) {
				return nil
			}
			return v.items(y, 0, -1, func(_ int, s gjson.Result) *apierr.Error { return v.slug(s) })
		case "quantizations":
			if isNull(y) {
				return nil
			}
			return v.items(y, 0, -1, func(_ int, q gjson.Result) *apierr.Error { return v.quantization(q) })
		case "max_price":
			if isNull(y) {
				return nil
			}
			return v.strict(y, func(k string, p gjson.Result) *apierr.Error {
				switch k {
				case "prompt", "completion", "request", "image", "audio":
					return v.price(p)
				}
				return v.unknown()
			})
		case "preferred_max_latency", "preferred_min_throughput":
			return v.percentiles(y)
		case "sort":
			return v.sort(y)
		}
		return v.unknown()
	})
}

// slug checks a provider slug: a non-empty string.
func (v *validator) slug(x gjson.Result) *apierr.Error {
	if x.Type != gjson.String || strings.TrimSpace(text(x)) == "" {
		return v.fail("must be a provider slug (a non-empty string), got %s", shown(x))
	}
	return nil
}

func (v *validator) quantization(x gjson.Result) *apierr.Error {
	if x.Type == gjson.String {
		s := text(x)
		for _, q := range quantizations {
			if strings.EqualFold(s, q) {
				return nil
			}
		}
	}
	return v.fail("must be one of %s, got %s", strings.Join(quantizations, ", "), shown(x))
}

// price checks a non-negative decimal as a string or a number, or null.
func (v *validator) price(x gjson.Result) *apierr.Error {
	switch x.Type {
	case gjson.Null:
		return nil
	case gjson.Number:
		if x.Num >= 0 && !math.IsInf(x.Num, 0) {
			return nil
		}
	case gjson.String:
		if _, ok := route.Decimal(text(x)); ok {
			return nil
		}
	}
	return v.fail(`must be a non-negative decimal in USD, as a string such as "0.5" (or a number), got %s`, shown(x))
}

// percentiles checks a latency or throughput threshold: null, a number >= 0
// (the p50), or an object with any of p50, p75, p90, p99.
func (v *validator) percentiles(x gjson.Result) *apierr.Error {
	switch {
	case isNull(x):
		return nil
	case x.Type == gjson.Number:
		return v.atLeast(x, 0, false)
	case !x.IsObject():
		return v.fail("must be a number (the p50 threshold) or an object with any of p50, p75, p90, p99, got %s", describe(x))
	}
	return v.each(x, func(k string, p gjson.Result) *apierr.Error {
		switch k {
		case "p50", "p75", "p90", "p99":
			if isNull(p) {
				return nil
			}
			return v.atLeast(p, 0, false)
		}
		return v.fail("unknown field; the thresholds are p50, p75, p90, p99")
	})
}

// sort checks null, a sort key, or {"by": key, "partition": "model"|"none"}.
func (v *validator) sort(x gjson.Result) *apierr.Error {
	switch {
	case isNull(x):
		return nil
	case x.Type == gjson.String:
		return v.enum(x, sortKeys)
	case !x.IsObject():
		return v.fail(`must be one of price, throughput, latency, or an object {"by": …, "partition": …}, got %s`, describe(x))
	}
	if err := v.each(x, func(k string, y gjson.Result) *apierr.Error {
		switch k {
		case "by":
			return v.enum(y, sortKeys)
		case "partition":
			return v.nullEnum(y, partitions)
		}
		return v.unknown()
	}); err != nil {
		return err
	}
	if !v.Get(x, "by").Exists() {
		return v.failAt("by", "required: one of price, throughput, latency")
	}
	return nil
}
