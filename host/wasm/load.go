package wasm

// Loading a module: compiling it (after the rewrites of package rewrite),
// checking its exports and imports against ABI v1 and its manifest, and
// making its first instance, now (Load) or on its first call (LoadLazy).

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"strings"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm/rewrite"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// LoadError says why a module was refused.
type LoadError struct {
	Module string
	Reason string
}

func (e *LoadError) Error() string { return "module " + e.Module + " refused: " + e.Reason }

// LoadTenant loads a module published by account: its limits are clamped
// to the engine's Tenants ceilings (a time limit always), its calls count
// against the account's call slots and minute budget, and every call
// starts from an instance's state after start (reset after each call,
// snapshot.go, or made for the call), so nothing of one request survives
// into the next (instances are never shared across accounts).
func (e *Engine) LoadTenant(ctx context.Context, account string, m *manifest.Manifest, wasm []byte) (*Module, error) {
	return e.LoadTenantStored(ctx, account, m, wasm, nil)
}

// LoadTenantStored is LoadTenant for a version kept in a store, which fetch
// reads. With wasm nil the module is compiled on its first call (a stored
// version proved it loads when it was published), and with fetch set an
// idle module gives its compiled code back (TenantLimits.CompiledIdle,
// park.go) and is compiled again on its next call: the gateway's memory
// grows with the account modules in use, not with those stored.
func (e *Engine) LoadTenantStored(ctx context.Context, account string, m *manifest.Manifest, wasm []byte, fetch func() ([]byte, error)) (*Module, error) {
	c := *m
	c.Limits = e.tenantLimits().Clamp(m.Limits)
	if c.Limits != m.Limits {
		e.log.Info("tenant module limits clamped to the operator's ceilings", "module", m.Name+"@"+m.Version, "account", account,
			"timeout_ms", c.Limits.TimeoutMS, "memory_pages", c.Limits.MemoryPages, "pool_size", c.Limits.PoolSize)
	}
	mod, err := e.LoadLazyFrom(&c, wasm, fetch) // an Extism module loads now
	if err != nil {
		return nil, err
	}
	mod.account, mod.acct = account, e.accountFor(account, true)
	mod.slots = make(chan struct{}, c.Limits.PoolSize)
	if mod.ext != nil {
		// A tenant's calls are metered and isolated per call
		// (callTenant): the instance made at load has no snapshot.
		select {
		case in := <-mod.pool:
			mod.discard(in)
		default:
		}
		return mod, nil
	}
	if wasm != nil {
		mod.lazy = false
		if err := mod.ensure(ctx); err != nil {
			return nil, err
		}
	}
	if fetch != nil {
		mod.refetch = fetch
		e.addParkable(mod)
	}
	return mod, nil
}

// Load compiles wasm for the manifest m, validates it against ABI v1 and the
// grants, and instantiates its first instance.
func (e *Engine) Load(ctx context.Context, m *manifest.Manifest, wasm []byte) (*Module, error) {
	if m.Runtime == manifest.RuntimeExtism {
		return e.loadExtism(ctx, m, m.Name+"@"+m.Version, wasm)
	}
	mod, err := e.LoadLazy(m, wasm)
	if err != nil {
		return nil, err
	}
	mod.lazy = false
	if err := mod.ensure(ctx); err != nil {
		return nil, err
	}
	return mod, nil
}

// LoadLazy is Load for a module already proven to load (a stored active
// version, or a seed identical to the stored one): it compiles, validates
// and instantiates on the first call instead of now, so a gateway with
// modules it does not use neither pays their compilation at start nor
// keeps their code in memory. A failure then fails that call (and every
// later one) with the reason, as a 502. Extism modules load now.
func (e *Engine) LoadLazy(m *manifest.Manifest, wasm []byte) (*Module, error) {
	return e.LoadLazyFrom(m, wasm, nil)
}

// LoadLazyFrom is LoadLazy for a binary that fetch returns on the first
// call (wasm is then nil): a module store does not keep megabytes of
// binaries in memory for modules nobody calls.
func (e *Engine) LoadLazyFrom(m *manifest.Manifest, wasm []byte, fetch func() ([]byte, error)) (*Module, error) {
	if wasm == nil && fetch != nil && m.Runtime == manifest.RuntimeExtism {
		var err error
		if wasm, err = fetch(); err != nil {
			return nil, &LoadError{Module: m.Name + "@" + m.Version, Reason: err.Error()}
		}
	}
	id := m.Name + "@" + m.Version
	switch m.Runtime {
	case manifest.RuntimeNative:
	case manifest.RuntimeExtism:
		return e.loadExtism(context.Background(), m, id, wasm)
	default:
		return nil, &LoadError{Module: id, Reason: fmt.Sprintf("runtime %q is not supported by this host", m.Runtime)}
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, &LoadError{Module: id, Reason: "engine is closed"}
	}
	return &Module{
		Manifest: m, ID: id, engine: e, bin: wasm, fetch: fetch, lazy: true,
		pool: make(chan *instance, m.Limits.PoolSize), acct: e.accountFor("", false),
	}, nil
}

// ensure compiles, validates and instantiates the module's first instance,
// once: concurrent first calls wait for one compilation, and a failure is
// kept (a module that does not compile is not recompiled on every call).
func (m *Module) ensure(ctx context.Context) error {
	if m.ready.Load() {
		return nil
	}
	m.loadMu.Lock()
	defer m.loadMu.Unlock()
	if m.ready.Load() {
		return nil
	}
	if m.loadErr != nil {
		return m.loadErr
	}
	err := m.load(ctx)
	if err != nil && m.refetch != nil {
		// A parked module compiled before: what failed is reading it
		// again (a store that may answer the next call), not kept.
		return err
	}
	if m.loadErr = err; m.loadErr == nil {
		m.bin, m.fetch = nil, nil // compiled: the binary is no longer needed
		if m.slots == nil {
			// A tenant's calls are metered and isolated per call
			// (callTenant): running one natively would leave its
			// account's budgets out.
			m.bindNatives(ctx)
		}
		m.ready.Store(true)
		// Compiling leaves tens of MiB of garbage that the Go runtime would
		// hand back to the OS only after heap growth forces a collection;
		// a lazy load happens once per module, so return it now, off the
		// call's path.
		if m.lazy {
			go debug.FreeOSMemory()
		}
	}
	return m.loadErr
}

func (m *Module) load(ctx context.Context) error {
	e := m.engine
	refuse := func(format string, args ...any) error {
		return &LoadError{Module: m.ID, Reason: fmt.Sprintf(format, args...)}
	}
	if m.bin == nil && m.fetch != nil {
		bin, err := m.fetch()
		if err != nil {
			return refuse("cannot be read: %v", err)
		}
		m.bin = bin
	}
	r, compiled, cs, err := e.compile(ctx, m.Manifest, m.bin)
	if err != nil {
		return refuse("does not compile: %v", err)
	}
	if err := checkExports(compiled); err != nil {
		_ = compiled.Close(ctx)
		return refuse("%v", err)
	}
	if err := checkImports(compiled, m.Manifest, cs.preempt); err != nil {
		_ = compiled.Close(ctx)
		return refuse("%v", err)
	}
	m.rt, m.compiled, m.preempt, m.stateGlobals = r.rt, compiled, cs.preempt, cs.globals
	first, err := m.instantiate(ctx)
	if err != nil {
		m.rt, m.compiled = nil, nil
		_ = compiled.Close(ctx)
		return refuse("does not instantiate: %v", err)
	}
	m.engine.compiledN.Add(1)
	if m.slots != nil {
		// A tenant's: the instance proved the module instantiates; it has
		// no snapshot, so a tenant's calls make their own (callTenant).
		first.close()
		return nil
	}
	m.mu.Lock()
	m.live++
	m.mu.Unlock()
	m.pool <- first
	return nil
}

// compile compiles a native module. A module with a time limit is
// instrumented for cheap preemption (rewrite.Preempt) and runs on a runtime
// without wazero's per-loop exit; one the rewrite does not understand runs
// on a runtime with it. Compiled outside the engine's lock, so start-up
// compiles modules in parallel (wazero runtimes are safe for concurrent
// use).
func (e *Engine) compile(ctx context.Context, m *manifest.Manifest, wasm []byte) (*runtime, wazero.CompiledModule, *compiledState, error) {
	// A Go guest's ~40,000 data segments become a few (rewrite.MergeData): wazero
	// keeps each decoded segment as an object of its own for as long as
	// the module is loaded, tens of thousands of them for the collector
	// to mark in every cycle, and copies each on every instantiation.
	if err := rewrite.CheckCounts(wasm); err != nil { // before wazero reads a count
		return nil, nil, nil, &LoadError{Module: m.Name + "@" + m.Version, Reason: err.Error()}
	}
	wasm = rewrite.MergeData(wasm)
	runtimeOf := func(guarded bool) (*runtime, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.closed {
			return nil, errors.New("engine is closed")
		}
		return e.runtimeFor(ctx, runtimeKey{pages: m.Limits.MemoryPages, guarded: guarded})
	}
	if m.Limits.TimeoutMS > 0 && !e.cfg.NoInstrument {
		if inst, state, err := rewrite.Preempt(wasm); err == nil {
			r, err := runtimeOf(false)
			if err != nil {
				return nil, nil, nil, err
			}
			if c, err := r.rt.CompileModule(compileContext(ctx), inst); err == nil {
				return r, c, &compiledState{preempt: true, globals: state}, nil
			}
			// Invalid after the rewrite (say, the module exports a name the
			// rewrite adds): wazero's preemption instead.
		}
	}
	r, err := runtimeOf(m.Limits.TimeoutMS > 0)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := r.rt.CompileModule(compileContext(ctx), wasm)
	return r, c, &compiledState{}, err
}

// compiledState is what compile learnt of a module: preempt, it was
// instrumented (rewrite.Preempt); globals, the exports of its mutable globals
// when its instances can be reset to their state after start (rewrite,
// snapshot.go), else nil.
type compiledState struct {
	preempt bool
	globals []string
}

// compileContext lets wazero compile one module's functions on every CPU,
// unless the caller chose a number of workers (Registry.Start compiles
// several modules at once, each on one worker).
func compileContext(ctx context.Context) context.Context {
	if ctx.Value(workersSet{}) != nil {
		return ctx
	}
	return experimental.WithCompilationWorkers(ctx, goruntime.GOMAXPROCS(0))
}

type workersSet struct{}

// WithCompilationWorkers makes loads under ctx compile each module with n
// goroutines (by default, one per CPU).
func WithCompilationWorkers(ctx context.Context, n int) context.Context {
	return context.WithValue(experimental.WithCompilationWorkers(ctx, n), workersSet{}, true)
}

func checkExports(c wazero.CompiledModule) error {
	fns := c.ExportedFunctions()
	if _, ok := fns[abi.ExportMarker]; !ok {
		for name := range fns {
			if v, ok := strings.CutPrefix(name, abi.ExportPrefix); ok {
				return fmt.Errorf("ABI version %s is not supported by this host (supports %d)", v, abi.Version)
			}
		}
		return fmt.Errorf("not a Switchyard ABI module: missing export %s", abi.ExportMarker)
	}
	want := map[string][2][]api.ValueType{
		abi.ExportInput:  {{api.ValueTypeI32}, {api.ValueTypeI32}},
		abi.ExportHandle: {{api.ValueTypeI32, api.ValueTypeI32}, {api.ValueTypeI64}},
	}
	for name, sig := range want {
		f, ok := fns[name]
		if !ok {
			return fmt.Errorf("missing export %s", name)
		}
		if !sameTypes(f.ParamTypes(), sig[0]) || !sameTypes(f.ResultTypes(), sig[1]) {
			return fmt.Errorf("export %s has signature %v -> %v, want %v -> %v", name, f.ParamTypes(), f.ResultTypes(), sig[0], sig[1])
		}
	}
	if _, ok := c.ExportedMemories()[abi.ExportMemory]; !ok {
		return fmt.Errorf("missing export %s", abi.ExportMemory)
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// hostFunctions are the imports of module "switchyard" a manifest can
// grant: the frame convention's (hostHandlers) and those of their own.
var hostFunctions = func() map[string]bool {
	fns := map[string]bool{abi.HostLog: true, abi.HostHTTPRequest: true, abi.HostHTTPResponse: true, abi.HostResult: true}
	for name := range hostHandlers {
		fns[name] = true
	}
	return fns
}()

func checkImports(c wazero.CompiledModule, m *manifest.Manifest, preempt bool) error {
	for _, f := range c.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case wasi_snapshot_preview1.ModuleName:
			// Sandboxed by the module config: no files, no env, no real clock.
		case abi.ImportModule:
			if name == rewrite.YieldImport && preempt {
				continue // added by rewrite.Preempt
			}
			if !hostFunctions[name] {
				return fmt.Errorf("imports unknown host function %s.%s", mod, name)
			}
			if !m.GrantsHostFunction(name) {
				return fmt.Errorf("imports host function %s.%s which its manifest does not grant", mod, name)
			}
		case "extism:host/env":
			return fmt.Errorf("is an Extism module (imports %s); set \"runtime\": \"extism\" in its manifest", mod)
		default:
			return fmt.Errorf("imports %s.%s, which this host does not provide", mod, name)
		}
	}
	return nil
}
