package route

import (
	"strings"

	"github.com/switchyard/switchyard/host/catalog"
)

// Variant is a model id's ":<variant>" suffix as OpenRouter defines them
// (openrouter.ai/docs, "Model Variants"): the same model, routed or
// extended differently. A catalog id that itself contains a colon is a model
// of its own, never a variant: lookups try the whole id first.
type Variant uint8

const (
	NoVariant Variant = iota
	// Nitro ranks the model's endpoints by live throughput
	// (provider.sort "throughput").
	Nitro
	// Floor ranks them by price (provider.sort "price").
	Floor
	// Exacto ranks them by the rate of valid tool-call answers they gave
	// in the window (Stats.ToolCallRate): tool-calling quality first.
	Exacto
	// Free keeps only the model's endpoints that charge nothing.
	Free
	// Online turns the web plugin on. It does not change routing: the
	// request core (host/flow) adds the plugin and drops the suffix
	// before the router sees the request.
	Online
)

var variantNames = map[string]Variant{"nitro": Nitro, "floor": Floor, "exacto": Exacto, "free": Free, "online": Online}

// String is the variant's suffix without the colon ("" for none).
func (v Variant) String() string {
	for k, x := range variantNames {
		if x == v {
			return k
		}
	}
	return ""
}

// SplitVariant cuts a known variant suffix off a model id:
// "openai/gpt-4o:nitro" is ("openai/gpt-4o", Nitro). An id without one (or
// with a suffix that names no variant) is returned whole with NoVariant.
func SplitVariant(id string) (string, Variant) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return id, NoVariant
	}
	if v, ok := variantNames[id[i+1:]]; ok {
		return id[:i], v
	}
	return id, NoVariant
}

// variantSort is the provider.sort a variant stands for; SortNone for the
// variants that do not rank.
var variantSort = [...]SortBy{Nitro: SortThroughput, Floor: SortPrice, Exacto: SortExacto, Online: SortNone}

// lookup finds the state of a requested model id: the catalog id or alias
// first, then, for an id the catalog lacks, the id without its variant
// suffix (and the variant).
func (t *table) lookup(id string) (*modelState, Variant) {
	if st := t.models[id]; st != nil {
		return st, NoVariant
	}
	if st := t.models[t.cat.Resolve(id)]; st != nil {
		return st, NoVariant
	}
	base, v := SplitVariant(id)
	if v == NoVariant {
		return nil, NoVariant
	}
	if st := t.models[base]; st != nil {
		return st, v
	}
	return t.models[t.cat.Resolve(base)], v
}

// noteVariant remembers that model m was requested with variant v. Only
// models with a variant are kept, so a request without one allocates
// nothing.
func (r *Request) noteVariant(m *catalog.Model, v Variant) {
	if v != NoVariant && r.variant(m) == NoVariant {
		r.vModels = append(r.vModels, m)
		r.variants = append(r.variants, v)
	}
}

// variant is the variant m was requested with (NoVariant when none).
func (r *Request) variant(m *catalog.Model) Variant {
	for i, x := range r.vModels {
		if x == m {
			return r.variants[i]
		}
	}
	return NoVariant
}

// isFree reports whether an endpoint charges nothing on any dimension:
// what the :free variant keeps.
func isFree(ep *catalog.Endpoint) bool {
	p := &ep.Price
	return p.Prompt <= 0 && p.Completion <= 0 && p.CacheRead <= 0 && p.Reasoning <= 0 &&
		p.Request <= 0 && p.Image <= 0 && p.Audio <= 0
}
