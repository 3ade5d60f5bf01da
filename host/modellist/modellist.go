// Package modellist is the gateway's model listing in the shape
// OpenRouter's API reference and the zod schemas of @openrouter/sdk give
// it (Model, ModelsListResponse, ModelsCountResponse,
// ListEndpointsResponse, ListProvidersResponse; issue 32), with
// Switchyard's own fields kept beside them (kind, owned_by, top-level
// input_modalities, providers, router). host/server serves it.
package modellist

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/modules"
)

// Entry is one model of GET /models and GET /embeddings/models.
type Entry struct {
	ID            string       `json:"id"`
	CanonicalSlug string       `json:"canonical_slug"`
	Object        string       `json:"object"`
	Name          string       `json:"name"`
	Created       int64        `json:"created"`
	Description   string       `json:"description"`
	Kind          catalog.Kind `json:"kind"`
	// ContextLength is null when the catalog gives none (OpenRouter's
	// field is a required nullable integer).
	ContextLength       *int              `json:"context_length"`
	OwnedBy             string            `json:"owned_by"`
	Modalities          []string          `json:"input_modalities"`
	Architecture        architecture      `json:"architecture"`
	Pricing             map[string]string `json:"pricing"`
	TopProvider         topProvider       `json:"top_provider"`
	PerRequestLimits    *struct{}         `json:"per_request_limits"` // always null: no per-request token limits
	SupportedParameters []string          `json:"supported_parameters"`
	SupportedVoices     []string          `json:"supported_voices"`   // null: no speech models
	DefaultParameters   *struct{}         `json:"default_parameters"` // null: the gateway sets no sampling defaults
	Links               modelLinks        `json:"links"`
	Providers           []string          `json:"providers"`
	// Router is the plugin a router model id runs.
	Router string `json:"router,omitempty"`

	scores map[string]catalog.Score
}

type architecture struct {
	Modality         string   `json:"modality"`
	InputModalities  []string `json:"input_modalities"`
	OutputModalities []string `json:"output_modalities"`
	Tokenizer        string   `json:"tokenizer"`
	InstructType     *string  `json:"instruct_type"`
}

type topProvider struct {
	ContextLength       *int `json:"context_length"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	IsModerated         bool `json:"is_moderated"`
}

type modelLinks struct {
	Details string `json:"details"`
}

// intOrNull is n, or nil (JSON null) for 0, the catalog's "not given".
func intOrNull(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}

// tokenizers name the tokenizer family (OpenRouter's ModelGroup) of a
// model by its vendor; any other vendor is "Other".
var tokenizers = map[string]string{"openai": "GPT", "anthropic": "Claude", "google": "Gemini", "x-ai": "Grok",
	"cohere": "Cohere", "amazon": "Nova", "qwen": "Qwen", "deepseek": "DeepSeek", "mistralai": "Mistral",
	"meta-llama": "Llama3"}

// outputModalities of a model of kind k.
func outputModalities(k catalog.Kind) []string {
	if k == catalog.KindEmbedding {
		return []string{"embeddings"}
	}
	return []string{"text"}
}

func newArchitecture(k catalog.Kind, in []string, tokenizer string) architecture {
	if len(in) == 0 {
		in = []string{"text"}
	}
	out := outputModalities(k)
	return architecture{Modality: strings.Join(in, "+") + "->" + strings.Join(out, "+"), InputModalities: in,
		OutputModalities: out, Tokenizer: tokenizer}
}

// endpointPricing is an endpoint's prices in OpenRouter's form: USD per
// token (per request, image) as exact decimal strings; the parts the
// catalog prices at 0 beyond prompt, completion and request are left out.
func endpointPricing(p catalog.Price) map[string]string {
	out := map[string]string{"prompt": perToken(p.Prompt), "completion": perToken(p.Completion), "request": usd(p.Request)}
	if p.CacheRead != 0 {
		out["input_cache_read"] = perToken(p.CacheRead)
	}
	if p.Reasoning != 0 {
		out["internal_reasoning"] = perToken(p.Reasoning)
	}
	if p.Image != 0 {
		out["image"] = usd(p.Image)
	}
	if p.Audio != 0 {
		out["audio"] = perToken(p.Audio)
	}
	return out
}

// supportedParameters is the sorted union of the endpoints' parameters.
func supportedParameters(eps []*catalog.Endpoint) []string {
	set := map[string]bool{}
	for _, ep := range eps {
		for p, ok := range ep.Supported {
			if ok {
				set[p] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// newEntry is the listing of m served by eps (its endpoints an
// account may use; at least one).
func newEntry(m *catalog.Model, eps []*catalog.Endpoint) Entry {
	vendor := m.ID[:indexSlash(m.ID)]
	tok := tokenizers[vendor]
	if tok == "" {
		tok = "Other"
	}
	e := Entry{ID: m.ID, CanonicalSlug: m.ID, Object: "model", Name: m.Name, Kind: m.Kind, ContextLength: intOrNull(m.ContextLength),
		Modalities: m.InputModalities, OwnedBy: vendor, Architecture: newArchitecture(m.Kind, m.InputModalities, tok),
		SupportedParameters: []string{}, Links: modelLinks{Details: "/api/v1/models/" + m.ID + "/endpoints"},
		Created: m.Created, scores: m.Scores}
	if e.Name == "" {
		e.Name = m.ID
	}
	if m.Kind == catalog.KindChat { // the chat parameters: none apply to embeddings
		e.SupportedParameters = supportedParameters(eps)
	}
	if e.Modalities == nil {
		e.Modalities = []string{"text"}
	}
	cheapest, top := eps[0], eps[0]
	for _, ep := range eps {
		e.Providers = append(e.Providers, ep.Provider.Slug)
		if ep.Price.Prompt+ep.Price.Completion < cheapest.Price.Prompt+cheapest.Price.Completion {
			cheapest = ep
		}
		if endpointContext(ep) > endpointContext(top) {
			top = ep
		}
	}
	e.Pricing = endpointPricing(cheapest.Price)
	e.TopProvider = topProvider{ContextLength: intOrNull(endpointContext(top)), MaxCompletionTokens: intOrNull(top.MaxOutput)}
	return e
}

// endpointContext is an endpoint's context length, its model's when the
// endpoint gives none.
func endpointContext(ep *catalog.Endpoint) int {
	if ep.ContextLength > 0 {
		return ep.ContextLength
	}
	return ep.Model.ContextLength
}

// usableEndpoints are m's endpoints the account's provider settings allow
// (all of them when only is false: GET /models lists the catalog).
func usableEndpoints(m *catalog.Model, acct keys.ProviderSettings, only bool) []*catalog.Endpoint {
	if !only || (len(acct.Only) == 0 && len(acct.Ignore) == 0) {
		return m.Endpoints
	}
	var out []*catalog.Endpoint
	for _, ep := range m.Endpoints {
		if (len(acct.Only) > 0 && !slices.Contains(acct.Only, ep.Provider.Slug)) || slices.Contains(acct.Ignore, ep.Provider.Slug) {
			continue
		}
		out = append(out, ep)
	}
	return out
}

// Entries lists the models of cat of kind ("" for every kind), then the
// router model ids of routers (the router plugins the caller's account
// has installed) after the chat models. forUser: only endpoints the
// account's provider settings acct allow (GET /models/user).
func Entries(cat *catalog.Catalog, routers []modules.RouterRole, kind catalog.Kind, acct keys.ProviderSettings, forUser bool) []Entry {
	out := []Entry{}
	for _, k := range []catalog.Kind{catalog.KindChat, catalog.KindEmbedding} {
		if kind != "" && k != kind {
			continue
		}
		for _, m := range cat.ModelsOfKind(k) {
			if eps := usableEndpoints(m, acct, forUser); len(eps) > 0 {
				out = append(out, newEntry(m, eps))
			}
		}
		if k != catalog.KindChat {
			continue
		}
		// The router model ids whose plugin is installed. A router adds
		// no price of its own: "-1" says the price is the model it
		// chooses (as the public gateways list theirs).
		for _, rm := range routers {
			in := []string{"text", "image"}
			out = append(out, Entry{ID: rm.Model, CanonicalSlug: rm.Model, Object: "model", Name: rm.Name, Kind: catalog.KindChat,
				OwnedBy: "switchyard", Modalities: in, Architecture: newArchitecture(catalog.KindChat, in, "Router"),
				Pricing: map[string]string{"prompt": "-1", "completion": "-1", "request": "0"}, SupportedParameters: []string{},
				Links: modelLinks{Details: "/api/v1/models/" + rm.Model + "/endpoints"}, Providers: []string{}, Router: rm.Plugin})
		}
	}
	return out
}

// categoryFamilies map OpenRouter's model categories (the `category`
// query of GET /models) to the catalog's score families: a category
// lists the models with a score in its family, best first. Categories no
// family measures rank by the overall score.
var categoryFamilies = map[string]string{
	"programming": "coding", "translation": "multilingual", "science": "reasoning", "academia": "reasoning",
	"roleplay": "writing", "marketing": "writing", "marketing/seo": "writing", "technology": "overall",
	"legal": "overall", "finance": "overall", "health": "overall", "trivia": "overall",
}

// commaList splits a comma-separated query value, "" for none.
func commaList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Filter applies the listing's query filters: supported_parameters
// (every one listed), category, input_modalities and output_modalities
// (any one listed; "all" for any), q (in the id or name, any case).
func Filter(query func(name string) string, in []Entry) ([]Entry, *apierr.Error) {
	params := commaList(query("supported_parameters"))
	ins, outs := commaList(query("input_modalities")), commaList(query("output_modalities"))
	q := strings.ToLower(query("q"))
	family := ""
	if cat := query("category"); cat != "" {
		var ok bool
		if family, ok = categoryFamilies[strings.ToLower(cat)]; !ok {
			names := make([]string, 0, len(categoryFamilies))
			for n := range categoryFamilies {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, apierr.BadRequest("category", "category: unknown category %q; one of %s", cat, strings.Join(names, ", "))
		}
	}
	anyOf := func(want, have []string) bool {
		if len(want) == 0 || slices.Contains(want, "all") {
			return true
		}
		for _, w := range want {
			if slices.Contains(have, w) {
				return true
			}
		}
		return false
	}
	out := in[:0:0]
	for _, e := range in {
		if !anyOf(ins, e.Architecture.InputModalities) || !anyOf(outs, e.Architecture.OutputModalities) {
			continue
		}
		if q != "" && !strings.Contains(strings.ToLower(e.ID), q) && !strings.Contains(strings.ToLower(e.Name), q) {
			continue
		}
		all := true
		for _, p := range params {
			all = all && slices.Contains(e.SupportedParameters, p)
		}
		if !all {
			continue
		}
		if family != "" {
			if _, ok := e.scores[family]; !ok {
				continue
			}
		}
		out = append(out, e)
	}
	if family != "" {
		sort.SliceStable(out, func(i, j int) bool { return out[i].scores[family].Value > out[j].scores[family].Value })
	}
	return out, nil
}

// Endpoint is one endpoint of GET /models/:author/:slug/endpoints
// (OpenRouter's PublicEndpoint). The live figures (uptime, latency,
// throughput) are null: the gateway keeps them per process for routing,
// not as the 30-minute windows OpenRouter publishes.
type Endpoint struct {
	Name                    string            `json:"name"`
	ModelID                 string            `json:"model_id"`
	ModelName               string            `json:"model_name"`
	ContextLength           int               `json:"context_length"`
	Pricing                 map[string]string `json:"pricing"`
	ProviderName            string            `json:"provider_name"`
	Provider                string            `json:"provider"` // the slug requests name in provider.order
	Tag                     string            `json:"tag"`
	Quantization            *string           `json:"quantization"`
	MaxCompletionTokens     *int              `json:"max_completion_tokens"`
	MaxPromptTokens         *int              `json:"max_prompt_tokens"`
	SupportedParameters     []string          `json:"supported_parameters"`
	Status                  int               `json:"status"`
	UptimeLast30m           *float64          `json:"uptime_last_30m"`
	UptimeLast5m            *float64          `json:"uptime_last_5m"`
	UptimeLast1d            *float64          `json:"uptime_last_1d"`
	LatencyLast30m          *struct{}         `json:"latency_last_30m"`
	ThroughputLast30m       *struct{}         `json:"throughput_last_30m"`
	SupportsImplicitCaching bool              `json:"supports_implicit_caching"`
	SupportsToolChoice      map[string]bool   `json:"supports_tool_choice"`
	DataCollection          string            `json:"data_collection,omitempty"`
	ZDR                     bool              `json:"zdr"`
	Region                  string            `json:"region,omitempty"`
}

// Endpoints are the endpoints of model m, listed as name.
func Endpoints(m *catalog.Model, name string) []Endpoint {
	eps := []Endpoint{}
	if m != nil {
		for _, ep := range m.Endpoints {
			eps = append(eps, NewEndpoint(m, name, ep))
		}
	}
	return eps
}

// NewEndpoint is endpoint ep of model m (listed as name).
func NewEndpoint(m *catalog.Model, name string, ep *catalog.Endpoint) Endpoint {
	tools := ep.Supported["tool_choice"]
	pe := Endpoint{Name: ep.Provider.Name + " | " + m.ID, ModelID: m.ID, ModelName: name, ContextLength: endpointContext(ep),
		Pricing: endpointPricing(ep.Price), ProviderName: ep.Provider.Name, Provider: ep.Provider.Slug, Tag: ep.Provider.Slug,
		MaxCompletionTokens: intOrNull(ep.MaxOutput), SupportedParameters: []string{},
		SupportsToolChoice: map[string]bool{"auto": tools, "none": tools, "required": tools, "function": tools},
		DataCollection:     ep.Provider.DataCollection, ZDR: ep.Provider.ZDR, Region: ep.Provider.Region}
	if m.Kind == catalog.KindChat {
		pe.SupportedParameters = supportedParameters([]*catalog.Endpoint{ep})
	}
	if ep.Quantization != "" {
		pe.Quantization = &ep.Quantization
	}
	return pe
}

// ZDREndpoints are the endpoints, of every model of cat, whose provider is
// configured zdr: true: those provider.zdr keeps (GET /endpoints/zdr).
func ZDREndpoints(cat *catalog.Catalog) []Endpoint {
	out := []Endpoint{}
	for _, k := range []catalog.Kind{catalog.KindChat, catalog.KindEmbedding} {
		for _, m := range cat.ModelsOfKind(k) {
			name := m.Name
			if name == "" {
				name = m.ID
			}
			for _, ep := range m.Endpoints {
				if ep.Provider.ZDR {
					out = append(out, NewEndpoint(m, name, ep))
				}
			}
		}
	}
	return out
}

// Provider is one provider of GET /providers (OpenRouter's
// ListProvidersResponse; the policy addresses are null, the gateway does
// not know them; data_collection, zdr and region are ours).
type Provider struct {
	Name             string  `json:"name"`
	Slug             string  `json:"slug"`
	PrivacyPolicyURL *string `json:"privacy_policy_url"`
	TermsOfService   *string `json:"terms_of_service_url"`
	StatusPageURL    *string `json:"status_page_url"`
	DataCollection   string  `json:"data_collection,omitempty"`
	ZDR              bool    `json:"zdr"`
	Region           string  `json:"region,omitempty"`
}

// Providers are cat's providers, by slug.
func Providers(cat *catalog.Catalog) []Provider {
	out := []Provider{}
	for _, p := range cat.Providers {
		out = append(out, Provider{Name: p.Name, Slug: p.Slug, DataCollection: p.DataCollection, ZDR: p.ZDR, Region: p.Region})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

func indexSlash(id string) int {
	if i := strings.IndexByte(id, '/'); i >= 0 {
		return i
	}
	return len(id)
}

// usd renders a configured USD price as an exact decimal: the price in
// nanos, as billing charges it, so /models shows what is charged.
func usd(f float64) string { return billing.FromUSD(f).USD() }

// perToken converts USD per million tokens to USD per token, exactly: the
// nanos per million shifted by six places, never a float division (which
// printed 0.1 as 0.00000010000000000000001).
func perToken(perMillion float64) string {
	n := billing.FromUSD(perMillion) // nanos per million tokens = 1e-15 USD per token
	digits := strconv.FormatInt(int64(n), 10)
	const places = 15
	if len(digits) <= places {
		digits = strings.Repeat("0", places-len(digits)+1) + digits
	}
	whole, frac := digits[:len(digits)-places], strings.TrimRight(digits[len(digits)-places:], "0")
	if frac == "" {
		return whole
	}
	return whole + "." + frac
}
