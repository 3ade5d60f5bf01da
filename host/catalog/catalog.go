// Package catalog holds what the gateway knows about models, the providers
// that serve them and the endpoints (model × provider) a request can be routed
// to. It is built once from configuration and then only read, so it is safe
// for concurrent use without locks; live health lives elsewhere (host/route).
package catalog

import (
	"net/http"
	"sort"
)

// Kind says which operation a model serves.
type Kind string

const (
	KindChat      Kind = "chat"
	KindEmbedding Kind = "embedding"
)

// Price is in US dollars, per million tokens for Prompt/Completion/
// CacheRead/Reasoning, per request for Request, per image for Image and per
// audio unit for Audio — the units of provider.max_price in the spec.
type Price struct {
	Prompt     float64 `yaml:"prompt" json:"prompt"`
	Completion float64 `yaml:"completion" json:"completion"`
	CacheRead  float64 `yaml:"cache_read" json:"cache_read"`
	Reasoning  float64 `yaml:"reasoning" json:"reasoning"`
	Request    float64 `yaml:"request" json:"request"`
	Image      float64 `yaml:"image" json:"image"`
	Audio      float64 `yaml:"audio" json:"audio"`
}

// Provider is an upstream service reached through one adapter module.
type Provider struct {
	Slug    string // the configuration's providers[].slug
	Name    string // display name
	BaseURL string // e.g. https://api.openai.com/v1, no trailing slash
	// API is the provider's form of its adapter's API, handed to the
	// adapter in its ctx ("vertex": Anthropic on Vertex AI).
	API string
	// BaseQuery is the query of the configured base URL, sent with every
	// request after the adapter's own (Azure OpenAI's api-version).
	BaseQuery string
	Adapter   string // name of the adapter module that speaks its wire format
	// APIKey is the upstream secret. It never leaves the host: adapters emit
	// the placeholder ${API_KEY} and the host substitutes it (see docs/abi.md).
	APIKey string
	// Auth, when set, is the host-side credential scheme (host/credentials)
	// that authorizes the finished request instead of the key placeholder:
	// SigV4 signing, OAuth tokens, Azure's api-key header.
	Auth Authorizer
	// DataCollection is "allow" when the provider may retain or train on
	// prompts, "deny" when it does not.
	DataCollection string
	ZDR            bool   // zero data retention
	Region         string // where requests are served, e.g. "us"
	Demo           bool   // the built-in offline demo upstream
	// EmbeddingTokenIDs, when set, says whether the provider's embeddings
	// API takes input as token ids; for one that does not, the host
	// decodes ids to text. Nil: as its adapter's manifest declares
	// (manifest.CapabilityEmbeddingTokenIDs), read at each request.
	EmbeddingTokenIDs *bool
	// RequiresModeration: the provider accepts only moderated input, so
	// every chat request that may be routed to it runs the moderation
	// plugin, listed or not (docs/plugins.md, section moderation).
	RequiresModeration bool
	// MaxMessages is the most messages a chat request may have (0: no
	// known limit); the context-compression plugin keeps to it.
	MaxMessages int
}

// Authorizer adds a provider's credentials to the final upstream request
// (implemented by host/credentials; an interface here so that the catalog
// does not depend on cloud SDKs).
type Authorizer interface {
	// Authorize adds the credential to req, whose body is body; an error
	// is an *apierr.Error with its status.
	Authorize(req *http.Request, body []byte) error
	// Scrub removes the scheme's secrets and tokens from text.
	Scrub(text string) string
	Name() string
}

// Endpoint is one model served by one provider.
type Endpoint struct {
	Model         *Model
	Provider      *Provider
	UpstreamModel string // model name on the provider's API
	Price         Price
	ContextLength int
	MaxOutput     int
	Quantization  string // e.g. "fp16", "fp8", "int4"; empty when unknown
	// Supported lists the optional request parameters (spec 2.1 field names)
	// the endpoint understands; others are dropped or, with
	// provider.require_parameters, make the endpoint ineligible.
	Supported map[string]bool
}

// Model is a <vendor>/<model_name> identifier and the endpoints that serve it.
type Model struct {
	ID              string
	Name            string
	Kind            Kind
	ContextLength   int
	Distillable     bool     // the author allows text distillation
	InputModalities []string // "text", "image"
	Endpoints       []*Endpoint
	// Scores are the model's quality figures by family (ScoreFamilies),
	// each citing its source; nil when the catalog has none.
	Scores map[string]Score
	// Created is when the model was added, Unix seconds: from the
	// configuration, or the time the gateway first listed it.
	Created int64
}

// Catalog is the immutable set of models and providers.
type Catalog struct {
	Models    map[string]*Model
	Providers map[string]*Provider
	// Aliases map other names (gpt-4o-mini) to model ids; see Resolve.
	Aliases map[string]string
}

// Model returns the model with id, or nil.
func (c *Catalog) Model(id string) *Model { return c.Models[id] }

// ModelsOfKind lists models of one kind sorted by id, for listing endpoints.
func (c *Catalog) ModelsOfKind(k Kind) []*Model {
	out := make([]*Model, 0, len(c.Models))
	for _, m := range c.Models {
		if m.Kind == k {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// AcceptsImages reports whether the model takes image input.
func (m *Model) AcceptsImages() bool {
	for _, x := range m.InputModalities {
		if x == "image" {
			return true
		}
	}
	return false
}

// Score is one published quality figure of a model, for the router
// plugins (auto-router, pareto-router): Value on a 0–1 scale (a benchmark's
// percentage / 100), and where it comes from — the leaderboard or benchmark
// and who reported it — and when. The routers compare models with them, so
// an operator who trusts other figures replaces them in the configuration
// file (models[].scores), which reloads live.
type Score struct {
	Value  float64 `yaml:"value" json:"value"`
	Source string  `yaml:"source" json:"source"`
	Date   string  `yaml:"date" json:"date"`
}

// ScoreFamilies are the keys a model's scores may have: overall and the
// task families the auto-router classifies a conversation into. A family a
// model has no score for is ranked by its overall score.
var ScoreFamilies = []string{"overall", "coding", "math", "reasoning", "writing", "vision", "multilingual", "tool_use"}
