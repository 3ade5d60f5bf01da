// Package gatewaytest starts a complete gateway on loopback for tests and
// benchmarks, the way net/http/httptest starts a server: real fiber server,
// real bbolt store, real Wasm adapters built by `make build`, and fake
// upstreams that speak the providers' wire formats (host/demo) on their own
// loopback ports. Nothing of the gateway is mocked.
package gatewaytest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gateway"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/server"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/telemetry"
)

// Key is the management key every test gateway accepts.
const Key = "sk-sy-v1-test0000000000000000000000000000000000000000000000000000"

// Options shape a test gateway.
type Options struct {
	// Providers are fake upstream slugs to start (default: "alpha"). Each
	// serves every model in the default test catalog.
	Providers []string
	// ConfigYAML replaces the generated configuration; "{{url:slug}}" is
	// replaced with the base URL of fake upstream slug.
	ConfigYAML string
	// Mutate edits the parsed configuration before the catalog is built.
	Mutate func(*config.Config)
	// Quiet discards the gateway's log.
	Quiet bool
	// LogTo, when set, receives the gateway's whole log (debug level, JSON
	// lines), whatever Quiet says: tests read what a module logged.
	LogTo io.Writer
	// Anthropic are fake Anthropic Messages upstreams to start; their
	// "{{url:slug}}" is replaced too (model test/claude uses the first).
	Anthropic []string
	// Gemini are fake Gemini API upstreams to start, likewise.
	Gemini []string
	// Env is what the gateway reads for provider API key variables.
	Env map[string]string
	// StoreDSN puts the gateway on this PostgreSQL database instead of a
	// bbolt file (cluster mode).
	StoreDSN string
	// Credits funds the test account, in USD (default 1000; negative: none).
	Credits float64
	// AllowPrivateNetworks lets plugins granted http reach loopback (the
	// fake servers); off, the SSRF guard is what tests see.
	AllowPrivateNetworks bool
	// Secrets are the operator's values of ${secret:NAME} placeholders in
	// modules' outbound calls (a search engine's key for a fake engine).
	Secrets map[string]string
	// ConfigFile makes the gateway read its configuration from a file (in
	// the gateway's data directory), so tests can change it and reload
	// (Gateway.WriteConfig, Gateway.GW.Reload).
	ConfigFile bool
	// Now is the gateway's ledger clock (nil: time.Now), to age records.
	Now func() time.Time
}

// Gateway is a running test gateway.
type Gateway struct {
	URL         string // base URL including /api/v1
	Key         string
	Upstreams   map[string]*demo.Server
	Anthropics  map[string]*demo.Anthropic
	Geminis     map[string]*demo.Gemini
	UpstreamURL map[string]string
	Modules     *modules.Registry
	Keys        *keys.Store
	Ledger      *billing.Ledger
	AccountID   string
	DB          store.DB
	Server      *server.Server
	Config      *config.Config
	// GW is the assembled gateway (reload, catalog).
	GW *gateway.Gateway
	// ConfigPath is the configuration file with Options.ConfigFile.
	ConfigPath string
	// MetricsURL is the /metrics address when the test turned metrics on.
	MetricsURL string

	closers []func()
}

// Root is the repository root, found from this source file.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// AnthropicGeminiYAML is a test catalog of two models on the other wire
// formats: test/claude on a fake Anthropic upstream "anth" (key from
// ANTH_KEY) and test/gemini on a fake Gemini upstream "gem" (GEM_KEY).
const AnthropicGeminiYAML = `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: anth, name: Anthropic, adapter: anthropic, base_url: "{{url:anth}}", api_key_env: ANTH_KEY, data_collection: deny, region: us}
  - {slug: gem, name: Google, adapter: gemini, base_url: "{{url:gem}}", api_key_env: GEM_KEY, data_collection: deny, region: us}
models:
  - id: test/claude
    kind: chat
    context_length: 200000
    endpoints:
      - {provider: anth, upstream_model: claude-test-1, max_output: 8192, price: {prompt: 3, completion: 15}}
  - id: test/gemini
    kind: chat
    context_length: 1000000
    endpoints:
      - {provider: gem, upstream_model: gemini-test, max_output: 8192, price: {prompt: 0.3, completion: 2.5}}
`

// DefaultYAML is the test catalog: a chat model and an embedding model
// served by every fake provider.
func DefaultYAML(providers []string) string {
	var b strings.Builder
	b.WriteString("demo: false\ntimeouts: {attempt: 5s, request: 30s}\nproviders:\n")
	for _, p := range providers {
		fmt.Fprintf(&b, "  - {slug: %s, name: %s, adapter: openai, base_url: \"{{url:%s}}\", data_collection: deny, region: us}\n", p, p, p)
	}
	b.WriteString("models:\n  - id: test/chat\n    kind: chat\n    context_length: 8192\n    endpoints:\n")
	for i, p := range providers {
		fmt.Fprintf(&b, "      - {provider: %s, upstream_model: echo, max_output: 1024, price: {prompt: %d, completion: %d}}\n", p, i+1, 2*(i+1))
	}
	b.WriteString("  - id: test/embed\n    kind: embedding\n    context_length: 8192\n    input_modalities: [text, image]\n    endpoints:\n")
	for _, p := range providers {
		fmt.Fprintf(&b, "      - {provider: %s, upstream_model: embed, price: {prompt: 0.1}}\n", p)
	}
	b.WriteString("  - id: test/text-embed\n    kind: embedding\n    endpoints:\n")
	for _, p := range providers {
		fmt.Fprintf(&b, "      - {provider: %s, upstream_model: embed, price: {prompt: 0.1}}\n", p)
	}
	return b.String()
}

// Start runs a gateway. Call Close when done.
func Start(opts Options) (*Gateway, error) {
	g := &Gateway{Key: Key, Upstreams: map[string]*demo.Server{}, Anthropics: map[string]*demo.Anthropic{}, Geminis: map[string]*demo.Gemini{}, UpstreamURL: map[string]string{}}
	ok := false
	defer func() {
		if !ok {
			g.Close()
		}
	}()
	yml := g.startUpstreams(&opts)
	cfg, err := config.Parse([]byte(yml))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "switchyard-gw-")
	if err != nil {
		return nil, err
	}
	g.closers = append(g.closers, func() { os.RemoveAll(dir) })
	cfg.DataDir = dir
	cfg.ModulesDir = filepath.Join(Root(), "build", "wasm")
	if opts.StoreDSN != "" {
		cfg.Store = config.Store{Driver: "postgres", DSN: opts.StoreDSN}
	} else if newStoreDSN != nil {
		dsn, err := newStoreDSN()
		if err != nil {
			return nil, err
		}
		// After the gateway closes (closers run in reverse).
		g.closers = append(g.closers, func() { _ = dropStoreDSN(dsn) })
		cfg.Store = config.Store{Driver: "postgres", DSN: dsn}
	}
	if opts.ConfigFile {
		g.ConfigPath = filepath.Join(dir, "switchyard.yaml")
		if err := g.WriteConfig(yml); err != nil {
			return nil, err
		}
	}
	// Test gateways run side by side: no metrics listener unless a test
	// sets metrics.listen (127.0.0.1:0) in Mutate; MetricsURL is then set.
	cfg.Metrics.Listen = "off"
	if opts.Mutate != nil {
		opts.Mutate(cfg)
	}
	if opts.Credits == 0 {
		opts.Credits = 1000
	}
	cfg.BootstrapKey, cfg.BootstrapCredits = Key, max(opts.Credits, 0)
	if err := copyBoltTemplate(cfg); err != nil {
		return nil, err
	}
	g.Config = cfg
	// The gateway's own handler (cmd/switchyard), so the tests read the
	// request lines it writes by hand.
	log := slog.New(telemetry.NewLogHandler(os.Stderr, "text", slog.LevelWarn))
	if opts.Quiet {
		log = slog.New(telemetry.NewLogHandler(io.Discard, "text", slog.LevelInfo))
	}
	if opts.LogTo != nil {
		log = slog.New(telemetry.NewLogHandler(opts.LogTo, "json", slog.LevelDebug))
	}
	gw, err := gateway.New(cfg, gateway.Options{
		Log: log, Getenv: func(k string) string { return opts.Env[k] }, AllowPrivateNetworks: opts.AllowPrivateNetworks,
		CacheDir:   cacheDir(),
		ConfigPath: g.ConfigPath,
		Now:        opts.Now,
		Secrets:    opts.Secrets,
	})
	if err != nil {
		return nil, err
	}
	g.closers = append(g.closers, gw.Close)
	g.DB, g.Keys, g.Ledger, g.Modules, g.Server, g.AccountID = gw.DB, gw.Keys, gw.Ledger, gw.Modules, gw.Server, gw.Operator
	g.GW = gw
	if gw.MetricsAddr != "" {
		g.MetricsURL = "http://" + gw.MetricsAddr + "/metrics"
	}
	srv := gw.Server
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = gw.Serve(ln) }()
	g.closers = append(g.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	g.URL = "http://" + ln.Addr().String() + "/api/v1"
	ok = true
	return g, nil
}

// startUpstreams starts the fake upstreams opts asks for and returns the
// configuration with their URLs in place of its "{{url:slug}}".
func (g *Gateway) startUpstreams(opts *Options) string {
	if len(opts.Providers) == 0 {
		opts.Providers = []string{"alpha"}
	}
	yml := opts.ConfigYAML
	if yml == "" {
		yml = DefaultYAML(opts.Providers)
	}
	serve := func(slug string, h http.Handler) {
		hs := httptest.NewServer(h)
		g.closers = append(g.closers, hs.Close)
		g.UpstreamURL[slug] = hs.URL + "/v1"
		yml = strings.ReplaceAll(yml, "{{url:"+slug+"}}", hs.URL+"/v1")
	}
	for _, p := range opts.Providers {
		g.Upstreams[p] = demo.New()
		serve(p, g.Upstreams[p])
	}
	for _, p := range opts.Anthropic {
		g.Anthropics[p] = demo.NewAnthropic()
		serve(p, g.Anthropics[p])
	}
	for _, p := range opts.Gemini {
		g.Geminis[p] = demo.NewGemini()
		serve(p, g.Geminis[p])
	}
	return yml
}

// WriteConfig replaces the configuration file (Options.ConfigFile) with
// yml, its "{{url:slug}}" replaced by the fake upstreams' URLs and the test
// gateway's data and modules directories set, the way an operator's editor
// saves: a new file renamed over the old one.
func (g *Gateway) WriteConfig(yml string) error {
	if g.ConfigPath == "" {
		return fmt.Errorf("gatewaytest: WriteConfig needs Options.ConfigFile")
	}
	for slug, u := range g.UpstreamURL {
		yml = strings.ReplaceAll(yml, "{{url:"+slug+"}}", u)
	}
	dir := filepath.Dir(g.ConfigPath)
	yml += fmt.Sprintf("\ndata_dir: %q\nmodules_dir: %q\nbootstrap_key: %q\n", dir, filepath.Join(Root(), "build", "wasm"), Key)
	tmp := g.ConfigPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(yml), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, g.ConfigPath)
}

// Close stops everything, in reverse order of start.
func (g *Gateway) Close() {
	for i := len(g.closers) - 1; i >= 0; i-- {
		g.closers[i]()
	}
	g.closers = nil
}

// Request sends an authenticated JSON request and returns status and body.
func (g *Gateway) Request(method, path, body string, headers ...string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, g.URL+path, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+g.Key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}
