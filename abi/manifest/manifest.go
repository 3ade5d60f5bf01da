// Package manifest is the declaration that travels with every Wasm module:
// what it is, which ABI it speaks, which hooks it implements, and what the
// host grants it. A module sees only what its manifest grants.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/switchyard/switchyard/abi"
)

// Kinds of module.
const (
	KindAdapter = "adapter" // translates between the unified format and a provider's wire format
	KindPlugin  = "plugin"  // runs in the request pipeline
)

// Runtimes a module can be run by.
const (
	RuntimeNative = "native" // Switchyard ABI (see docs/abi.md)
	RuntimeExtism = "extism" // a module built with an Extism PDK
)

// Manifest describes a module. JSON is its wire and storage format.
type Manifest struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	ABI     int    `json:"abi"`
	Kind    string `json:"kind"`
	Runtime string `json:"runtime,omitempty"` // default native
	// Description is for people listing modules.
	Description string   `json:"description,omitempty"`
	Hooks       []string `json:"hooks"`
	// Passthrough names hooks whose input is already the output (an
	// OpenAI-compatible upstream's responses are already unified), so the
	// host skips the call entirely.
	Passthrough []string `json:"passthrough,omitempty"`
	// Native maps a hook to the name of a host implementation that
	// computes exactly what the module's own handler for it computes (the
	// OpenAI adapter's chat_request is "openai-chat/1": the same Go code,
	// built for the host). The host runs it instead of calling the module
	// only after checking, when the module loads, that the module's output
	// equals it on the implementation's sample inputs; otherwise, or when
	// the host has no implementation of that name, the module is called as
	// always (docs/abi.md §native hooks).
	Native       map[string]string `json:"native,omitempty"`
	Grants       Grants            `json:"grants"`
	Limits       Limits            `json:"limits"`
	ConfigSchema json.RawMessage   `json:"config_schema,omitempty"`
	// Tools are the server tools the module implements through its
	// tool_call hook (docs/server-tools.md).
	Tools []Tool `json:"tools,omitempty"`
	// Router declares the plugin a router (docs/routing.md, "Router
	// models"): a request naming Router.Model is routed (or answered) by
	// it. The host builds its router table from the active modules'
	// manifests, so a router published by an account works for that
	// account's keys with no host change.
	Router *Router `json:"router,omitempty"`
	// Capabilities are what an adapter can do beyond the chat and
	// embeddings basics, for the host to route by (CapabilityFileInput).
	// The host reads them from the active module, so a new adapter
	// version that gains one needs no host release.
	Capabilities []string `json:"capabilities,omitempty"`
	// APIs are the forms of its provider's API an adapter speaks besides
	// the plain one, which a provider selects with `api:` in its
	// configuration and the adapter reads as ctx.api ("vertex" for Claude
	// on Vertex AI; "deepseek", "mistral", … for the OpenAI adapter). The
	// host refuses a provider naming a form its adapter does not list, and
	// calls even a passthrough hook for a provider with a form: the form
	// may answer differently (PassthroughFor).
	APIs []string `json:"apis,omitempty"`
	// EmbedInputs, for an adapter, caps the inputs one upstream embeddings
	// call takes, by upstream model: a key is a part of the model id
	// ("titan-embed"), its value the most inputs a call of a model whose
	// id contains it takes (Titan Text Embeddings on Bedrock: 1). The host
	// sends a longer request as several calls of at most that many inputs,
	// concurrently within a bound, and joins their answers in input order
	// with their usage summed (host/dispatch, split.go).
	EmbedInputs map[string]int `json:"embed_inputs,omitempty"`
	// MaxFee, for a plugin, is the most it charges in one request, in
	// dollars: the sum of the costs its stage summaries report
	// (docs/plugins.md, "Fees"; 0: the plugin never charges). The host
	// holds it before the request's plugins run and charges no more.
	// Unset: the operator's ceiling (limits.max_tool_fee_per_call) — the
	// lower of the two applies.
	MaxFee *float64 `json:"max_fee,omitempty"`
	// MaxSubCost, for a plugin granted chat, is the most its chat
	// sub-requests (chat, chat_batch) may cost in one request
	// without a chat_reserve, in dollars: the host holds it before the
	// plugin runs, and a sub-request whose worst case does not fit what is
	// left of it is refused with 402 (docs/plugins.md, "Fees"; 0: the
	// plugin makes none, or reserves them first, as fusion does). Unset:
	// the operator's limits.max_sub_request_cost — the lower of the two
	// applies.
	MaxSubCost *float64 `json:"max_sub_cost,omitempty"`
	// Roles are the parts of the request flow a plugin plays
	// (RoleModeration, …). The host finds the plugin for a part by its
	// role in the active modules' manifests, never by name, so a
	// plugin an account publishes can take a role for its keys and a
	// first-party plugin can be renamed with no host release.
	Roles []string `json:"roles,omitempty"`
	// Metrics are the counters and histograms the module adds to through
	// the metric host function (grant "metrics"); the host exports them on
	// /metrics as switchyard_module_<name> with the module's name and the
	// request's account as labels (docs/observability.md, "Module
	// metrics"). A name the manifest does not declare is refused.
	Metrics []Metric `json:"metrics,omitempty"`
}

// A Metric is one metric a module declares.
type Metric struct {
	Name string `json:"name"` // [a-z][a-z0-9_]{0,63}; a counter's ends in _total
	Type string `json:"type"` // MetricCounter or MetricHistogram
	Help string `json:"help"`
	// Buckets are a histogram's upper bounds, increasing (Prometheus's
	// le; +Inf is implied).
	Buckets []float64 `json:"buckets,omitempty"`
}

// Metric types (Metric.Type).
const (
	MetricCounter   = "counter"
	MetricHistogram = "histogram"
)

// Bounds of a manifest's metrics, so that one module cannot make /metrics
// large: with the host's bound on series (modmetrics), they keep a scrape
// small.
const (
	MaxMetrics       = 16
	MaxMetricBuckets = 32
)

// lazyRegexp compiles a pattern on its first use: the bounded
// repetitions of these ({0,63}) expand into large programs, and compiling
// all of them at package init took 12 ms and 0.6 MB on every start of the
// gateway (GODEBUG=inittrace=1), which validates manifests only when a
// module is published or seeded.
func lazyRegexp(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}

var metricNameRe = lazyRegexp(`^[a-z][a-z0-9_]{0,63}$`)

// MetricNamed is the declared metric name, nil when there is none.
func (m *Manifest) MetricNamed(name string) *Metric {
	for i := range m.Metrics {
		if m.Metrics[i].Name == name {
			return &m.Metrics[i]
		}
	}
	return nil
}

func (m *Manifest) validateMetrics() error {
	granted := contains(m.Grants.HostFunctions, abi.GrantMetrics)
	switch {
	case len(m.Metrics) > 0 && !granted:
		return fmt.Errorf("manifest %s: metrics: a module adds to its metrics through the metric host function; grant host function %q", m.Name, abi.GrantMetrics)
	case len(m.Metrics) == 0 && granted:
		return fmt.Errorf("manifest %s: grants.host_functions: %q without metrics: declare the metrics the module adds to", m.Name, abi.GrantMetrics)
	case len(m.Metrics) > MaxMetrics:
		return fmt.Errorf("manifest %s: metrics: %d declared, at most %d", m.Name, len(m.Metrics), MaxMetrics)
	}
	seen := map[string]bool{}
	for i, d := range m.Metrics {
		at := fmt.Sprintf("manifest %s: metrics[%d]", m.Name, i)
		switch {
		case !metricNameRe().MatchString(d.Name):
			return fmt.Errorf("%s: name %q must be 1-64 lowercase letters, digits or '_', starting with a letter", at, d.Name)
		case seen[d.Name]:
			return fmt.Errorf("%s: %q is declared twice", at, d.Name)
		case d.Help == "" || len(d.Help) > 256:
			return fmt.Errorf("%s: help must be 1-256 bytes", at)
		}
		seen[d.Name] = true
		switch d.Type {
		case MetricCounter:
			if !strings.HasSuffix(d.Name, "_total") {
				return fmt.Errorf("%s: a counter's name ends in _total (Prometheus's convention): %q", at, d.Name)
			}
			if len(d.Buckets) > 0 {
				return fmt.Errorf("%s: a counter has no buckets", at)
			}
		case MetricHistogram:
			if strings.HasSuffix(d.Name, "_total") || strings.HasSuffix(d.Name, "_bucket") || strings.HasSuffix(d.Name, "_sum") || strings.HasSuffix(d.Name, "_count") {
				return fmt.Errorf("%s: a histogram's name must not end in _total, _bucket, _sum or _count: %q", at, d.Name)
			}
			if len(d.Buckets) == 0 || len(d.Buckets) > MaxMetricBuckets {
				return fmt.Errorf("%s: a histogram has 1-%d buckets", at, MaxMetricBuckets)
			}
			for j, b := range d.Buckets {
				if math.IsNaN(b) || math.IsInf(b, 0) || (j > 0 && b <= d.Buckets[j-1]) {
					return fmt.Errorf("%s: buckets must be finite and increasing", at)
				}
			}
		default:
			return fmt.Errorf("%s: type %q: counter or histogram", at, d.Type)
		}
	}
	return nil
}

// Plugin roles (Manifest.Roles).
const (
	// RoleModeration: the plugin a provider's requires_moderation adds to
	// its requests; it gets the per-account and per-provider overrides of
	// its settings and ctx.required_by. Its config_schema decides whether
	// a request may disable it.
	RoleModeration = "moderation"
	// RoleCache: a response cache. Its stage runs last (its pre_request
	// may answer a hit), and a hit it reports is settled as a cache hit
	// (docs/response-cache.md).
	RoleCache = "cache"
	// RoleCompression: fits an over-long prompt into the context of the
	// endpoints the request may go to; on by default for a small-context
	// request that may not fit (spec 2.3).
	RoleCompression = "compression"
	// RoleOnline: the plugin the :online model variant turns on
	// (OpenRouter's shortcut for a web search plugin).
	RoleOnline = "online"
	// RoleServerTools: the plugin's "tools" option lists server tools,
	// which the host checks against the account's installed tools before
	// the plugin runs (a 400 naming plugins[i].tools[j]).
	RoleServerTools = "server_tools"
)

// roles are the roles a plugin may declare.
var roles = []string{RoleModeration, RoleCache, RoleCompression, RoleOnline, RoleServerTools}

// HasCapability reports whether the manifest declares capability c.
func (m *Manifest) HasCapability(c string) bool {
	return m != nil && slices.Contains(m.Capabilities, c)
}

// HasRole reports whether the manifest declares role.
func (m *Manifest) HasRole(role string) bool { return m != nil && slices.Contains(m.Roles, role) }

// CapabilityFileInput: the adapter translates chat file content parts
// (PDFs) into its provider's own form, so the file-parser plugin may hand
// a file on instead of extracting its text (route.Window.NativeFiles).
const CapabilityFileInput = "file_input"

// CapabilityEmbeddings: the plugin's pre_request hook takes embeddings
// requests too (POST /embeddings): its ctx.kind is "embeddings" and the
// request an embeddings body, which it may edit or block. Only plugins
// declaring it run on embeddings (docs/plugins.md, "Embeddings").
const CapabilityEmbeddings = "embeddings"

// CapabilityMessagesNative: the adapter's provider speaks Anthropic's
// Messages API, and its chat_request hook takes a Messages body as it is
// when the adapter context says "native":"messages" (only the model set);
// its response hooks read the provider's answers either way. The
// Messages front door then sends a client's request through unchanged
// (docs/front-doors.md, "Native mode").
const CapabilityMessagesNative = "messages_native"

// CapabilityEmbeddingTokenIDs: the adapter's provider's embeddings API
// takes input as token ids (OpenAI's, vLLM's and llama.cpp's do), so the
// host sends a client's ids unchanged; for an adapter without it the host
// decodes them to text first. A provider's embedding_token_ids setting
// overrides it (an OpenAI-compatible server that takes only text).
const CapabilityEmbeddingTokenIDs = "embedding_token_ids"

// adapterCapabilities are the capabilities an adapter may declare.
var adapterCapabilities = []string{CapabilityFileInput, CapabilityMessagesNative, CapabilityEmbeddingTokenIDs}

// Router is a router plugin's role.
type Router struct {
	// Model is the model id a request names to be routed by the plugin
	// (switchyard/auto): vendor/name, lowercase.
	Model string `json:"model"`
	// Strategy is service_metadata.strategy when the plugin decided (a
	// plugin may name another in its stage summary's "strategy").
	Strategy string `json:"strategy"`
	// Name is the model's name in GET /models.
	Name string `json:"name"`
	// Answers marks a router that answers the request itself through chat
	// sub-requests (fusion) rather than choosing its model: it runs in the
	// request's own pipeline, where a stream can open and keep alive while
	// it works, not in the router phase before it.
	Answers bool `json:"answers,omitempty"`
}

// Tool is one server tool a module declares: what a request names in its
// tools ("type"), and the function the model is shown in its place.
type Tool struct {
	// Type is "service:<name>", e.g. service:web_search.
	Type string `json:"type"`
	// Name is the function name the model sees and calls.
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the JSON Schema of the call's arguments.
	Parameters json.RawMessage `json:"parameters"`
	// MaxFee, when set, is the most one call costs, in dollars (0: the
	// tool is free). The host holds it, not the operator's per-call
	// ceiling, before a call runs — a free tool needs no credit held —
	// and charges a call that reports more at MaxFee. Unset: the
	// ceiling (limits.max_tool_fee_per_call).
	MaxFee *float64 `json:"max_fee,omitempty"`

	// schema is Parameters compiled by Validate, so a call's arguments
	// are checked without compiling the schema per call.
	schema *jsonschema.Schema
}

// CheckArguments reports how args (a JSON object) fail the tool's
// parameters schema, naming the field: the host refuses such a call before
// the module runs, and the model reads why and can call again.
func (t *Tool) CheckArguments(args []byte) error {
	s := t.schema
	if s == nil {
		var err error
		if s, err = CompileSchema("parameters.json", t.Parameters); err != nil {
			return err
		}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("not valid JSON")
	}
	if err := s.Validate(inst); err != nil {
		at, msg := SchemaViolation(err)
		if at != "" {
			return fmt.Errorf("%s: %s", at, msg)
		}
		return errors.New(msg)
	}
	return nil
}

// CompileSchema compiles a JSON Schema document (name is how its errors
// call it): a tool's parameters, a plugin's config_schema. The compiler
// loads no remote documents: a $ref to anything but the standard
// metaschemas fails here instead of reaching the network.
//
// formats are the host's own formats a schema may name ("model-id"): they
// are asserted, as are the standard ones then.
func CompileSchema(name string, doc []byte, formats ...*jsonschema.Format) (*jsonschema.Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if len(formats) > 0 {
		c.AssertFormat()
		for _, f := range formats {
			c.RegisterFormat(f)
		}
	}
	if err := c.AddResource(name, v); err != nil {
		return nil, err
	}
	return c.Compile(name)
}

// SchemaViolation is the deepest cause of a validation error of a schema
// from CompileSchema: where in the instance (a dot-joined path, "" for the
// instance itself) and what, for a message a person can act on.
func SchemaViolation(err error) (at, msg string) {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return "", err.Error()
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	msg = ve.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return strings.Join(ve.InstanceLocation, "."), msg
}

// ToolTypePrefix starts every server tool type.
const ToolTypePrefix = "service:"

// Grants is everything beyond pure computation a module may do.
type Grants struct {
	// HostFunctions the module may import from the "switchyard" module.
	HostFunctions []string `json:"host_functions,omitempty"`
	// HTTPDomains the module may reach through the host's outbound call.
	HTTPDomains []string `json:"http_domains,omitempty"`
	// Secrets names operator secrets the host may substitute for
	// ${secret:NAME} in the module's outbound calls (header values and the
	// URL query, to HTTPDomains only). The module never sees their values.
	Secrets []string `json:"secrets,omitempty"`
}

// Limits bound a module's resources.
type Limits struct {
	// MemoryPages caps linear memory in 64 KiB pages. Standard Go guests need
	// at least 128 (see shared/design/wasm-measurements.md).
	MemoryPages uint32 `json:"memory_pages,omitempty"`
	// TimeoutMS bounds one call. 0 means the module is trusted not to spin
	// and runs without preemption checks, which are costly in tight loops.
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// PoolSize caps live instances (concurrent calls) of the module.
	PoolSize int `json:"pool_size,omitempty"`
}

// Defaults applied by Parse.
const (
	DefaultMemoryPages = 256 // 16 MiB
	MaxMemoryPages     = 65536
	DefaultPoolSize    = 16
	MaxPoolSize        = 1024
	MaxTimeoutMS       = 60_000
)

var (
	nameRe     = lazyRegexp(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	nativeRe   = lazyRegexp(`^[a-z0-9][a-z0-9._/-]{0,63}$`)
	versionRe  = lazyRegexp(`^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]{1,64})?$`)
	secretRe   = lazyRegexp(`^[A-Z][A-Z0-9_]{0,63}$`)
	toolTypeRe = lazyRegexp(`^service:[a-z0-9][a-z0-9_]{0,63}$`)
	toolNameRe = lazyRegexp(`^[A-Za-z0-9_-]{1,64}$`)
)

// Parse decodes and validates a manifest. Unknown fields are an error, so a
// typo in a grant is not silently ignored.
func Parse(data []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("manifest: trailing data after the JSON object")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks the manifest and fills defaults.
func (m *Manifest) Validate() error {
	if !nameRe().MatchString(m.Name) {
		return fmt.Errorf("manifest: name %q must be 1-64 lowercase letters, digits, '.', '_' or '-'", m.Name)
	}
	if !versionRe().MatchString(m.Version) {
		return fmt.Errorf("manifest %s: version %q is not semantic (MAJOR.MINOR.PATCH)", m.Name, m.Version)
	}
	if m.ABI != abi.Version {
		return fmt.Errorf("manifest %s: ABI version %d is not supported by this host (supports %d)", m.Name, m.ABI, abi.Version)
	}
	switch m.Kind {
	case KindAdapter, KindPlugin:
	default:
		return fmt.Errorf("manifest %s: kind %q must be %q or %q", m.Name, m.Kind, KindAdapter, KindPlugin)
	}
	switch m.Runtime {
	case "":
		m.Runtime = RuntimeNative
	case RuntimeNative, RuntimeExtism:
	default:
		return fmt.Errorf("manifest %s: runtime %q must be %q or %q", m.Name, m.Runtime, RuntimeNative, RuntimeExtism)
	}
	if len(m.Hooks) == 0 {
		return fmt.Errorf("manifest %s: hooks: at least one hook is required", m.Name)
	}
	declared := map[string]bool{}
	for _, h := range m.Hooks {
		hook, ok := abi.HookByName(h)
		if !ok {
			return fmt.Errorf("manifest %s: hooks: unknown hook %q", m.Name, h)
		}
		if plugin := hook >= abi.HookPreRequest; plugin != (m.Kind == KindPlugin) {
			return fmt.Errorf("manifest %s: hooks: %q is not a hook of kind %s", m.Name, h, m.Kind)
		}
		if declared[h] {
			return fmt.Errorf("manifest %s: hooks: %q listed twice", m.Name, h)
		}
		declared[h] = true
	}
	if m.MaxFee != nil && (m.Kind != KindPlugin || !(*m.MaxFee >= 0 && *m.MaxFee <= 1e6)) {
		return fmt.Errorf("manifest %s: max_fee: %v must be a dollar amount from 0 to 1000000, on a plugin", m.Name, *m.MaxFee)
	}
	if m.MaxSubCost != nil && (m.Kind != KindPlugin || !(*m.MaxSubCost >= 0 && *m.MaxSubCost <= 1e6)) {
		return fmt.Errorf("manifest %s: max_sub_cost: %v must be a dollar amount from 0 to 1000000, on a plugin", m.Name, *m.MaxSubCost)
	}
	for _, h := range m.Passthrough {
		if !declared[h] {
			return fmt.Errorf("manifest %s: passthrough: %q is not among the declared hooks", m.Name, h)
		}
	}
	for h, impl := range m.Native {
		switch {
		case !declared[h]:
			return fmt.Errorf("manifest %s: native: %q is not among the declared hooks", m.Name, h)
		case contains(m.Passthrough, h):
			return fmt.Errorf("manifest %s: native: %q is passthrough, so the host never calls it", m.Name, h)
		case !nativeRe().MatchString(impl):
			return fmt.Errorf("manifest %s: native: %q for hook %s must be 1-64 lowercase letters, digits, '.', '_', '-' or '/'", m.Name, impl, h)
		}
	}
	for _, f := range m.Grants.HostFunctions {
		switch f {
		case abi.GrantLog, abi.GrantHTTP, abi.GrantChat, abi.GrantCountTokens, abi.GrantKV, abi.GrantEmbed, abi.GrantVector, abi.GrantMetrics:
		default:
			return fmt.Errorf("manifest %s: grants.host_functions: unknown host function %q (log, http, chat, count_tokens, kv, embed, vector, metrics)", m.Name, f)
		}
	}
	if err := m.validateMetrics(); err != nil {
		return err
	}
	for _, s := range m.Grants.Secrets {
		if !secretRe().MatchString(s) {
			return fmt.Errorf("manifest %s: grants.secrets: %q must be 1-64 upper-case letters, digits or '_', starting with a letter", m.Name, s)
		}
	}
	if len(m.Grants.Secrets) > 0 && !contains(m.Grants.HostFunctions, abi.GrantHTTP) {
		return fmt.Errorf("manifest %s: grants.secrets: secrets are only used in outbound calls; grant host function %q too", m.Name, abi.GrantHTTP)
	}
	for _, d := range m.Grants.HTTPDomains {
		if d == AnyDomain {
			// A secret goes only to granted domains: with every domain
			// granted it could be sent anywhere.
			if len(m.Grants.Secrets) > 0 {
				return fmt.Errorf("manifest %s: grants.http_domains \"*\" cannot be combined with grants.secrets", m.Name)
			}
			continue
		}
		if d == "" || strings.ContainsAny(d, "/:@ ") || strings.Count(d, "*") > 1 || (strings.Contains(d, "*") && !strings.HasPrefix(d, "*.")) {
			return fmt.Errorf("manifest %s: grants.http_domains: %q must be a host name, *.domain or *", m.Name, d)
		}
	}
	l := &m.Limits
	if l.MemoryPages == 0 {
		l.MemoryPages = DefaultMemoryPages
	}
	if l.MemoryPages > MaxMemoryPages {
		return fmt.Errorf("manifest %s: limits.memory_pages %d exceeds %d", m.Name, l.MemoryPages, MaxMemoryPages)
	}
	if l.TimeoutMS < 0 || l.TimeoutMS > MaxTimeoutMS {
		return fmt.Errorf("manifest %s: limits.timeout_ms must be 0..%d", m.Name, MaxTimeoutMS)
	}
	if l.PoolSize == 0 {
		l.PoolSize = DefaultPoolSize
	}
	if l.PoolSize < 0 || l.PoolSize > MaxPoolSize {
		return fmt.Errorf("manifest %s: limits.pool_size must be 1..%d", m.Name, MaxPoolSize)
	}
	if len(m.ConfigSchema) > 0 && !json.Valid(m.ConfigSchema) {
		return fmt.Errorf("manifest %s: config_schema is not valid JSON", m.Name)
	}
	for _, c := range m.Capabilities {
		adapter := slices.Contains(adapterCapabilities, c) && m.Kind == KindAdapter
		plugin := c == CapabilityEmbeddings && m.Kind == KindPlugin
		if !adapter && !plugin {
			return fmt.Errorf("manifest %s: capabilities: unknown capability %q for a %s (an adapter may declare %s; a plugin %q)", m.Name, c, m.Kind, strings.Join(adapterCapabilities, ", "), CapabilityEmbeddings)
		}
	}
	for _, r := range m.Roles {
		if !slices.Contains(roles, r) || m.Kind != KindPlugin {
			return fmt.Errorf("manifest %s: roles: unknown role %q for a %s (a plugin may declare %s)", m.Name, r, m.Kind, strings.Join(roles, ", "))
		}
	}
	for _, a := range m.APIs {
		if !apiRe().MatchString(a) || m.Kind != KindAdapter {
			return fmt.Errorf("manifest %s: apis: %q is not a form an adapter may declare (a lowercase word)", m.Name, a)
		}
	}
	for k, n := range m.EmbedInputs {
		if k == "" || n < 1 || m.Kind != KindAdapter || !declared[abi.HookEmbedRequest.String()] {
			return fmt.Errorf("manifest %s: embed_inputs: %q: %d must be at least 1, for a model id part, in an adapter with an embed_request hook", m.Name, k, n)
		}
	}
	if err := m.validateRouter(declared[abi.HookPreRequest.String()]); err != nil {
		return err
	}
	return m.validateTools(declared[abi.HookToolCall.String()])
}

var (
	apiRe            = lazyRegexp(`^[a-z0-9][a-z0-9_-]{0,31}$`)
	routerModelRe    = lazyRegexp(`^[a-z0-9][a-z0-9._-]{0,63}/[a-z0-9][a-z0-9._:-]{0,127}$`)
	routerStrategyRe = lazyRegexp(`^[a-z0-9][a-z0-9:_-]{0,31}$`)
)

// validateRouter checks a router role: a plugin with a pre_request hook
// (where it decides), a model id as the catalog writes them, a short
// strategy word, and chat for one that answers (its sub-requests).
func (m *Manifest) validateRouter(preRequest bool) error {
	r := m.Router
	switch {
	case r == nil:
		return nil
	case m.Kind != KindPlugin || !preRequest:
		return fmt.Errorf("manifest %s: router: only a plugin with the %q hook can route", m.Name, abi.HookPreRequest.String())
	case !routerModelRe().MatchString(r.Model):
		return fmt.Errorf("manifest %s: router.model: %q must be vendor/name in lowercase letters, digits, '.', '_', '-' (and ':' in the name)", m.Name, r.Model)
	case !routerStrategyRe().MatchString(r.Strategy):
		return fmt.Errorf("manifest %s: router.strategy: %q must be 1-32 lowercase letters, digits, ':', '_' or '-'", m.Name, r.Strategy)
	case r.Name == "" || len(r.Name) > 200:
		return fmt.Errorf("manifest %s: router.name: required, at most 200 bytes: the model's name in GET /models", m.Name)
	case r.Answers && !contains(m.Grants.HostFunctions, abi.GrantChat):
		return fmt.Errorf("manifest %s: router.answers: a router that answers does so through chat sub-requests; grant host function %q", m.Name, abi.GrantChat)
	}
	return nil
}

// validateTools checks tools: each has a service: type, a function name
// the providers accept, a description and a JSON Schema object; types and
// names are unique; and the module implements tool_call exactly when it
// declares tools.
func (m *Manifest) validateTools(hasHook bool) error {
	switch {
	case len(m.Tools) > 0 && !hasHook:
		return fmt.Errorf("manifest %s: tools: a module that declares tools must list the %q hook", m.Name, abi.HookToolCall.String())
	case len(m.Tools) == 0 && hasHook:
		return fmt.Errorf("manifest %s: hooks: %q needs at least one entry in tools", m.Name, abi.HookToolCall.String())
	}
	seen := map[string]bool{}
	for i, t := range m.Tools {
		at := fmt.Sprintf("manifest %s: tools[%d]", m.Name, i)
		switch {
		case !toolTypeRe().MatchString(t.Type):
			return fmt.Errorf("%s.type: %q must be %q followed by lowercase letters, digits or underscores", at, t.Type, ToolTypePrefix)
		case !toolNameRe().MatchString(t.Name):
			return fmt.Errorf("%s.name: %q must be 1-64 letters, digits, underscores or dashes (a function name)", at, t.Name)
		case strings.TrimSpace(t.Description) == "":
			return fmt.Errorf("%s.description: required: what the tool does, for the model", at)
		case !isJSONObject(t.Parameters):
			return fmt.Errorf("%s.parameters: required: a JSON Schema object for the arguments", at)
		case seen["t:"+t.Type] || seen["n:"+t.Name]:
			return fmt.Errorf("%s: type %q or name %q declared twice", at, t.Type, t.Name)
		case t.MaxFee != nil && !(*t.MaxFee >= 0 && *t.MaxFee <= 1e6):
			return fmt.Errorf("%s.max_fee: %v must be a dollar amount from 0 to 1000000", at, *t.MaxFee)
		}
		sch, err := CompileSchema("parameters.json", t.Parameters)
		if err != nil {
			return fmt.Errorf("%s.parameters: not a valid JSON Schema: %v", at, err)
		}
		m.Tools[i].schema = sch
		seen["t:"+t.Type], seen["n:"+t.Name] = true, true
	}
	return nil
}

func isJSONObject(b json.RawMessage) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(b, &v) == nil && v != nil
}

// Tool returns the declared tool of type typ, or nil.
func (m *Manifest) Tool(typ string) *Tool {
	for i := range m.Tools {
		if m.Tools[i].Type == typ {
			return &m.Tools[i]
		}
	}
	return nil
}

// Has reports whether the module declares hook.
func (m *Manifest) Has(h abi.Hook) bool { return contains(m.Hooks, h.String()) }

// IsPassthrough reports whether the host may skip calling hook.
func (m *Manifest) IsPassthrough(h abi.Hook) bool { return contains(m.Passthrough, h.String()) }

// PassthroughFor reports whether the host may skip calling hook for a
// provider whose configuration selects the API form api ("" for none): a
// form's answers may differ from the plain API's, so only the plain API
// skips a passthrough hook.
func (m *Manifest) PassthroughFor(h abi.Hook, api string) bool {
	return api == "" && m.IsPassthrough(h)
}

// SpeaksAPI reports whether the adapter lists the API form api.
func (m *Manifest) SpeaksAPI(api string) bool { return contains(m.APIs, api) }

// MaxEmbedInputs is the most inputs one upstream embeddings call of model
// takes (EmbedInputs; the least of the keys model contains), 0 for no cap.
func (m *Manifest) MaxEmbedInputs(model string) int {
	most := 0
	for k, n := range m.EmbedInputs {
		if strings.Contains(model, k) && (most == 0 || n < most) {
			most = n
		}
	}
	return most
}

// GrantsHostFunction reports whether the module may import host function f
// (an import name such as "http_request", or a grant name).
func (m *Manifest) GrantsHostFunction(f string) bool {
	switch f {
	case abi.HostHTTPRequest, abi.HostHTTPResponse:
		f = abi.GrantHTTP
	case abi.HostKVGet, abi.HostKVPut:
		f = abi.GrantKV
	case abi.HostChatBatch, abi.HostChatReserve:
		f = abi.GrantChat
	case abi.HostVectorPut, abi.HostVectorSearch:
		f = abi.GrantVector
	case abi.HostMetric:
		f = abi.GrantMetrics
	case abi.HostResult:
		// result reads what chat, count_tokens, kv, embed and vector
		// return: any of them grants it.
		return contains(m.Grants.HostFunctions, abi.GrantChat) || contains(m.Grants.HostFunctions, abi.GrantCountTokens) ||
			contains(m.Grants.HostFunctions, abi.GrantKV) || contains(m.Grants.HostFunctions, abi.GrantEmbed) ||
			contains(m.Grants.HostFunctions, abi.GrantVector) || contains(m.Grants.HostFunctions, abi.GrantMetrics)
	}
	return contains(m.Grants.HostFunctions, f)
}

// GrantsSecret reports whether the module may have secret name substituted
// into its outbound calls.
func (m *Manifest) GrantsSecret(name string) bool { return contains(m.Grants.Secrets, name) }

// AnyDomain in grants.http_domains grants every host. It is for modules
// whose job is to reach pages a caller names (web-fetch); the host's guard
// against loopback, private and link-local addresses still applies to every
// call, so it grants the public web only.
const AnyDomain = "*"

// GrantsDomain reports whether host is among grants.http_domains
// ("*.example.com" matches its subdomains, not example.com itself; "*"
// matches every host).
func (m *Manifest) GrantsDomain(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, d := range m.Grants.HTTPDomains {
		d = strings.ToLower(d)
		if d == AnyDomain || d == host || (strings.HasPrefix(d, "*.") && strings.HasSuffix(host, d[1:])) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
