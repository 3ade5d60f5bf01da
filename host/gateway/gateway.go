// Package gateway assembles a gateway from its configuration: store, keys,
// ledger, Wasm engine, module registry, catalog, router and HTTP server.
// The switchyard command and host/gatewaytest both start gateways with it,
// so what runs in tests is what runs in production.
package gateway

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/activity"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/console"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/exepages"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/kv"
	"github.com/switchyard/switchyard/host/modmetrics"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/native"
	"github.com/switchyard/switchyard/host/netguard"
	"github.com/switchyard/switchyard/host/ratelimit"
	"github.com/switchyard/switchyard/host/retention"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/route/shared"
	"github.com/switchyard/switchyard/host/server"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/host/vecindex"
	"github.com/switchyard/switchyard/host/wasm"
)

// Options are what differs between a production start and a test one.
type Options struct {
	Log *slog.Logger // nil: slog.Default()
	// CacheDir is the Wasm compilation cache ("": <data_dir>/wazero-cache).
	CacheDir string
	// AllowPrivateNetworks lets plugins granted http reach private
	// addresses (tests' fake servers); off, the SSRF guard applies.
	AllowPrivateNetworks bool
	// Getenv reads provider API key variables (nil: none are set).
	Getenv func(string) string
	// ConfigPath is the file cfg was loaded from ("": the embedded
	// default); Reload and WatchConfig read it again.
	ConfigPath string
	// Now is the ledger's and the pruner's clock (nil: time.Now): tests
	// age generation records past the retention with it.
	Now func() time.Time
	// Secrets, when not nil, are the module secrets (wasm.Config.Secrets)
	// instead of those the config resolves from the environment: tests
	// give modules a key without touching the process's environment.
	Secrets map[string]string
	// ReleaseStartPages unmaps, once start-up work is over (after the
	// tokenizer warm-up of Serve), the executable's pages only start-up
	// read (host/exepages). A process-wide act: the command sets it, an
	// embedding program or a test leaves it off.
	ReleaseStartPages bool
}

// Gateway is an assembled gateway, not yet serving: call Server.Listen or
// Server.Serve, then Close.
type Gateway struct {
	Config  *config.Config
	DB      store.DB
	Keys    *keys.Store
	Ledger  *billing.Ledger
	Engine  *wasm.Engine
	Modules *modules.Registry
	// Catalog is the catalog built at start; Router.Catalog() is the one
	// in force, which Reload replaces.
	Catalog *catalog.Catalog
	Router  *route.Router
	Server  *server.Server
	// Operator is the bootstrap account, which manages gateway-wide modules.
	Operator string
	// BootstrapSecret is the bootstrap management key when this start
	// created it ("" otherwise): the caller shows it once.
	BootstrapSecret string
	// DemoURL is the base URL of the offline demo upstream (config demo).
	DemoURL string
	// MetricsAddr is the address /metrics is served on ("" when off).
	MetricsAddr string
	// Pruner deletes old generation records (retention.go); nil without
	// retention.generations.
	Pruner *retention.Pruner

	// recordPruners delete stored responses and content past their
	// retention (retention.go), on the clock now.
	recordPruners []recordPruner
	now           func() time.Time

	log *slog.Logger
	// kv is the module key-value store (its evictions are on /metrics).
	kv      *kv.Store
	vectors *vecindex.Index
	// modMetrics are the counters and histograms modules declare (the
	// metric host function), registered on /metrics.
	modMetrics *modmetrics.Set
	closers    []func()

	// redisLimiter and redisSessions share rate limits and sticky
	// sessions through redis.url (redis.go); nil without it.
	redisLimiter  *ratelimit.Redis
	redisSessions *shared.Sessions

	configPath string
	// started is the configuration as the file said at start (before any
	// change the caller made in code), what a reload compares against to
	// name the settings only a restart applies.
	started    *config.Config
	getenv     func(string) string
	reloadMu   sync.Mutex
	lastConfig string // fingerprint of the file last loaded (reload.go)
	// releasePages is Options.ReleaseStartPages.
	releasePages bool
}

// New opens cfg's store and builds everything on it. With cfg.Demo it
// starts the offline demo upstream on loopback. On error, whatever was
// opened is closed.
func New(cfg *config.Config, opts Options) (g *Gateway, err error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.CacheDir == "" {
		opts.CacheDir = filepath.Join(cfg.DataDir, "wazero-cache")
	}
	log := opts.Log
	g = &Gateway{Config: cfg, log: log, configPath: opts.ConfigPath, getenv: opts.Getenv, started: cfg, releasePages: opts.ReleaseStartPages}
	if opts.ConfigPath != "" {
		if fc, err := config.Load(opts.ConfigPath); err == nil {
			g.started = fc
		}
	}
	// A failing return has set the named result to nil by the time the
	// deferred call runs, and the closers read g: put the half-built
	// gateway back to close it.
	built := g
	defer func() {
		if err != nil {
			g = built
			g.Close()
			g = nil
		}
	}()
	if err := g.openLedger(opts); err != nil {
		return nil, err
	}
	if err := g.bootstrap(); err != nil {
		return nil, err
	}
	if cfg.Demo {
		if err := g.startDemo(); err != nil {
			return nil, err
		}
	}
	if g.Catalog, err = cfg.Catalog(g.DemoURL, opts.Getenv); err != nil {
		return nil, err
	}
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	if err := g.stampCreated(g.Catalog, now); err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := g.startModules(ctx, opts); err != nil {
		return nil, err
	}
	if err := g.openRedis(); err != nil {
		return nil, err
	}
	ropts := route.Options{Adapters: g.Modules} // file_input from the adapters' manifests
	if g.redisSessions != nil {                 // a nil *shared.Sessions in the interface would not be nil
		ropts.Shared = g.redisSessions
	}
	g.Router = route.New(g.Catalog, ropts)
	tel, err := g.startTelemetry(ctx) // observability.go
	if err != nil {
		return nil, err
	}
	g.Server = server.New(server.Deps{
		Config: cfg, Catalog: g.Catalog, Keys: g.Keys, Modules: g.Modules, Log: log, Ledger: g.Ledger,
		Router: g.Router, Telemetry: tel, Limiter: g.limiter(),
		Mount: func(root, api fiber.Router) {
			g.mountReload(api)
			g.mountProviders(api)
			console.Mount(root)
		},
	})
	return g, nil
}

// openLedger opens the store and what lives in it: keys, the activity
// indexes and the ledger, with the pruners and the key-limit subscription.
func (g *Gateway) openLedger(opts Options) (err error) {
	cfg, log := g.Config, g.log
	if g.DB, err = store.Open(store.Config(cfg.Store), cfg.DataDir); err != nil {
		return err
	}
	g.closers = append(g.closers, func() { _ = g.DB.Close() })
	if g.Keys, err = keys.Open(g.DB); err != nil {
		return err
	}
	g.closers = append(g.closers, g.Keys.Close)
	// The activity indexes are written with every generation record.
	if err := activity.Open(g.DB); err != nil {
		return err
	}
	journal, journalSync := "", time.Duration(0)
	switch cfg.SettleMode() {
	case config.SettleJournal:
		journal, journalSync = filepath.Join(cfg.DataDir, "journal"), cfg.JournalSync()
	case config.SettleJournalFsync:
		journal = filepath.Join(cfg.DataDir, "journal")
	}
	g.Ledger, err = billing.Open(g.DB, activity.Indexing(billing.Options{
		RequestDeadline: time.Duration(cfg.Timeouts.Request),
		AsyncSettle:     cfg.SettleMode() != config.SettleCommit,
		Journal:         journal,
		JournalSync:     journalSync,
		CommitWindow:    time.Duration(cfg.SettleCommitWindow),
		Now:             opts.Now,
		Logf:            func(f string, a ...any) { log.Error(fmt.Sprintf(f, a...)) },
	}))
	if err != nil {
		return err
	}
	g.closers = append(g.closers, func() { _ = g.Ledger.Close() })
	g.startPruner(opts.Now) // retention.go
	g.startRecordPruners(opts.Now)
	// A key's limit changed (here or on another gateway of the cluster):
	// its leases go back and are taken again against the new limit.
	g.closers = append(g.closers, g.DB.Subscribe(keys.TopicKeys, func(hash string) {
		if hash != store.Resync {
			g.Ledger.KeyChanged(hash)
		}
	}))
	return nil
}

// startModules builds the Wasm engine from the configuration's host
// functions and limits, and brings up the stored and seeded modules.
func (g *Gateway) startModules(ctx context.Context, opts Options) (err error) {
	cfg, log := g.Config, g.log
	ecfg, err := g.hostFunctions(opts)
	if err != nil {
		return err
	}
	ecfg.CacheDir, ecfg.Log, ecfg.AllowPrivateNetworks = opts.CacheDir, log, opts.AllowPrivateNetworks
	// Hooks a module declares native and proves it computes identically
	// run in the host (host/native; docs/abi.md §native hooks).
	ecfg.Natives = native.Hooks()
	tm, ml := cfg.TenantModules, cfg.ModuleLogs
	ecfg.Tenants = wasm.TenantLimits{TimeoutMS: tm.TimeoutMS, MemoryPages: tm.MemoryPages, PoolSize: tm.PoolSize, ConcurrentCalls: tm.ConcurrentCalls, CPUMsPerMinute: tm.CPUMsPerMinute, IdleBytes: tm.IdleMemoryBytes, CompiledIdle: time.Duration(tm.CompiledIdle)}
	// The gateway's own modules are metered against the calling account's
	// module time (tenant_modules.cpu_ms_per_minute), the operator's
	// requests excepted.
	ecfg.Unmetered = func(account string) bool { return account == g.Keys.OperatorAccount() }
	ecfg.Logs = wasm.LogLimits{BytesPerCall: ml.BytesPerCall, LinesPerCall: ml.LinesPerCall, BytesPerMinute: ml.BytesPerMinute, LinesPerMinute: ml.LinesPerMinute}
	g.Engine = wasm.NewEngine(ecfg)
	g.closers = append(g.closers, func() { _ = g.Engine.Close(ctx) })
	if g.Modules, err = modules.Open(g.DB, g.Engine, log); err != nil {
		return err
	}
	g.closers = append(g.closers, g.Modules.Close)
	// Stored active versions and newly built ones, each compiled once, in
	// parallel; a stored version that fails to load is logged by Start.
	if err := g.Modules.Start(ctx, cfg.ModulesDir); err != nil {
		return err
	}
	settings, err := cfg.ModuleSettingsJSON()
	if err != nil {
		return err
	}
	g.Modules.SetSettings(settings)
	if err := g.checkAPIs(g.Catalog); err != nil {
		return err
	}
	qm, qv, qb := cfg.TenantModules.Quota()
	g.Modules.SetQuota(modules.Quota{Modules: qm, VersionsPerModule: qv, Bytes: qb})
	return nil
}

// rootCAs is the system's certificate pool plus the PEM files of
// modules.http.root_cas; nil when there are none (the system's pool).
func rootCAs(files []string) (*x509.CertPool, error) {
	if len(files) == 0 {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("config: modules.http.root_cas: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("config: modules.http.root_cas: %s holds no PEM certificate", f)
		}
	}
	return pool, nil
}

// hostFunctions is the engine configuration of the module host functions
// (config "modules" and "secrets"; opts.Secrets in their place when set),
// and starts the module store's sweep.
func (g *Gateway) hostFunctions(opts Options) (wasm.Config, error) {
	mc := g.Config.Modules
	roots, err := rootCAs(mc.HTTP.RootCAs)
	if err != nil {
		return wasm.Config{}, err
	}
	ecfg := wasm.Config{
		HTTP: wasm.HTTPLimits{
			CallsPerRequest: mc.HTTP.CallsPerRequest, MaxResponseBytes: mc.HTTP.MaxResponseBytes,
			Timeout: time.Duration(mc.HTTP.Timeout), MinBytesPerSecond: mc.HTTP.MinBytesPerSecond, PrivateHosts: mc.PrivateHosts, PrivateHostAccounts: mc.PrivateHostAccounts, RootCAs: roots,
		},
		ChatCallsPerRequest: mc.ChatCallsPerRequest,
		Secrets:             g.Config.ResolveSecrets(os.Environ()),
		TenantSecrets:       mc.TenantSecrets,
	}
	if opts.Secrets != nil {
		ecfg.Secrets = opts.Secrets
	}
	kvs, err := kv.Open(g.DB, kv.Limits{
		MaxKeys: mc.KV.MaxKeys, MaxBytes: mc.KV.MaxBytes, MaxKeyBytes: mc.KV.MaxKeyBytes, MaxValueBytes: mc.KV.MaxValueBytes,
		MaxTTL: time.Duration(mc.KV.MaxTTL), SweepEvery: time.Duration(mc.KV.SweepEvery), MaxCacheBytes: mc.KV.MaxCacheBytes,
	})
	if err != nil {
		return wasm.Config{}, err
	}
	ecfg.KV = kvs
	g.kv = kvs
	// The vector index is rebuilt from the store here, at start.
	vix, err := vecindex.Open(g.DB, vecindex.Limits{MaxPerPartition: mc.Vectors.MaxPerPartition, MaxTotal: mc.Vectors.MaxTotal,
		MaxDims: mc.Vectors.MaxDims, MaxTTL: time.Duration(mc.KV.MaxTTL), ANNThreshold: mc.Vectors.ANNThreshold})
	if err != nil {
		return wasm.Config{}, err
	}
	ecfg.Vectors = vix
	g.vectors = vix
	// Modules' own metrics, on /metrics (observability.go) when it is on.
	g.modMetrics = modmetrics.New()
	ecfg.Metrics = g.modMetrics
	g.closers = append(g.closers, vix.Close)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		kvs.Run(ctx, func(f string, a ...any) { g.log.Error(fmt.Sprintf(f, a...)) })
	}()
	g.closers = append(g.closers, func() { stop(); <-done })
	return ecfg, nil
}

// bootstrap creates the first account and management key (cfg.BootstrapKey
// or a new one) on an empty store, funds it with cfg.BootstrapCredits, and
// finds the operator account.
func (g *Gateway) bootstrap() error {
	cfg := g.Config
	secret, created, err := g.Keys.Bootstrap(cfg.BootstrapKey)
	if err != nil {
		return err
	}
	g.Operator = g.Keys.BootstrapAccount()
	if !created {
		return nil
	}
	k, aerr := g.Keys.Authenticate(secret)
	if aerr != nil {
		return aerr
	}
	g.Operator = k.AccountID
	if cfg.BootstrapCredits > 0 {
		if _, err := g.Ledger.TopUp(k.AccountID, billing.FromUSD(cfg.BootstrapCredits), "bootstrap credits"); err != nil {
			return err
		}
		g.log.Info("bootstrap account funded", "usd", cfg.BootstrapCredits)
	}
	if cfg.BootstrapKey == "" {
		g.BootstrapSecret = secret
	}
	return nil
}

func (g *Gateway) startDemo() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("demo upstream: %w", err)
	}
	srv := &http.Server{Handler: demo.New(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	g.closers = append(g.closers, func() { _ = srv.Close() })
	g.DemoURL = "http://" + ln.Addr().String() + "/v1"
	return nil
}

// Serve serves on ln until Server.Shutdown. The listener is guarded
// (netguard): running out of descriptors is waited out instead of ending
// Serve, open connections are capped in total and per client address
// (limits.max_connections, limits.max_connections_per_ip), and closes
// linger while a client is still uploading, so an early answer (413, 401)
// reaches it instead of a reset. A connection's slot is freed when its
// descriptor is really closed, after the lingering.
func (g *Gateway) Serve(ln net.Listener) error {
	go func() {
		g.warmTokenizers()
		if g.releasePages {
			g.releaseStartPages()
		}
	}()
	return g.Server.Serve(g.guard(ln))
}

// warmTokenizers loads the vocabularies the catalog's models are counted
// with (tokenize.WarmFor), while the gateway already serves: the first
// long stream's checkpoint, or the first answer without usage, would
// otherwise load one inside a request, and a burst of them would all wait
// on it. It costs the idle heap the vocabularies (≈5 MB for cl100k_base,
// ≈9 MB for o200k_base); a model added later by a reload loads its own on
// first use.
func (g *Gateway) warmTokenizers() {
	cat := g.Router.Catalog()
	ids := make([]string, 0, len(cat.Models))
	for id := range cat.Models {
		ids = append(ids, id)
	}
	start := time.Now()
	names, err := tokenize.WarmFor(ids...)
	if err != nil {
		g.log.Warn("tokenizer vocabularies not loaded; the first count loads them", "err", err)
		return
	}
	g.log.Debug("tokenizer vocabularies loaded", "vocabularies", names, "took", time.Since(start).Round(time.Millisecond))
}

// releaseStartPages unmaps the executable's pages that start-up touched
// (exepages.Release): the idle gateway's RSS is then the pages it uses,
// not every page of the 300-odd package inits it ran once.
func (g *Gateway) releaseStartPages() {
	n, err := exepages.Release()
	if err != nil {
		g.log.Warn("start-up pages of the executable not released", "err", err)
		return
	}
	g.log.Debug("start-up pages of the executable released", "mapped_bytes", n)
}

func (g *Gateway) guard(ln net.Listener) *netguard.Listener {
	lim := g.Config.Limits
	nl := netguard.Wrap(ln, netguard.Config{
		MaxConns:      lim.MaxConnections,
		MaxConnsPerIP: lim.MaxConnectionsPerIP,
		Linger:        netguard.NewLingerer(netguard.LingerConfig{}),
		Logf:          func(f string, a ...any) { g.log.Warn(fmt.Sprintf(f, a...)) },
	})
	total, perIP := nl.Caps()
	g.log.Info("connection caps", "max_connections", total, "max_connections_per_ip", perIP, "fd_limit", netguard.FDLimit())
	return nl
}

// Close releases everything New opened, in reverse order. Shut the server
// down first (Server.Shutdown).
// Vectors is the module vector index and KV the module kv store (benchmarks
// fill them to the sizes a test cannot reach one request at a time).
func (g *Gateway) Vectors() *vecindex.Index { return g.vectors }

// KV is the module kv store (see Vectors).
func (g *Gateway) KV() *kv.Store { return g.kv }

func (g *Gateway) Close() {
	for i := len(g.closers) - 1; i >= 0; i-- {
		g.closers[i]()
	}
	g.closers = nil
}
