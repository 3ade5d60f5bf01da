// Package config reads the gateway's configuration: one YAML file (or the
// embedded default) plus environment overrides, turned into a catalog.
package config

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"github.com/switchyard/switchyard/abi/chatparams"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/credentials"
	"github.com/switchyard/switchyard/host/ratelimit"
	"gopkg.in/yaml.v3"
)

//go:embed default.yaml
var defaultYAML []byte

// Default returns the embedded default configuration.
func Default() []byte { return defaultYAML }

// Store chooses the store (host/store.Config has the meaning of each
// field; a copy here keeps this package free of the store's dependencies,
// since modules' tests read the default configuration under wasip1).
type Store struct {
	Driver string `yaml:"driver"` // "bbolt" (default) or "postgres"
	Path   string `yaml:"path"`   // the bbolt file; default <data_dir>/switchyard.db
	DSN    string `yaml:"dsn"`    // postgres://…; ${VAR} is expanded from the environment
}

// Redis is the Redis the instances of a cluster share.
type Redis struct {
	// URL is redis://[user:password@]host:port/db (rediss:// for TLS,
	// unix:///path.sock); "" means no Redis. ${VAR} is expanded from the
	// environment, so the password can stay out of the file.
	URL string `yaml:"url"`
	// Timeout bounds one Redis call on the request path, past which the
	// instance decides alone (limits per instance, the session unpinned);
	// default 250ms for the rate limiter and 100ms for sticky sessions.
	// A Redis in another zone, or a loaded test machine, wants more.
	Timeout Duration `yaml:"timeout"`
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// apiRe is the shape of a provider's api (a form an adapter's manifest
// lists in "apis").
var apiRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// ResolvedURL is URL with each ${VAR} replaced by getenv(VAR); a variable
// that is not set is an error (a bare $ is left alone).
func (r Redis) ResolvedURL(getenv func(string) string) (string, error) {
	var missing string
	u := envRef.ReplaceAllStringFunc(r.URL, func(m string) string {
		v := getenv(m[2 : len(m)-1])
		if v == "" && missing == "" {
			missing = m
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("config: redis.url: %s is not set in the environment", missing)
	}
	return u, nil
}

// Config is the file format. Durations are Go duration strings ("30s").
type Config struct {
	Listen  string `yaml:"listen"`
	DataDir string `yaml:"data_dir"`
	// Store chooses where state lives: the embedded bbolt file in DataDir
	// (default) or a PostgreSQL database shared by several gateways
	// (docs/cluster.md).
	Store        Store  `yaml:"store"`
	BootstrapKey string `yaml:"bootstrap_key"`
	// BootstrapCredits (USD) funds the bootstrap account once, when it is
	// created, so a fresh install can make requests.
	BootstrapCredits float64 `yaml:"bootstrap_credits"`
	// Settle says what a response waits for before it tells the client
	// its cost (docs/billing.md has the trade-offs and figures):
	//   - journal (default, ""): the charge appended to a local journal in
	//     data_dir, fsynced within settle_journal_sync (5 ms: one fdatasync
	//     per period); the
	//     store commits it within settle_commit_window. A crash of the
	//     process (kill -9, OOM) loses no acknowledged charge: the next
	//     start replays the journal; a power loss or kernel crash can lose
	//     the last settle_journal_sync.
	//   - journal-fsync: the same, with each charge's fdatasync before its
	//     answer (group commit): nothing acknowledged is lost even to a
	//     power loss, for ~0.5 ms more per request.
	//   - commit: the store's own commit (bbolt: two fsyncs per group).
	//   - memory: nothing; a hard crash loses up to settle_commit_window of
	//     acknowledged charges (under-charges).
	Settle string `yaml:"settle"`
	// DurableSettle true is the older spelling of settle: commit.
	DurableSettle bool `yaml:"durable_settle"`
	// SettleCommitWindow is, with durable_settle off, how long acknowledged
	// charges gather in memory before one commit writes them all: what a
	// hard crash can lose. Unset: 100ms on the embedded store, 5ms on
	// PostgreSQL (billing.DefaultCommitWindow, SharedCommitWindow);
	// at most 1s.
	SettleCommitWindow Duration `yaml:"settle_commit_window"`
	// SettleJournalSync is, with settle: journal, the longest an
	// acknowledged charge waits for the journal's fdatasync: what a power
	// loss or kernel crash can lose (a crash of the process loses nothing
	// either way). Unset: 5ms; from 1ms to 1s (MySQL's
	// innodb_flush_log_at_trx_commit=2 and Redis's appendfsync everysec
	// make the same trade at one second). A sync costs about the same
	// whatever it covers — on the 2-vCPU VM of docs/performance.md ~0.2–0.4
	// ms of CPU, most of it the virtual disk's and the interrupts' — so a
	// longer period is cheaper the fewer requests share one.
	SettleJournalSync Duration `yaml:"settle_journal_sync"`
	// GCPercent is the Go garbage collector's target the gateway serves
	// with when the GOGC environment variable is not set (GOGC wins): 0 =
	// tuned after every collection, up to 400 while the live heap is small
	// (host/gctune; it saves CPU on every request, docs/performance.md),
	// a percentage = that one fixed, -1 = off (set GOMEMLIMIT then).
	GCPercent int `yaml:"gc_percent"`
	// Demo starts the offline demo upstream and points provider "demo" at it.
	Demo bool `yaml:"demo"`
	// ModulesDir holds built modules: <name>.wasm beside <name>.json manifests
	// (make build writes build/wasm). They seed the module store at start.
	ModulesDir   string   `yaml:"modules_dir"`
	MaxBodyBytes int      `yaml:"max_body_bytes"`
	Timeouts     Timeouts `yaml:"timeouts"`
	// Limits bound connections, request bodies and load (limits.go).
	Limits Limits `yaml:"limits"`
	// KeepAlive is the interval of SSE comments while an upstream is silent.
	KeepAlive Duration   `yaml:"keep_alive"`
	Providers []Provider `yaml:"providers"`
	Models    []Model    `yaml:"models"`
	// Aliases map names clients send without a vendor (gpt-4o-mini, the
	// names OpenAI's SDK examples use) to model ids. A model can also list
	// its own aliases; both end up in the catalog.
	Aliases map[string]string `yaml:"aliases"`
	// RateLimits are every account's default limits (requests and tokens
	// per minute, concurrent requests; 0 = unlimited), shared by all of an
	// account's keys. An account's own limits (set by the operator) replace
	// them field by field, and a key's limits apply on top (docs/ratelimit.md).
	// A field left 0 is the built-in default (ratelimit.BuiltinAccount) for
	// every account but the operator's; -1 is unlimited.
	RateLimits ratelimit.Limits `yaml:"rate_limits"`
	// KeyRateLimits are every key's default limits, likewise: a key's own
	// replace them field by field; 0 = ratelimit.BuiltinKey except on the
	// operator's account, -1 = unlimited.
	KeyRateLimits ratelimit.Limits `yaml:"key_rate_limits"`
	// Redis is where instances share rate limits and sticky sessions
	// (docs/cluster.md); without it both stay in the process.
	Redis Redis `yaml:"redis"`
	// TenantModules are the ceilings of modules accounts publish; ModuleLogs
	// the log budgets of every module (docs/security.md, "Hostile module").
	TenantModules TenantModules `yaml:"tenant_modules"`
	ModuleLogs    ModuleLogs    `yaml:"module_logs"`
	// Modules bound the host functions modules call (docs/abi.md section
	// 5): outbound HTTP, chat sub-requests, the key-value store.
	Modules Modules `yaml:"modules"`
	// Secrets are operator secrets modules may have substituted into their
	// outbound calls (${secret:NAME}, granted by name in the manifest).
	// SWITCHYARD_SECRET_<NAME> in the environment sets or overrides one.
	Secrets map[string]string `yaml:"secrets"`
	// ModuleSettings are the operator's settings of global modules, by
	// module name, handed to the module as ctx.settings (JSON): for example
	// module_settings.web picks the web module's default search engine and
	// each engine's base URL, secret name and fee (docs/web.md).
	ModuleSettings map[string]any `yaml:"module_settings"`
	// Metrics and Log are the operator's view (observability.go,
	// docs/observability.md).
	Metrics Metrics `yaml:"metrics"`
	Log     Log     `yaml:"log"`
	// Retention bounds how long generation records are kept (retention.go);
	// absent, forever.
	Retention Retention `yaml:"retention"`
	// Content is the opt-in storage of prompts and completions for GET
	// /generation/content (content.go, docs/security.md, "Stored content").
	Content Content `yaml:"content"`
}

// Modules is the configuration of module host functions; 0 means the
// built-in default (docs/plugins.md, "Host functions").
type Modules struct {
	// PrivateHosts are "host:port" (or "host": any port) destinations
	// modules granted http may reach although they are loopback or private
	// addresses (an intranet page, a local search engine). Everything else
	// stays behind the SSRF guard.
	PrivateHosts []string `yaml:"private_hosts"`
	// PrivateHostAccounts are the accounts whose own modules may reach
	// PrivateHosts as well; by default only the gateway-wide modules may.
	PrivateHostAccounts []string `yaml:"private_host_accounts"`
	// TenantSecrets names the secrets modules published by accounts may
	// use (none by default: only the operator's modules get secrets).
	TenantSecrets []string `yaml:"tenant_secrets"`
	// ChatCallsPerRequest is the budget of chat host calls of one request.
	ChatCallsPerRequest int            `yaml:"chat_calls_per_request"`
	HTTP                ModulesHTTP    `yaml:"http"`
	KV                  ModulesKV      `yaml:"kv"`
	Vectors             ModulesVectors `yaml:"vectors"`
}

// ModulesVectors bounds the module vector index (vector_put and
// vector_search): entries of one partition (one module, account and
// partition name: the response cache's account or key), entries of the
// whole index (every account's), dimensions of a vector. 0: the defaults
// (10,000, 1,000,000, 8,192).
type ModulesVectors struct {
	MaxPerPartition int `yaml:"max_per_partition"`
	MaxTotal        int `yaml:"max_total"`
	MaxDims         int `yaml:"max_dims"`
	// ANNThreshold: entries of one tag of one partition from which it is
	// searched through an approximate HNSW graph, built in the background,
	// instead of exactly (host/vecindex; 0: 10,000, where the graph beats
	// the scan at 256 dimensions: docs/response-cache.md).
	ANNThreshold int `yaml:"ann_threshold"`
}

// ModulesHTTP bounds the http host function.
type ModulesHTTP struct {
	CallsPerRequest  int      `yaml:"calls_per_request"`
	MaxResponseBytes int64    `yaml:"max_response_bytes"`
	Timeout          Duration `yaml:"timeout"`
	// MinBytesPerSecond fails a response whose body arrives slower than
	// this on average, a second after its headers (0 = 1024, -1 = off):
	// a page sending a byte a second held a module instance for the
	// whole timeout (issue 31 item 4).
	MinBytesPerSecond int64 `yaml:"min_bytes_per_second"`
	// RootCAs are PEM files of certificate authorities modules' https
	// calls trust besides the system's (an intranet's own CA, a test
	// server's): without them only publicly trusted certificates pass.
	RootCAs []string `yaml:"root_cas"`
}

// ModulesKV bounds the module key-value store: the quota of one module for
// one account, the size of one entry, the longest TTL, and how often
// expired entries are swept.
type ModulesKV struct {
	MaxKeys       int      `yaml:"max_keys"`
	MaxBytes      int64    `yaml:"max_bytes"`
	MaxKeyBytes   int      `yaml:"max_key_bytes"`
	MaxValueBytes int      `yaml:"max_value_bytes"`
	MaxTTL        Duration `yaml:"max_ttl"`
	SweepEvery    Duration `yaml:"sweep_every"`
	// MaxCacheBytes bounds one module's entries across every account
	// (the response cache's total size; 0: no bound). Evicting puts
	// (caches) evict the least recently used entries of any account to
	// stay within it.
	MaxCacheBytes int64 `yaml:"max_cache_bytes"`
}

// SecretEnvPrefix prefixes environment variables that set secrets.
const SecretEnvPrefix = "SWITCHYARD_SECRET_"

var secretName = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// ResolveSecrets returns the secrets of the file with those of environ
// (os.Environ's "KEY=value" form) named SWITCHYARD_SECRET_<NAME> on top.
func (c *Config) ResolveSecrets(environ []string) map[string]string {
	out := map[string]string{}
	for k, v := range c.Secrets {
		out[k] = v
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if name, ok := strings.CutPrefix(k, SecretEnvPrefix); ok && secretName.MatchString(name) && v != "" {
			out[name] = v
		}
	}
	return out
}

func (c *Config) checkModules() error {
	for name := range c.Secrets {
		if !secretName.MatchString(name) {
			return fmt.Errorf("config: secrets: %q must be 1-64 upper-case letters, digits or '_', starting with a letter (the name modules write in ${secret:NAME})", name)
		}
	}
	for _, name := range c.Modules.TenantSecrets {
		if !secretName.MatchString(name) {
			return fmt.Errorf("config: modules.tenant_secrets: %q is not a secret name", name)
		}
	}
	for _, h := range c.Modules.PrivateHosts {
		if h == "" || strings.ContainsAny(h, "/@ ") {
			return fmt.Errorf("config: modules.private_hosts: %q must be host:port or host (no scheme or path)", h)
		}
	}
	m := c.Modules
	if m.ChatCallsPerRequest < 0 || m.HTTP.CallsPerRequest < 0 || m.HTTP.MaxResponseBytes < 0 || m.HTTP.Timeout < 0 ||
		m.KV.MaxKeys < 0 || m.KV.MaxBytes < 0 || m.KV.MaxKeyBytes < 0 || m.KV.MaxValueBytes < 0 || m.KV.MaxTTL < 0 || m.KV.SweepEvery < 0 || m.KV.MaxCacheBytes < 0 ||
		m.Vectors.MaxPerPartition < 0 || m.Vectors.MaxTotal < 0 || m.Vectors.MaxDims < 0 || m.Vectors.ANNThreshold < 0 {
		return fmt.Errorf("config: modules: limits must not be negative (0 = the default)")
	}
	return nil
}

// ModuleSettingsJSON is ModuleSettings with each module's settings as JSON.
func (c *Config) ModuleSettingsJSON() (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, v := range c.ModuleSettings {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("config: module_settings.%s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// TenantModules bound account-scoped modules. A tenant's manifest asking for
// more (or for no time limit) is clamped to these; 0 means the built-in
// default (docs/plugins.md).
type TenantModules struct {
	TimeoutMS       int    `yaml:"timeout_ms"`
	MemoryPages     uint32 `yaml:"memory_pages"`
	PoolSize        int    `yaml:"pool_size"`
	ConcurrentCalls int    `yaml:"concurrent_calls"`
	CPUMsPerMinute  int64  `yaml:"cpu_ms_per_minute"`
	// IdleMemoryBytes is the memory one account's idle (warm) module
	// instances may keep; 0 = concurrent_calls × memory_pages × 64 KiB.
	IdleMemoryBytes int64 `yaml:"idle_memory_bytes"`
	// CompiledIdle is how long an account's module may go uncalled before
	// its compiled code is freed (compiled again from the store on its
	// next call); 0 = 10 minutes, negative = never.
	CompiledIdle Duration `yaml:"compiled_idle"`
	// What one account may keep stored (issue 31 item 2): module names,
	// versions of one module, and bytes of binaries in all. 0 = the
	// default (16, 8, 128 MiB), -1 = unlimited.
	MaxModules           int   `yaml:"max_modules"`
	MaxVersionsPerModule int   `yaml:"max_versions_per_module"`
	MaxBytes             int64 `yaml:"max_bytes"`
}

// Quota is the account quota of stored modules, defaults applied; 0 in
// a field is unlimited.
func (t TenantModules) Quota() (modules, versions int, bytes int64) {
	pick := func(v, def int64) int64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	return int(pick(int64(t.MaxModules), 16)), int(pick(int64(t.MaxVersionsPerModule), 8)), pick(t.MaxBytes, 128<<20)
}

// ModuleLogs budget what modules write to the log, per call and per account
// per minute; 0 means the built-in default.
type ModuleLogs struct {
	BytesPerCall   int64 `yaml:"bytes_per_call"`
	LinesPerCall   int64 `yaml:"lines_per_call"`
	BytesPerMinute int64 `yaml:"bytes_per_minute"`
	LinesPerMinute int64 `yaml:"lines_per_minute"`
}

// Timeouts bound upstream calls.
type Timeouts struct {
	// Attempt bounds one upstream attempt up to its response headers (and,
	// for non-streaming calls, its whole body). A timed-out attempt is a 524
	// and the next endpoint is tried.
	Attempt Duration `yaml:"attempt"`
	// Request bounds the whole request including fallbacks and streaming; past
	// it the caller gets a 408.
	Request Duration `yaml:"request"`
}

// Duration is a time.Duration read from a string.
type Duration time.Duration

// UnmarshalYAML parses "30s"-style durations, and whole days ("90d").
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// Provider is an upstream service.
type Provider struct {
	Slug      string `yaml:"slug"`
	Name      string `yaml:"name"`
	BaseURL   string `yaml:"base_url"`
	Adapter   string `yaml:"adapter"`
	APIKeyEnv string `yaml:"api_key_env"`
	// Auth declares a host-side credential scheme (aws-sigv4,
	// google-service-account, azure-api-key, azure-ad) for providers a
	// bare key cannot reach (docs/configuration.md, "Provider credentials").
	Auth *credentials.Config `yaml:"auth"`
	// API selects a form of the adapter's API, one its manifest lists in
	// "apis": "vertex" with the anthropic adapter is Claude on Google
	// Vertex AI (rawPredict); "deepseek", "mistral", "xai", "cerebras",
	// "fireworks" and "openrouter" with the openai adapter are those
	// providers' differences from OpenAI's API (docs/providers.md).
	API string `yaml:"api"`
	// Optional means the provider is used only when its key is set; a
	// provider without api_key_env (a local server) is always on.
	DataCollection      string   `yaml:"data_collection"`
	ZDR                 bool     `yaml:"zdr"`
	Region              string   `yaml:"region"`
	SupportedParameters []string `yaml:"supported_parameters"`
	// EmbeddingTokenIDs says whether the provider's embeddings API takes
	// input as token ids. Unset, its adapter's manifest says (capability
	// embedding_token_ids: the openai adapter declares it, as OpenAI's API,
	// vLLM and llama.cpp servers take ids); providers that do not take
	// them get the ids decoded to text.
	EmbeddingTokenIDs *bool `yaml:"embedding_token_ids"`
	// RequiresModeration runs the moderation plugin on every chat request
	// that may be routed to this provider.
	RequiresModeration bool `yaml:"requires_moderation"`
	// MaxMessages is the provider's limit on the messages of one chat
	// request (0: none known), for the context-compression plugin.
	MaxMessages int `yaml:"max_messages"`
}

// Model is a model and the endpoints serving it.
type Model struct {
	ID              string     `yaml:"id"`
	Name            string     `yaml:"name"`
	Kind            string     `yaml:"kind"`
	ContextLength   int        `yaml:"context_length"`
	Distillable     bool       `yaml:"distillable"`
	InputModalities []string   `yaml:"input_modalities"`
	Endpoints       []Endpoint `yaml:"endpoints"`
	// Aliases are other names requests may use for this model.
	Aliases []string `yaml:"aliases"`
	// Scores are quality figures by family (catalog.ScoreFamilies), each
	// with its source and date, for the router plugins.
	Scores map[string]catalog.Score `yaml:"scores"`
	// Created is when the model was added (GET /models' created): a date
	// (2024-07-18), an RFC 3339 time or Unix seconds. Without it the
	// gateway uses the time it first listed the model, kept in its store.
	Created string `yaml:"created"`
}

// Endpoint is one provider's offer of a model.
type Endpoint struct {
	Provider            string        `yaml:"provider"`
	UpstreamModel       string        `yaml:"upstream_model"`
	Price               catalog.Price `yaml:"price"`
	ContextLength       int           `yaml:"context_length"`
	MaxOutput           int           `yaml:"max_output"`
	Quantization        string        `yaml:"quantization"`
	SupportedParameters []string      `yaml:"supported_parameters"`
}

// DefaultSupported are the optional chat parameters an OpenAI-compatible
// endpoint understands when its configuration does not say otherwise.
var DefaultSupported = chatparams.Names(chatparams.Default)

// Settle modes (Config.Settle).
const (
	SettleJournal      = "journal"
	SettleJournalFsync = "journal-fsync"
	SettleCommit       = "commit"
	SettleMemory       = "memory"
)

// SettleMode is the settle setting in effect: durable_settle: true is
// commit, unset is journal.
func (c *Config) SettleMode() string {
	switch {
	case c.DurableSettle:
		return SettleCommit
	case c.Settle == "":
		return SettleJournal
	}
	return c.Settle
}

// DefaultSettleJournalSync is settle_journal_sync unset.
const DefaultSettleJournalSync = 5 * time.Millisecond

// JournalSync is the journal's sync period with settle: journal.
func (c *Config) JournalSync() time.Duration {
	if d := time.Duration(c.SettleJournalSync); d > 0 {
		return d
	}
	return DefaultSettleJournalSync
}

// Parse decodes YAML, rejecting unknown fields so typos surface.
func Parse(data []byte) (*Config, error) {
	c := &Config{}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c.fillDefaults()
	if err := c.checkModules(); err != nil {
		return nil, err
	}
	if _, err := c.ModuleSettingsJSON(); err != nil {
		return nil, err
	}
	if err := c.checkObservability(); err != nil {
		return nil, err
	}
	if err := CheckRetention(time.Duration(c.Retention.Generations)); err != nil {
		return nil, fmt.Errorf("config: retention.generations: %w", err)
	}
	if d := c.Retention.ResponsesKeep(); d < 0 || (d > 0 && d < MinRetention) {
		return nil, fmt.Errorf("config: retention.responses: %s: keep stored responses at least %s (e.g. 30d, the default), or 0 to keep them forever", FormatDuration(d), FormatDuration(MinRetention))
	}
	if d := c.Retention.ContentKeep(); d < 0 || (d > 0 && d < MinRetention) {
		return nil, fmt.Errorf("config: retention.content: %s: keep stored content at least %s (e.g. 30d, the default), or 0 to keep it forever", FormatDuration(d), FormatDuration(MinRetention))
	}
	if err := c.Content.check(); err != nil {
		return nil, err
	}
	// At most a second: what is queued is held in memory (about 1.5 KB a
	// request) and a crash loses all of it.
	if w := time.Duration(c.SettleCommitWindow); w < 0 || w > time.Second {
		return nil, fmt.Errorf("config: settle_commit_window: want a duration of at most 1s (unset or 0: 100ms, or 5ms with store postgres), not %s", w)
	}
	switch c.Settle {
	case "", SettleJournal, SettleJournalFsync, SettleCommit, SettleMemory:
	default:
		return nil, fmt.Errorf("config: settle: want journal (the default: no acknowledged charge lost to a crash of the process), journal-fsync (nor to a power loss), commit or memory, not %q", c.Settle)
	}
	if c.DurableSettle && c.Settle != "" && c.Settle != SettleCommit {
		return nil, fmt.Errorf("config: durable_settle: true means settle: commit, which contradicts settle: %s; keep one of them", c.Settle)
	}
	if d := time.Duration(c.SettleJournalSync); d != 0 {
		if d < time.Millisecond || d > time.Second {
			return nil, fmt.Errorf("config: settle_journal_sync: want a duration from 1ms to 1s (unset: %s), not %s", DefaultSettleJournalSync, d)
		}
		if m := c.SettleMode(); m != SettleJournal {
			return nil, fmt.Errorf("config: settle_journal_sync applies to settle: journal, not settle: %s (journal-fsync syncs every charge before its answer)", m)
		}
	}
	if f := c.Limits.MaxSubRequestCost; f < 0 || f > 1e6 || f != f {
		return nil, fmt.Errorf("config: limits.max_sub_request_cost: want a dollar amount from 0 (unset: $%g) to 1000000, not %g", DefaultMaxSubRequestCost, f)
	}
	if f := c.Limits.MaxToolFeePerCall; f < 0 || f > 1e6 || f != f {
		return nil, fmt.Errorf("config: limits.max_tool_fee_per_call: want a dollar amount from 0 (unset: $%g) to 1000000, not %g", DefaultMaxToolFeePerCall, f)
	}
	if c.Limits.MaxToolCallsPerTurn < 0 {
		return nil, fmt.Errorf("config: limits.max_tool_calls_per_turn: want a number of calls (0 or unset: %d), not %d", DefaultMaxToolCallsPerTurn, c.Limits.MaxToolCallsPerTurn)
	}
	if c.GCPercent < -1 {
		return nil, fmt.Errorf("config: gc_percent: want a percentage, 0 for the tuned default or -1 for off, not %d", c.GCPercent)
	}
	for name, l := range map[string]ratelimit.Limits{"rate_limits": c.RateLimits, "key_rate_limits": c.KeyRateLimits} {
		if l.RequestsPerMinute < ratelimit.Unlimited || l.TokensPerMinute < ratelimit.Unlimited || l.Concurrent < ratelimit.Unlimited {
			return nil, fmt.Errorf("config: %s: requests_per_minute, tokens_per_minute and concurrent must be a limit, 0 (the built-in default) or -1 (unlimited)", name)
		}
	}
	if u := c.Redis.URL; u != "" && !strings.HasPrefix(u, "${") && !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") && !strings.HasPrefix(u, "unix://") {
		return nil, fmt.Errorf("config: redis.url: want redis://host:port/db, rediss://… or unix://…, or ${VAR} to read it from the environment")
	}
	if c.Redis.Timeout < 0 {
		return nil, fmt.Errorf("config: redis.timeout: want a duration such as 250ms (0 = the defaults), not a negative one")
	}
	switch c.Store.Driver {
	case "", "bbolt":
	case "postgres":
		if c.Store.DSN == "" {
			return nil, fmt.Errorf("config: store: driver postgres needs dsn (postgres://user@host:port/db; ${VAR} reads the environment)")
		}
	default:
		return nil, fmt.Errorf("config: store: driver %q: want bbolt (one machine) or postgres (a cluster)", c.Store.Driver)
	}
	return c, nil
}

// Load reads path, or the embedded default when path is empty, then applies
// environment overrides (SWITCHYARD_LISTEN, SWITCHYARD_DATA_DIR,
// SWITCHYARD_BOOTSTRAP_KEY, SWITCHYARD_DEMO, SWITCHYARD_MODULES_DIR).
func Load(path string) (*Config, error) {
	data := defaultYAML
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		data = b
	}
	c, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if v := os.Getenv("SWITCHYARD_LISTEN"); v != "" {
		c.Listen = v
	}
	if v := os.Getenv("SWITCHYARD_DATA_DIR"); v != "" {
		c.DataDir = v
	}
	if v := os.Getenv("SWITCHYARD_BOOTSTRAP_KEY"); v != "" {
		c.BootstrapKey = v
	}
	if v := os.Getenv("SWITCHYARD_MODULES_DIR"); v != "" {
		c.ModulesDir = v
	}
	// Cluster mode from the environment (docs/deploy.md): the DSN names
	// the shared PostgreSQL and usually carries a password, which belongs
	// in the environment rather than in the file.
	if v := os.Getenv("SWITCHYARD_STORE_DSN"); v != "" {
		c.Store.Driver, c.Store.DSN = "postgres", v
	}
	if err := c.observabilityEnv(os.Getenv); err != nil {
		return nil, err
	}
	switch os.Getenv("SWITCHYARD_DEMO") {
	case "0", "false":
		c.Demo = false
	case "1", "true":
		c.Demo = true
	}
	return c, nil
}

func (c *Config) fillDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8080"
	}
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	if c.ModulesDir == "" {
		c.ModulesDir = "./build/wasm"
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 10 << 20
	}
	if c.Timeouts.Attempt == 0 {
		c.Timeouts.Attempt = Duration(60 * time.Second)
	}
	if c.Timeouts.Request == 0 {
		c.Timeouts.Request = Duration(10 * time.Minute)
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = Duration(15 * time.Second)
	}
	c.Limits.fillDefaults()
}

// Catalog builds the catalog. demoURL is the base URL of the running demo
// upstream ("" when it is off, which drops provider demo). getenv reads
// provider keys; providers whose key variable is unset are left out, and so
// are models left with no endpoint.
func (c *Config) Catalog(demoURL string, getenv func(string) string) (*catalog.Catalog, error) {
	cat := &catalog.Catalog{Models: map[string]*catalog.Model{}, Providers: map[string]*catalog.Provider{}}
	supported := map[string][]string{}
	for _, p := range c.Providers {
		prov, err := p.catalogProvider(cat, demoURL, getenv)
		if err != nil {
			return nil, err
		}
		if prov == nil {
			continue // switched off
		}
		cat.Providers[p.Slug] = prov
		supported[p.Slug] = p.SupportedParameters
	}
	for _, m := range c.Models {
		mod, err := m.catalogModel(cat, supported)
		if err != nil {
			return nil, err
		}
		if len(mod.Endpoints) > 0 {
			cat.Models[m.ID] = mod
		}
	}
	if err := c.aliases(cat); err != nil {
		return nil, err
	}
	return cat, nil
}

// catalogProvider checks provider p against the providers of cat so far
// and returns it as the catalog's; nil when it is switched off (demo
// without demoURL, or its key variable unset).
func (p *Provider) catalogProvider(cat *catalog.Catalog, demoURL string, getenv func(string) string) (*catalog.Provider, error) {
	if p.Slug == "" || p.Adapter == "" {
		return nil, fmt.Errorf("config: provider %q needs slug and adapter", p.Slug)
	}
	if p.MaxMessages < 0 {
		return nil, fmt.Errorf("config: provider %q: max_messages must not be negative (0 = no limit)", p.Slug)
	}
	if _, dup := cat.Providers[p.Slug]; dup {
		return nil, fmt.Errorf("config: provider %q defined twice", p.Slug)
	}
	prov := &catalog.Provider{
		Slug: p.Slug, Name: p.Name, BaseURL: strings.TrimRight(p.BaseURL, "/"), Adapter: p.Adapter,
		DataCollection: p.DataCollection, ZDR: p.ZDR, Region: p.Region,
		EmbeddingTokenIDs: p.EmbeddingTokenIDs, RequiresModeration: p.RequiresModeration, MaxMessages: p.MaxMessages,
	}
	if prov.DataCollection == "" {
		prov.DataCollection = "allow"
	}
	if p.Slug == "demo" {
		if demoURL == "" {
			return nil, nil
		}
		prov.BaseURL, prov.Demo = demoURL, true
	}
	if p.Auth != nil && !credentials.UsesAPIKey(p.Auth.Scheme) && p.APIKeyEnv != "" {
		return nil, fmt.Errorf("config: provider %q: api_key_env is not used by auth scheme %q (its credentials are in the auth block)", p.Slug, p.Auth.Scheme)
	}
	// Which forms an adapter speaks is its manifest's "apis", checked
	// when the catalog meets the loaded modules (gateway checkAdapters);
	// here only the word's shape.
	if p.API != "" && !apiRe.MatchString(p.API) {
		return nil, fmt.Errorf("config: provider %q: api %q is not a form name (a lowercase word such as vertex or deepseek)", p.Slug, p.API)
	}
	prov.API = p.API
	if p.Auth != nil && p.Auth.Scheme == credentials.AzureAPIKey && p.APIKeyEnv == "" {
		return nil, fmt.Errorf("config: provider %q: auth scheme azure-api-key sends the key of api_key_env, which is not set", p.Slug)
	}
	if p.APIKeyEnv != "" {
		prov.APIKey = getenv(p.APIKeyEnv)
		if prov.APIKey == "" {
			return nil, nil
		}
	}
	if p.Auth != nil {
		auth, err := credentials.New(p.Slug, *p.Auth, prov.APIKey, getenv)
		if err != nil {
			return nil, err
		}
		if auth == nil {
			return nil, nil // its credentials are not set: switched off, like an unset api_key_env
		}
		prov.Auth = auth
	}
	if prov.BaseURL == "" {
		return nil, fmt.Errorf("config: provider %q needs base_url", p.Slug)
	}
	// A query in the base URL (Azure OpenAI's ?api-version=) goes after
	// the adapter's path, not before it.
	if base, query, ok := strings.Cut(prov.BaseURL, "?"); ok {
		prov.BaseURL, prov.BaseQuery = strings.TrimRight(base, "/"), query
	}
	return prov, nil
}

// catalogModel checks model m against the models of cat so far and
// returns it as the catalog's, with its endpoints on the providers of cat
// (supported: each provider's supported_parameters). It has no endpoint
// when every provider of it is unknown or switched off.
func (m *Model) catalogModel(cat *catalog.Catalog, supported map[string][]string) (*catalog.Model, error) {
	// The same rule requests are validated with: a model that could
	// not be asked for is a configuration error.
	if vendor, name, ok := strings.Cut(m.ID, "/"); !ok || vendor == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("config: model id %q must be <vendor>/<model_name> with one slash", m.ID)
	}
	if _, dup := cat.Models[m.ID]; dup {
		return nil, fmt.Errorf("config: model %q defined twice", m.ID)
	}
	kind := catalog.Kind(m.Kind)
	if kind == "" {
		kind = catalog.KindChat
	}
	if kind != catalog.KindChat && kind != catalog.KindEmbedding {
		return nil, fmt.Errorf("config: model %q: kind %q must be chat or embedding", m.ID, m.Kind)
	}
	if err := checkScores(m.ID, m.Scores); err != nil {
		return nil, err
	}
	created, err := parseCreated(m.Created)
	if err != nil {
		return nil, fmt.Errorf("config: model %q: created: %w", m.ID, err)
	}
	mod := &catalog.Model{
		ID: m.ID, Name: m.Name, Kind: kind, ContextLength: m.ContextLength,
		Distillable: m.Distillable, InputModalities: m.InputModalities, Scores: m.Scores,
		Created: created,
	}
	if len(mod.InputModalities) == 0 {
		mod.InputModalities = []string{"text"}
	}
	for _, e := range m.Endpoints {
		prov, ok := cat.Providers[e.Provider]
		if !ok {
			continue // provider unknown or switched off
		}
		mod.Endpoints = append(mod.Endpoints, m.catalogEndpoint(mod, prov, &e, supported[e.Provider]))
	}
	return mod, nil
}

// catalogEndpoint is endpoint e of model m on prov, as the catalog's
// endpoint of mod; provSupported is the provider's supported_parameters,
// the default when e names none.
func (m *Model) catalogEndpoint(mod *catalog.Model, prov *catalog.Provider, e *Endpoint, provSupported []string) *catalog.Endpoint {
	params := e.SupportedParameters
	if params == nil {
		params = provSupported
	}
	if params == nil {
		params = DefaultSupported
	}
	ep := &catalog.Endpoint{
		Model: mod, Provider: prov, UpstreamModel: e.UpstreamModel, Price: e.Price,
		ContextLength: e.ContextLength, MaxOutput: e.MaxOutput, Quantization: e.Quantization,
		Supported: map[string]bool{},
	}
	if ep.UpstreamModel == "" {
		ep.UpstreamModel = m.ID[strings.IndexByte(m.ID, '/')+1:]
	}
	if ep.ContextLength == 0 {
		ep.ContextLength = m.ContextLength
	}
	for _, p := range params {
		ep.Supported[p] = true
	}
	return ep
}

// aliases fills cat.Aliases from the top-level map and the models' lists.
// An alias must not be a model id or name two models; one whose model is
// switched off (its providers' keys unset) is left out like the model.
func (c *Config) aliases(cat *catalog.Catalog) error {
	cat.Aliases = map[string]string{}
	add := func(alias, to string) error {
		switch {
		case alias == "" || strings.ContainsAny(alias, " \t\n"):
			return fmt.Errorf("config: alias %q for %q must be a non-empty name without spaces", alias, to)
		case c.hasModel(alias):
			return fmt.Errorf("config: alias %q is a model id itself", alias)
		case !c.hasModel(to):
			return fmt.Errorf("config: alias %q names model %q, which is not defined", alias, to)
		}
		if old, dup := cat.Aliases[alias]; dup && old != to {
			return fmt.Errorf("config: alias %q names both %q and %q", alias, old, to)
		}
		if _, on := cat.Models[to]; on {
			cat.Aliases[alias] = to
		}
		return nil
	}
	for _, m := range c.Models {
		for _, a := range m.Aliases {
			if err := add(a, m.ID); err != nil {
				return err
			}
		}
	}
	for a, to := range c.Aliases {
		if err := add(a, to); err != nil {
			return err
		}
	}
	return nil
}

// checkScores refuses a score the routers could not use or that cites
// nothing: a family they do not know (a typo), a value off the 0–1 scale,
// or a missing source or date.
func checkScores(id string, scores map[string]catalog.Score) error {
	for fam, sc := range scores {
		switch {
		case !slices.Contains(catalog.ScoreFamilies, fam):
			return fmt.Errorf("config: model %q: scores.%s: unknown family; one of %s", id, fam, strings.Join(catalog.ScoreFamilies, ", "))
		case sc.Value < 0 || sc.Value > 1:
			return fmt.Errorf("config: model %q: scores.%s.value %g must be between 0 and 1 (a benchmark's percentage / 100)", id, fam, sc.Value)
		case strings.TrimSpace(sc.Source) == "":
			return fmt.Errorf("config: model %q: scores.%s needs a source (the leaderboard or benchmark and who reported it)", id, fam)
		case !scoreDate.MatchString(sc.Date):
			return fmt.Errorf("config: model %q: scores.%s.date %q must be YYYY-MM or YYYY-MM-DD", id, fam, sc.Date)
		}
	}
	return nil
}

var scoreDate = regexp.MustCompile(`^\d{4}-\d{2}(-\d{2})?$`)

func (c *Config) hasModel(id string) bool {
	for _, m := range c.Models {
		if m.ID == id {
			return true
		}
	}
	return false
}

// parseCreated reads a model's created: a date, an RFC 3339 time or Unix
// seconds; 0 when empty.
func parseCreated(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		return n, nil
	}
	for _, layout := range []string{time.DateOnly, time.RFC3339} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.Unix(), nil
		}
	}
	return 0, fmt.Errorf("%q is not a date (2024-07-18), an RFC 3339 time or Unix seconds", v)
}
