package rewrite

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// A harness that instantiates any module on plain wazero, without
// host/wasm's engine: WASI is wazero's own (sandboxed, deterministic
// clocks and randomness), and every other import is a stub that returns
// zeros, so the original and the rewritten module see the same host.

// instantiate compiles bin on a runtime of its own (cfg; nil: the
// interpreter, whose validation is the compiler's) with WASI and a stub for
// every function bin imports from another module (__yield, the rewrite's,
// included), and instantiates it with the start functions given (none:
// only the module's own start section runs).
func instantiate(t testing.TB, bin []byte, cfg wazero.RuntimeConfig, start ...string) (api.Module, error) {
	t.Helper()
	ctx := context.Background()
	if cfg == nil {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		t.Fatal(err)
	}
	c, err := rt.CompileModule(ctx, bin)
	if err != nil {
		return nil, err
	}
	stubImports(t, ctx, rt, c)
	return rt.InstantiateModule(ctx, c, wazero.NewModuleConfig().WithStartFunctions(start...))
}

// stubImports instantiates, in rt, a host module for every module other
// than WASI that c imports functions from, each function returning zeros.
func stubImports(t testing.TB, ctx context.Context, rt wazero.Runtime, c wazero.CompiledModule) {
	t.Helper()
	stubs := map[string][]api.FunctionDefinition{}
	for _, f := range c.ImportedFunctions() {
		mod, _, _ := f.Import()
		if mod != wasi_snapshot_preview1.ModuleName {
			stubs[mod] = append(stubs[mod], f)
		}
	}
	mods := make([]string, 0, len(stubs))
	for m := range stubs {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	for _, mod := range mods {
		b := rt.NewHostModuleBuilder(mod)
		seen := map[string]bool{}
		for _, f := range stubs[mod] {
			_, name, _ := f.Import()
			if seen[name] {
				continue
			}
			seen[name] = true
			results := f.ResultTypes()
			b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
				for i := range results {
					stack[i] = 0
				}
			}), f.ParamTypes(), results).Export(name)
		}
		if _, err := b.Instantiate(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// builtModules are Go guests `make wasm` builds (build/testdata, and the
// OpenAI adapter: the other first-party modules are the same Go runtime and
// SDK, and each costs seconds), by file name; the test is skipped without
// them.
func builtModules(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, pattern := range []string{"../../../build/testdata/*.wasm", "../../../build/wasm/openai.wasm"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(f)] = b
		}
	}
	if len(out) == 0 {
		t.Skip("no built modules (run make wasm)")
	}
	return out
}
