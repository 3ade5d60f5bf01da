// Package wasm runs Switchyard modules (ABI v1, docs/abi.md) on wazero.
//
// An Engine owns the wazero runtimes and the on-disk compilation cache. Load
// compiles a module once, checks its exports and imports against its
// manifest, and creates its first instance up front so a bad module fails at
// load, not on the first request. A Module keeps a pool of instances: calls
// never instantiate on the hot path, and an instance that trapped or timed
// out is discarded instead of returned.
//
// The parts: engine.go, the engine made from its Config (NewEngine) and
// its runtimes; load.go, loading and checking a module; module.go, the
// pool and a call; hostfn.go, http.go and secrets.go, the host functions
// (a table of handlers); snapshot.go, putting a tenant's instance back
// after a call, on package memsnap's memory images; tenant.go, tenants'
// limits; extism.go, the Extism runtime. What is done to a module's bytes
// before compiling them is package rewrite's, a pure function.
package wasm

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/kv"
	"github.com/switchyard/switchyard/host/modmetrics"
	"github.com/switchyard/switchyard/host/vecindex"
	"github.com/switchyard/switchyard/host/wasm/memsnap"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Config is what an engine is made with (NewEngine). The engine keeps a
// copy and never changes it: what a module may do is fixed for the
// engine's life, so no setting can change under a call in flight.
type Config struct {
	// CacheDir holds compiled code so a restart does not recompile
	// (empty: compile in memory only).
	CacheDir string
	// Log receives the engine's and the modules' log lines (nil:
	// slog.Default()).
	Log *slog.Logger

	// AllowPrivateNetworks lets modules granted http reach loopback and
	// private addresses. Off in production (SSRF); tests and local
	// development turn it on.
	AllowPrivateNetworks bool
	// NoInstrument turns off the cheap preemption rewrite (rewrite.Preempt):
	// modules with a time limit then run with wazero's per-loop check.
	// For benchmarks and as an escape hatch.
	NoInstrument bool
	// Tenants are the ceilings of modules loaded with LoadTenant, and Logs
	// the log budgets of every module (zero fields: defaults).
	Tenants TenantLimits
	Logs    LogLimits
	// PoolTrimEvery is how often a module's pool gives back the instances
	// a burst left idle (default 30 s).
	PoolTrimEvery time.Duration

	// KV backs the kv_get and kv_put host functions (nil: they answer
	// HostFailed, "no store").
	KV *kv.Store
	// Vectors backs vector_put and vector_search (nil: they answer
	// HostFailed, "no index"); its partitions are scoped like KV's.
	Vectors *vecindex.Index
	// Metrics backs the metric host function: the counters and histograms
	// modules declare in their manifests, exported on /metrics (nil: the
	// additions are accepted and recorded nowhere).
	Metrics *modmetrics.Set
	// HTTP bounds the http_request host function and names the private
	// hosts it may reach (zero fields: DefaultHTTPLimits).
	HTTP HTTPLimits
	// ChatCallsPerRequest is the default budget of chat calls of one
	// request (CallEnv.ChatCalls overrides it; 0: DefaultChatCalls).
	ChatCallsPerRequest int
	// Natives are the host implementations of hooks that modules may
	// declare native (native.go), by the name a manifest gives them.
	Natives map[string]NativeHook
	// Secrets are the operator's values substituted for ${secret:NAME} in
	// the outbound calls of modules whose manifest grants NAME.
	// TenantSecrets names those that modules published by accounts may
	// use too (none by default: a tenant's module could send the
	// operator's key to a server of the tenant's choosing).
	Secrets       map[string]string
	TenantSecrets []string
	// Unmetered reports the accounts whose requests' calls of the
	// gateway's own modules are not metered against a module-time budget
	// (the operator's); nil meters every account.
	Unmetered func(account string) bool
}

// clone is c with its own copies of the maps and slices the caller could
// change after NewEngine.
func (c Config) clone() Config {
	c.Natives = maps.Clone(c.Natives)
	c.Secrets = maps.Clone(c.Secrets)
	c.TenantSecrets = slices.Clone(c.TenantSecrets)
	c.HTTP.PrivateHostAccounts = slices.Clone(c.HTTP.PrivateHostAccounts)
	c.HTTP.PrivateHosts = slices.Clone(c.HTTP.PrivateHosts)
	return c
}

// Engine compiles and instantiates modules. It is safe for concurrent use.
type Engine struct {
	cfg      Config // never changed after NewEngine
	cacheDir string
	log      *slog.Logger
	modLogs  ModuleLogs // the last lines each module logged (logring.go)

	accounts sync.Map // account id → *account

	seq       atomic.Uint64               // instance names are unique per engine
	resets    [memsnap.Ways]atomic.Uint64 // tenants' instance resets: Resets
	instances sync.Map                    // instance name → *instance, for host functions
	httpOnce  sync.Once
	client    *http.Client // every address guarded
	// privateClient also reaches the operator's private hosts, for the
	// modules HTTPLimits.mayReachPrivate lets.
	privateClient *http.Client

	mu       sync.Mutex // guards runtimes
	runtimes map[runtimeKey]*runtime
	closed   bool

	// Extism modules (runtime "extism", extism.go): each has a wazero
	// runtime of its own, created by the Extism SDK, and its own
	// compilation cache (nil without a cache directory).
	extism     map[runtimeKey]*extismRuntime
	extismMods map[*Module]wazero.CompilationCache

	// Tenants' modules that give their compiled code back when idle
	// (park.go), and the parker's stop.
	parkMu    sync.Mutex
	parkable  map[*Module]struct{}
	parkStop  chan struct{}
	compiledN atomic.Int64  // native modules holding compiled code: Compiled
	parks     atomic.Uint64 // idle modules parked: Parks
}

// Runtimes differ in what is a runtime-wide setting in wazero: the memory
// cap and whether calls can be interrupted. Preemption makes tight guest
// loops 20-40× slower (wazero#2466), so modules that declare no time limit
// run on a runtime without it.
type runtimeKey struct {
	pages   uint32
	guarded bool
}

type runtime struct {
	rt    wazero.Runtime
	cache wazero.CompilationCache
}

// NewEngine creates an engine with cfg, which it copies.
func NewEngine(cfg Config) *Engine {
	cfg = cfg.clone()
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Engine{
		cfg: cfg, cacheDir: cfg.CacheDir, log: cfg.Log, runtimes: map[runtimeKey]*runtime{},
		extism: map[runtimeKey]*extismRuntime{}, extismMods: map[*Module]wazero.CompilationCache{},
	}
}

func (e *Engine) runtimeFor(ctx context.Context, k runtimeKey) (*runtime, error) {
	if r, ok := e.runtimes[k]; ok {
		return r, nil
	}
	cfg := wazero.NewRuntimeConfigCompiler().
		WithMemoryLimitPages(k.pages).
		WithCloseOnContextDone(k.guarded)
	r := &runtime{}
	if e.cacheDir != "" {
		dir := filepath.Join(e.cacheDir, fmt.Sprintf("p%d-g%t", k.pages, k.guarded))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
		r.cache = c
		cfg = cfg.WithCompilationCache(c)
	}
	r.rt = wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r.rt); err != nil {
		return nil, fmt.Errorf("wasm: wasi: %w", err)
	}
	if err := e.instantiateHost(ctx, r.rt); err != nil {
		return nil, err
	}
	e.runtimes[k] = r
	return r, nil
}

// maxLogLine bounds one log line of a module: a module cannot flood the log.
const maxLogLine = 4096

// moduleLog writes a module's log line at the ABI's level (0 debug, 1 info,
// 2 warn, 3 error), tagged with the module and its account, within the
// call's log budget (a line over it is dropped and counted).
func (e *Engine) moduleLog(ctx context.Context, level int32, msg []byte, module string) {
	acct := ""
	if c := logOf(ctx); c != nil {
		if !c.allow(len(msg)) {
			return
		}
		acct = c.acct.id
	}
	lv := slog.LevelInfo
	switch level {
	case 0:
		lv = slog.LevelDebug
	case 2:
		lv = slog.LevelWarn
	case 3:
		lv = slog.LevelError
	}
	e.log.Log(ctx, lv, string(msg), "module", module, "account", acct)
	e.modLogs.add(acct, module, lv, string(msg))
}

// moduleTag strips the instance counter from an instance name.
func moduleTag(instance string) string {
	if i := strings.LastIndexByte(instance, '#'); i > 0 {
		return instance[:i]
	}
	return instance
}

// Close releases every runtime. Modules loaded by the engine stop working.
func (e *Engine) Close(ctx context.Context) error {
	e.stopParker()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	e.closeExtism(ctx)
	for k, r := range e.runtimes {
		_ = r.rt.Close(ctx)
		if r.cache != nil {
			_ = r.cache.Close(ctx)
		}
		delete(e.runtimes, k)
	}
	return nil
}

func (e *Engine) poolTrimEvery() time.Duration {
	if e.cfg.PoolTrimEvery > 0 {
		return e.cfg.PoolTrimEvery
	}
	return 30 * time.Second
}

// instanceOf finds the pooled instance a host function was called from.
func (e *Engine) instanceOf(m api.Module) *instance {
	if v, ok := e.instances.Load(m.Name()); ok {
		return v.(*instance)
	}
	return nil
}
