package route

import (
	"math"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/tidwall/gjson"
)

// SortBy is the key of provider.sort.
type SortBy string

const (
	SortNone       SortBy = "" // no sort: provider.order or load balancing decides
	SortPrice      SortBy = "price"
	SortThroughput SortBy = "throughput"
	SortLatency    SortBy = "latency"
	// SortExacto is the :exacto variant's ranking, by the rate of valid
	// tool-call answers (Stats.ToolCallRate). provider.sort does not take it:
	// it is not one of OpenRouter's sort keys.
	SortExacto SortBy = "exacto"
)

// Partition is provider.sort.partition: whether endpoints are ranked within
// each model (models keep the caller's order) or all together.
type Partition string

const (
	PartitionModel Partition = "model" // default; the zero value means the same
	PartitionNone  Partition = "none"
)

// Percentiles is the object form of provider.preferred_max_latency and
// provider.preferred_min_throughput, and the shape of live statistics
// (Stats). Latency is in seconds (time to first token), throughput in output
// tokens per second. In preferences a zero field means "no threshold at this
// percentile"; in Stats it means "no data".
type Percentiles struct {
	P50, P75, P90, P99 float64
}

// IsZero reports whether no percentile is set.
func (p Percentiles) IsZero() bool { return p == Percentiles{} }

// MaxPrice is provider.max_price. A nil field means no limit; a limit of 0
// admits only endpoints that are free on that dimension. Units follow
// catalog.Price: USD per million tokens for Prompt and Completion, USD per
// request, per image and per audio unit for the others.
type MaxPrice struct {
	Prompt, Completion, Request, Image, Audio *float64
}

// IsZero reports whether no limit is set.
func (m MaxPrice) IsZero() bool {
	return m.Prompt == nil && m.Completion == nil && m.Request == nil && m.Image == nil && m.Audio == nil
}

// Preferences is the parsed provider object of a request (spec 2.4) plus the
// deprecated top-level route field. The zero value is the default: fallbacks
// allowed, data collection allowed, no filters, load balancing.
type Preferences struct {
	// NoFallbacks is provider.allow_fallbacks=false: only the first attempt of
	// the plan is made. (Inverted so that the zero value is the default.)
	NoFallbacks bool
	// DataCollection is "allow" or "deny" ("" means allow). With deny only
	// providers whose catalog DataCollection is "deny" qualify.
	DataCollection         string
	EnforceDistillableText bool
	// Ignore, Only and Order hold provider slugs as sent; they are matched
	// case-insensitively against a provider's slug or display name. Empty
	// arrays are the same as absent ones. Duplicates are removed.
	Ignore, Only, Order []string
	MaxPrice            MaxPrice
	// PreferredMaxLatency (seconds) and PreferredMinThroughput (tokens/s):
	// endpoints whose live statistics miss a threshold are tried after those
	// that meet it; they are never excluded.
	PreferredMaxLatency    Percentiles
	PreferredMinThroughput Percentiles
	// Quantizations lists accepted quantization levels, lower-cased. An
	// endpoint without a known quantization matches "unknown".
	Quantizations     []string
	RequireParameters bool
	Sort              SortBy
	Partition         Partition
	ZDR               bool
}

// AllowFallbacks reports provider.allow_fallbacks.
func (p *Preferences) AllowFallbacks() bool { return !p.NoFallbacks }

// DenyDataCollection reports provider.data_collection=deny.
func (p *Preferences) DenyDataCollection() bool { return p.DataCollection == "deny" }

// partitionNone reports whether all endpoints of all models are ranked
// together.
func (p *Preferences) partitionNone() bool { return p.Partition == PartitionNone }

// ParsePreferences parses the request's provider object and its deprecated
// route field; either may be absent or null. Every error is a 400 naming the
// offending field, e.g. "provider.foo: unknown field".
//
// Accepted shapes beyond the spec table: max_price fields may be JSON numbers
// as well as decimal strings; preferred_max_latency and
// preferred_min_throughput are a number (the p50 threshold) or an object with
// any of p50, p75, p90, p99; sort is a string or {"by": ..., "partition":
// "model"|"none"}. route "fallback" means partition model and "sort" means
// partition none; an explicit provider.sort.partition wins over route.
func ParsePreferences(provider gjson.Result, route gjson.Result) (Preferences, *apierr.Error) {
	var p Preferences
	partitionSet := false
	if isSet(provider) {
		if !provider.IsObject() {
			return Preferences{}, apierr.BadRequest("provider", "must be an object or null")
		}
		var err *apierr.Error
		provider.ForEach(func(k, v gjson.Result) bool {
			err = p.parseField(k.Str, v, &partitionSet)
			return err == nil
		})
		if err != nil {
			return Preferences{}, err
		}
	}
	if isSet(route) {
		if route.Type != gjson.String {
			return Preferences{}, apierr.BadRequest("route", `must be "fallback", "sort" or null`)
		}
		switch route.Str {
		case "fallback":
			if !partitionSet {
				p.Partition = PartitionModel
			}
		case "sort":
			if !partitionSet {
				p.Partition = PartitionNone
			}
		default:
			return Preferences{}, apierr.BadRequest("route", `must be "fallback", "sort" or null`)
		}
	}
	return p, nil
}

// isSet reports whether a value is present and not JSON null.
func isSet(r gjson.Result) bool { return r.Exists() && r.Type != gjson.Null }

func (p *Preferences) parseField(key string, v gjson.Result, partitionSet *bool) *apierr.Error {
	field := "provider." + key
	if !isSet(v) {
		// Every field is nullable; null keeps the default. Unknown keys are
		// rejected even when null.
		if !knownField(key) {
			return apierr.BadRequest("provider."+clip(key), "unknown field")
		}
		return nil
	}
	var err *apierr.Error
	switch key {
	case "allow_fallbacks":
		var b bool
		b, err = parseBool(field, v)
		p.NoFallbacks = !b
	case "data_collection":
		if v.Type != gjson.String || (v.Str != "allow" && v.Str != "deny") {
			return apierr.BadRequest(field, `must be "allow" or "deny"`)
		}
		p.DataCollection = v.Str
	case "enforce_distillable_text":
		p.EnforceDistillableText, err = parseBool(field, v)
	case "ignore":
		p.Ignore, err = parseStrings(field, v, false)
	case "only":
		p.Only, err = parseStrings(field, v, false)
	case "order":
		p.Order, err = parseStrings(field, v, false)
	case "quantizations":
		p.Quantizations, err = parseStrings(field, v, true)
	case "max_price":
		p.MaxPrice, err = parseMaxPrice(field, v)
	case "preferred_max_latency":
		p.PreferredMaxLatency, err = parsePercentiles(field, v)
	case "preferred_min_throughput":
		p.PreferredMinThroughput, err = parsePercentiles(field, v)
	case "require_parameters":
		p.RequireParameters, err = parseBool(field, v)
	case "sort":
		err = p.parseSort(field, v, partitionSet)
	case "zdr":
		p.ZDR, err = parseBool(field, v)
	default:
		return apierr.BadRequest("provider."+clip(key), "unknown field")
	}
	return err
}

func knownField(key string) bool {
	switch key {
	case "allow_fallbacks", "data_collection", "enforce_distillable_text", "ignore", "only",
		"order", "quantizations", "max_price", "preferred_max_latency",
		"preferred_min_throughput", "require_parameters", "sort", "zdr":
		return true
	}
	return false
}

// clip bounds a caller-supplied key echoed in an error message.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

func parseBool(field string, v gjson.Result) (bool, *apierr.Error) {
	switch v.Type {
	case gjson.True:
		return true, nil
	case gjson.False:
		return false, nil
	}
	return false, apierr.BadRequest(field, "must be a boolean")
}

// parseStrings reads an array of non-empty strings, dropping duplicates
// (compared case-insensitively) and keeping the first occurrence's position.
func parseStrings(field string, v gjson.Result, lower bool) ([]string, *apierr.Error) {
	if !v.IsArray() {
		return nil, apierr.BadRequest(field, "must be an array of strings")
	}
	var out []string
	var err *apierr.Error
	i := 0
	v.ForEach(func(_, x gjson.Result) bool {
		s := strings.TrimSpace(x.Str)
		if x.Type != gjson.String || s == "" {
			err = apierr.BadRequest(field+"["+strconv.Itoa(i)+"]", "must be a non-empty string")
			return false
		}
		i++
		if lower {
			s = strings.ToLower(s)
		}
		for _, o := range out {
			if strings.EqualFold(o, s) {
				return true
			}
		}
		out = append(out, s)
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func parseMaxPrice(field string, v gjson.Result) (MaxPrice, *apierr.Error) {
	var m MaxPrice
	if !v.IsObject() {
		return m, apierr.BadRequest(field, "must be an object")
	}
	var err *apierr.Error
	v.ForEach(func(k, x gjson.Result) bool {
		var dst **float64
		switch k.Str {
		case "prompt":
			dst = &m.Prompt
		case "completion":
			dst = &m.Completion
		case "request":
			dst = &m.Request
		case "image":
			dst = &m.Image
		case "audio":
			dst = &m.Audio
		default:
			err = apierr.BadRequest(field+"."+clip(k.Str), "unknown field")
			return false
		}
		if !isSet(x) {
			*dst = nil
			return true
		}
		f, ok := decimal(x)
		if !ok {
			err = apierr.BadRequest(field+"."+k.Str, "must be a non-negative decimal, as a string or a number")
			return false
		}
		*dst = &f
		return true
	})
	return m, err
}

// decimal reads a non-negative finite number from a JSON number or a
// decimal string (Decimal).
func decimal(x gjson.Result) (float64, bool) {
	switch x.Type {
	case gjson.Number:
		if x.Num >= 0 && !math.IsInf(x.Num, 0) && !math.IsNaN(x.Num) {
			return x.Num, true
		}
	case gjson.String:
		return Decimal(x.Str)
	}
	return 0, false
}

// Decimal parses the one decimal grammar of prices in requests: an unsigned
// finite decimal, digits with an optional fraction and exponent ("2",
// "0.15", ".5", "1e-6"), surrounding spaces ignored; no signs, hex, NaN or
// infinities. Validation and routing both use it, so a price validation
// accepts is one routing can read.
func Decimal(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return 0, false
	}
	i, digits := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, exp = i+1, exp+1
		}
		if exp == 0 {
			return 0, false
		}
	}
	if i != len(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// parsePercentiles reads a threshold: a number (the p50) or an object with
// any of p50, p75, p90, p99.
func parsePercentiles(field string, v gjson.Result) (Percentiles, *apierr.Error) {
	var p Percentiles
	if v.Type == gjson.Number {
		f, ok := threshold(v)
		if !ok {
			return p, apierr.BadRequest(field, "must be a non-negative number")
		}
		p.P50 = f
		return p, nil
	}
	if !v.IsObject() {
		return p, apierr.BadRequest(field, "must be a number or an object with p50, p75, p90, p99")
	}
	var err *apierr.Error
	v.ForEach(func(k, x gjson.Result) bool {
		var dst *float64
		switch k.Str {
		case "p50":
			dst = &p.P50
		case "p75":
			dst = &p.P75
		case "p90":
			dst = &p.P90
		case "p99":
			dst = &p.P99
		default:
			err = apierr.BadRequest(field+"."+clip(k.Str), "unknown field")
			return false
		}
		if !isSet(x) {
			*dst = 0
			return true
		}
		f, ok := threshold(x)
		if !ok {
			err = apierr.BadRequest(field+"."+k.Str, "must be a non-negative number")
			return false
		}
		*dst = f
		return true
	})
	return p, err
}

func threshold(x gjson.Result) (float64, bool) {
	if x.Type != gjson.Number || math.IsNaN(x.Num) || math.IsInf(x.Num, 0) || x.Num < 0 {
		return 0, false
	}
	return x.Num, true
}

func parseSortBy(field string, v gjson.Result) (SortBy, *apierr.Error) {
	if v.Type == gjson.String {
		switch SortBy(v.Str) {
		case SortPrice, SortThroughput, SortLatency:
			return SortBy(v.Str), nil
		}
	}
	return SortNone, apierr.BadRequest(field, `must be "price", "throughput" or "latency"`)
}

func (p *Preferences) parseSort(field string, v gjson.Result, partitionSet *bool) *apierr.Error {
	if v.Type == gjson.String {
		by, err := parseSortBy(field, v)
		p.Sort = by
		return err
	}
	if !v.IsObject() {
		return apierr.BadRequest(field, `must be a string or an object {"by", "partition"}`)
	}
	var err *apierr.Error
	hasBy := false
	v.ForEach(func(k, x gjson.Result) bool {
		switch k.Str {
		case "by":
			if !isSet(x) {
				return true
			}
			hasBy = true
			p.Sort, err = parseSortBy(field+".by", x)
		case "partition":
			if !isSet(x) {
				return true
			}
			if x.Type != gjson.String || (x.Str != string(PartitionModel) && x.Str != string(PartitionNone)) {
				err = apierr.BadRequest(field+".partition", `must be "model" or "none"`)
				return false
			}
			p.Partition = Partition(x.Str)
			*partitionSet = true
		default:
			err = apierr.BadRequest(field+"."+clip(k.Str), "unknown field")
		}
		return err == nil
	})
	if err == nil && !hasBy {
		err = apierr.BadRequest(field+".by", "is required")
	}
	return err
}
