package wasm

// Extism compatibility: a manifest with "runtime": "extism" names a module
// built with an Extism PDK (AssemblyScript, Rust, JS, …). It runs through the
// Extism Go SDK, but the contract is the same as the native ABI's, so
// Module.Call behaves identically for both runtimes:
//
//   - the module exports one Extism function per hook, named like the hook
//     (pre_request, chat_request, …), taking nothing and returning an i32;
//   - its Extism input is the frame the native ABI gets (the input fields,
//     each a little-endian u32 length and its bytes);
//   - its Extism output is the native output: status byte 0 and a frame of
//     fields, or 1 and a message. An Extism error (error_set) or a non-zero
//     return code is a failed hook as well.
//
// Grants and limits apply as for native modules: the memory cap, the
// per-call time limit (the guest rewritten so its loops check it, as a
// native module's; wazero's check where the rewrite cannot), Switchyard's
// host functions from extism:host/user (extismhost.go: chat, kv, http_request
// on the guarded client, …) under the same grants, Extism's own
// http_request only with the "http" grant, to grants.http_domains and only
// on engines that allow private networks (see checkExtismImports), logging
// (Switchyard's extism:host/user log, or Extism's log_* functions) only with
// the "log" grant. Imports are checked at load; one instance is created at
// load and instances are pooled, as for native modules.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	extism "github.com/extism/go-sdk"
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm/rewrite"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Import modules of Extism guests.
const (
	extismEnv  = "extism:host/env"  // the Extism kernel and its built-in host functions
	extismUser = "extism:host/user" // host functions the embedder adds: Switchyard's (extismhost.go)
)

// Extism's built-in host functions a module may import without a grant:
// the kernel's memory, input and output, and its own configuration and
// variables (config is always empty here: plugin configuration comes in the
// ctx field).
var extismKernel = map[string]bool{
	"alloc": true, "free": true, "length": true, "length_unsafe": true,
	"load_u8": true, "load_u64": true, "store_u8": true, "store_u64": true,
	"input_length": true, "input_offset": true, "input_load_u8": true, "input_load_u64": true, "input_set": true,
	"output_set": true, "output_length": true, "output_offset": true,
	"error_set": true, "error_get": true, "reset": true, "memory_bytes": true,
	"config_get": true, "var_get": true, "var_set": true, "get_log_level": true,
}

// Extism's built-in host functions behind a grant.
var extismGranted = map[string]string{
	"http_request": abi.GrantHTTP, "http_status_code": abi.GrantHTTP, "http_headers": abi.GrantHTTP,
	"log_trace": abi.GrantLog, "log_debug": abi.GrantLog, "log_info": abi.GrantLog,
	"log_warn": abi.GrantLog, "log_error": abi.GrantLog,
}

// Bounds of Extism's own resources.
const (
	extismMaxVarBytes = 64 << 10 // Extism variables live in one pooled instance: keep them small
)

// extismRuntime is what Extism modules with the same limits share: the
// runtime configuration and a runtime used only to compile a module and
// check its imports and exports before the Extism SDK takes it. The SDK
// creates a wazero runtime of its own for each module; with a cache
// directory, that runtime gets a compilation cache of its own over the same
// directory, so the module and the Extism kernel are read back compiled
// instead of compiled again, and closing the module frees its code.
type extismRuntime struct {
	rt    wazero.Runtime
	cache wazero.CompilationCache // nil without a cache directory
	dir   string                  // the cache directory, "" for none
	cfg   wazero.RuntimeConfig    // without a compilation cache
}

// extismRuntimeFor returns the shared pieces for k. The caller holds e.mu.
func (e *Engine) extismRuntimeFor(ctx context.Context, k runtimeKey) (*extismRuntime, error) {
	if r, ok := e.extism[k]; ok {
		return r, nil
	}
	r := &extismRuntime{}
	r.cfg = wazero.NewRuntimeConfigCompiler().
		WithMemoryLimitPages(k.pages).
		WithCloseOnContextDone(k.guarded)
	check := r.cfg
	if e.cacheDir != "" {
		r.dir = filepath.Join(e.cacheDir, fmt.Sprintf("extism-p%d-g%t", k.pages, k.guarded))
		if err := os.MkdirAll(r.dir, 0o700); err != nil {
			return nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
		c, err := wazero.NewCompilationCacheWithDir(r.dir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
		r.cache = c
		check = check.WithCompilationCache(c)
	}
	r.rt = wazero.NewRuntimeWithConfig(ctx, check)
	e.extism[k] = r
	return r, nil
}

// closeExtism closes every Extism module's runtime and cache, then the
// shared runtimes and caches (a compiled module must not outlive its
// cache). The caller holds e.mu.
func (e *Engine) closeExtism(ctx context.Context) {
	for m, c := range e.extismMods {
		_ = m.ext.Close(ctx)
		if c != nil {
			_ = c.Close(ctx)
		}
		delete(e.extismMods, m)
	}
	for k, r := range e.extism {
		_ = r.rt.Close(ctx)
		if r.cache != nil {
			_ = r.cache.Close(ctx)
		}
		delete(e.extism, k)
	}
}

// closeExtismModule frees m's runtime, unless the engine did already.
func (e *Engine) closeExtismModule(ctx context.Context, m *Module) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.extismMods[m]
	if !ok {
		return nil
	}
	delete(e.extismMods, m)
	err := m.ext.Close(ctx)
	if c != nil {
		_ = c.Close(ctx)
	}
	return err
}

// loadExtism is Load for runtime "extism".
func (e *Engine) loadExtism(ctx context.Context, m *manifest.Manifest, id string, wasm []byte) (*Module, error) {
	refuse := func(format string, args ...any) (*Module, error) {
		return nil, &LoadError{Module: id, Reason: fmt.Sprintf(format, args...)}
	}
	// The module exists before it compiles: its host functions are bound
	// to it (grants, account, http client).
	mod := &Module{Manifest: m, ID: id, engine: e, pool: make(chan *instance, m.Limits.PoolSize), acct: e.accountFor("", false)}
	cp, cache, err := e.compileExtism(ctx, mod, wasm)
	if err != nil {
		return nil, err
	}
	mod.ext = cp
	release := func() {
		_ = cp.Close(ctx)
		if cache != nil {
			_ = cache.Close(ctx)
		}
	}
	first, err := mod.instantiateExtism(ctx)
	if err != nil {
		release()
		return refuse("does not instantiate: %v", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		_ = first.ext.p.Close(ctx)
		release()
		return refuse("engine is closed")
	}
	mod.live = 1
	mod.pool <- first
	e.extismMods[mod] = cache
	return mod, nil
}

// compileExtism checks the module against its manifest and hands it to the
// Extism SDK. Like native compilation it runs outside the engine's lock, so
// modules compile in parallel. It returns the module's own compilation
// cache, nil without a cache directory.
func (e *Engine) compileExtism(ctx context.Context, mod *Module, wasm []byte) (*extism.CompiledPlugin, wazero.CompilationCache, error) {
	m, id := mod.Manifest, mod.ID
	refuse := func(format string, args ...any) (*extism.CompiledPlugin, wazero.CompilationCache, error) {
		return nil, nil, &LoadError{Module: id, Reason: fmt.Sprintf(format, args...)}
	}
	if err := rewrite.CheckCounts(wasm); err != nil {
		return refuse("%v", err)
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return refuse("engine is closed")
	}
	// With a time limit, the module is rewritten as native ones are
	// (rewrite.Preempt) where it can be: its loops then count down to a
	// switchyard.__yield that fails the call past its deadline, and it runs
	// without wazero's check at every loop head (which made the
	// AssemblyScript example's call 3x slower). Extism's kernel module is
	// not rewritten: its functions return to the guest, whose loops are.
	run := wasm
	yield := false
	if m.Limits.TimeoutMS > 0 {
		if rw, _, err := rewrite.Preempt(wasm); err == nil {
			run, yield = rw, true
		}
	}
	k := runtimeKey{pages: m.Limits.MemoryPages, guarded: m.Limits.TimeoutMS > 0 && !yield}
	r, err := e.extismRuntimeFor(ctx, k)
	e.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	ctx = compileContext(ctx)
	// Compiled here to check it (as the author wrote it: the rewrite's
	// import is not theirs), and again by the Extism SDK below: with a
	// cache directory and no rewrite, that second compilation is a cache
	// hit.
	compiled, err := r.rt.CompileModule(ctx, wasm)
	if err != nil {
		return refuse("does not compile: %v", err)
	}
	err = checkExtismExports(compiled, m)
	if err == nil {
		err = checkExtismImports(compiled, m, e.cfg.AllowPrivateNetworks)
	}
	_ = compiled.Close(ctx)
	if err != nil {
		return refuse("%v", err)
	}

	var funcs []extism.HostFunction
	if m.GrantsHostFunction(abi.GrantLog) {
		funcs = append(funcs, e.extismLog(id))
	}
	funcs = append(funcs, e.extismHostFuncs(mod)...)
	timeout := uint64(m.Limits.TimeoutMS) // Module.Call sets the same deadline
	if yield {
		funcs = append(funcs, extismYield())
		// Extism's own timeout would switch wazero's check back on; the
		// deadline is the call's context's, which __yield watches.
		timeout = 0
	}
	em := extism.Manifest{
		Wasm: []extism.Wasm{extism.WasmData{Data: run, Name: "main"}},
		Memory: &extism.ManifestMemory{
			MaxPages:             m.Limits.MemoryPages,
			MaxHttpResponseBytes: e.cfg.HTTP.withDefaults().MaxResponseBytes,
			MaxVarBytes:          extismMaxVarBytes,
		},
		Timeout: timeout,
	}
	if m.GrantsHostFunction(abi.GrantHTTP) {
		em.AllowedHosts = extismHosts(m.Grants.HTTPDomains)
	}
	cfg := r.cfg
	var cache wazero.CompilationCache
	if r.dir != "" {
		if cache, err = wazero.NewCompilationCacheWithDir(r.dir); err != nil {
			return nil, nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
		cfg = cfg.WithCompilationCache(cache)
	}
	cp, err := extism.NewCompiledPlugin(ctx, em, extism.PluginConfig{
		RuntimeConfig: cfg,
		EnableWasi:    true, // sandboxed like native modules: see instantiateExtism
	}, funcs)
	if err != nil {
		if cache != nil {
			_ = cache.Close(ctx)
		}
		return refuse("does not compile: %v", err)
	}
	return cp, cache, nil
}

// extismHosts turns grants.http_domains into Extism's allowed hosts, which
// are glob patterns: "*.example.com" means the same in both. Anything else a
// glob would read specially cannot be in a host name, so it is left out.
func extismHosts(domains []string) []string {
	hosts := []string{}
	for _, d := range domains {
		if strings.ContainsAny(d, "?[]{}\\!") {
			continue
		}
		hosts = append(hosts, strings.ToLower(d))
	}
	return hosts
}

func checkExtismExports(c wazero.CompiledModule, m *manifest.Manifest) error {
	fns := c.ExportedFunctions()
	for _, h := range m.Hooks {
		hook, _ := abi.HookByName(h)
		if m.IsPassthrough(hook) {
			continue
		}
		f, ok := fns[h]
		if !ok {
			if _, native := fns[abi.ExportHandle]; native {
				return fmt.Errorf("exports the native Switchyard ABI (%s), not Extism functions: remove \"runtime\": \"extism\" from its manifest", abi.ExportHandle)
			}
			return fmt.Errorf("missing export %s (an Extism module exports one function per hook, named like the hook)", h)
		}
		res := f.ResultTypes()
		if len(f.ParamTypes()) != 0 || len(res) > 1 || (len(res) == 1 && res[0] != api.ValueTypeI32) {
			return fmt.Errorf("export %s has signature %v -> %v, want an Extism function [] -> [i32]", h, f.ParamTypes(), res)
		}
	}
	return nil
}

// checkExtismImports refuses what the manifest does not grant. Extism's
// own http_request is refused unless the engine allows private networks:
// it dials with Go's default client, which follows redirects and does not
// check the address it connects to, so it cannot keep a module to public
// addresses the way the native http_request does (a granted domain could
// resolve or redirect to a cloud metadata endpoint).
func checkExtismImports(c wazero.CompiledModule, m *manifest.Manifest, allowPrivate bool) error {
	for _, f := range c.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case wasi_snapshot_preview1.ModuleName:
			// Sandboxed: no files, environment, arguments or real clocks.
		case extismEnv:
			if extismKernel[name] {
				continue
			}
			grant, ok := extismGranted[name]
			if !ok {
				return fmt.Errorf("imports %s.%s, which this host does not provide", mod, name)
			}
			if !m.GrantsHostFunction(grant) {
				return fmt.Errorf("imports host function %s.%s which its manifest does not grant (grants.host_functions needs %q)", mod, name, grant)
			}
			if grant == abi.GrantHTTP && !allowPrivate {
				return fmt.Errorf("imports %s.%s, which this host does not provide to Extism modules: it cannot be confined to public addresses (only engines that allow private networks, in development, provide it)", mod, name)
			}
		case extismUser:
			if extismUserFunc(name) {
				if !m.GrantsHostFunction(name) {
					return fmt.Errorf("imports host function %s.%s which its manifest does not grant", mod, name)
				}
				if !sameTypes(f.ParamTypes(), []api.ValueType{api.ValueTypeI64}) || !sameTypes(f.ResultTypes(), []api.ValueType{api.ValueTypeI64}) {
					return fmt.Errorf("imports %s.%s with signature %v -> %v, want [i64] -> [i64]", mod, name, f.ParamTypes(), f.ResultTypes())
				}
				continue
			}
			if name != abi.HostLog {
				return fmt.Errorf("imports unknown host function %s.%s", mod, name)
			}
			if !m.GrantsHostFunction(abi.GrantLog) {
				return fmt.Errorf("imports host function %s.%s which its manifest does not grant", mod, name)
			}
			if !sameTypes(f.ParamTypes(), []api.ValueType{api.ValueTypeI32, api.ValueTypeI64}) || len(f.ResultTypes()) != 0 {
				return fmt.Errorf("imports %s.%s with signature %v -> %v, want [i32 i64] -> []", mod, name, f.ParamTypes(), f.ResultTypes())
			}
		case abi.ImportModule:
			return fmt.Errorf("imports %s.%s: an Extism module reaches Switchyard's host functions through %s", mod, name, extismUser)
		case "env":
			if name == "abort" {
				return fmt.Errorf("imports env.abort, which this host does not provide (AssemblyScript: build with --use abort=<your abort function>)")
			}
			return fmt.Errorf("imports %s.%s, which this host does not provide", mod, name)
		default:
			return fmt.Errorf("imports %s.%s, which this host does not provide", mod, name)
		}
	}
	return nil
}

// extismLog is Switchyard's log host function for Extism guests:
// extism:host/user log(level i32, message i64), where message is the offset
// of an Extism memory block holding UTF-8 text (Memory.allocateString in the
// AssemblyScript PDK). The block is the guest's: it may free it, and the
// kernel drops it at the next call anyway.
func (e *Engine) extismLog(id string) extism.HostFunction {
	return extism.NewHostFunctionWithStack(abi.HostLog, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		level, off := int32(stack[0]), stack[1]
		n, err := p.Length(off)
		if err != nil || n == 0 {
			return
		}
		if b, ok := p.Memory().Read(uint32(off), uint32(min(n, maxLogLine))); ok {
			e.moduleLog(ctx, level, b, id)
		}
	}, []extism.ValueType{extism.ValueTypeI32, extism.ValueTypeI64}, nil)
}

// extismYield is switchyard.__yield for a rewritten Extism module: Extism
// hands host functions the call's context, as wazero does hostYield.
func extismYield() extism.HostFunction {
	f := extism.NewHostFunctionWithStack(rewrite.YieldImport, func(ctx context.Context, _ *extism.CurrentPlugin, _ []uint64) {
		if err := ctx.Err(); err != nil {
			panic(err)
		}
	}, nil, nil)
	f.SetNamespace(abi.ImportModule)
	return f
}

// extismInstance is one pooled Extism plugin instance.
type extismInstance struct {
	p     *extism.Plugin
	frame []byte // the input frame, reused across calls
	// ctx is the call's while one runs: Extism's logger callback has none,
	// and the call's log budget and account travel in it.
	ctx context.Context
}

func (m *Module) instantiateExtism(ctx context.Context) (*instance, error) {
	// A fresh module config has no file system, environment, arguments or
	// real clocks, and a deterministic random source, as for native modules.
	p, err := m.ext.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: wazero.NewModuleConfig()})
	if err != nil {
		return nil, err
	}
	x := &extismInstance{p: p, ctx: context.Background()}
	id, e := m.ID, m.engine
	p.SetLogger(func(level extism.LogLevel, msg string) {
		if len(msg) > maxLogLine {
			msg = msg[:maxLogLine]
		}
		lv := int32(1)
		switch level {
		case extism.LogLevelTrace, extism.LogLevelDebug:
			lv = 0
		case extism.LogLevelWarn:
			lv = 2
		case extism.LogLevelError:
			lv = 3
		}
		e.moduleLog(x.ctx, lv, []byte(msg), id)
	})
	return &instance{owner: m, name: id, ext: x}, nil
}

// call runs hook as the Extism function of the same name and returns the
// output in the native format. An error means the instance trapped or was
// interrupted and must be discarded; a failure the guest reported itself
// (Extism's error_set, a non-zero return code) comes back as a
// StatusError output, and the instance stays usable.
func (x *extismInstance) call(ctx context.Context, hook abi.Hook, fields [][]byte) ([]byte, error) {
	x.ctx = ctx
	defer func() { x.ctx = context.Background() }()
	x.frame = x.frame[:0]
	for _, f := range fields {
		x.frame = abi.AppendField(x.frame, f)
	}
	rc, out, err := x.p.CallWithContext(ctx, hook.String(), x.frame)
	if err != nil {
		if ctx.Err() == nil {
			msg := x.p.GetErrorWithContext(context.Background())
			if msg != "" && msg == err.Error() {
				return append([]byte{abi.StatusError}, msg...), nil
			}
			if msg != "" { // e.g. an AssemblyScript abort that set the error before trapping
				return nil, fmt.Errorf("%w (%s)", err, msg)
			}
		}
		return nil, err
	}
	if rc != 0 {
		return append([]byte{abi.StatusError}, "returned code "+strconv.FormatUint(uint64(rc), 10)...), nil
	}
	return out, nil // empty: Module.Call fails it with "returned no output"
}
