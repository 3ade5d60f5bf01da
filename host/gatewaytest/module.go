package gatewaytest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm"
)

// BuiltModule loads the first-party module name as `make wasm` built it
// (build/wasm/<name>.wasm and .json) into an engine of its own, closed when
// the test ends: how module benchmarks and module-level tests run a module
// without a gateway. configure, when not nil, may change the manifest and
// the engine's configuration before the load (no time limit, one
// instance, a private host, a key-value store).
func BuiltModule(tb testing.TB, name string, configure func(*manifest.Manifest, *wasm.Config)) *wasm.Module {
	tb.Helper()
	dir := filepath.Join(Root(), "build", "wasm")
	mj, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		tb.Fatalf("run `make wasm` first: %v", err)
	}
	bin, err := os.ReadFile(filepath.Join(dir, name+".wasm"))
	if err != nil {
		tb.Fatalf("run `make wasm` first: %v", err)
	}
	m, err := manifest.Parse(mj)
	if err != nil {
		tb.Fatal(err)
	}
	// The compilation cache every test gateway shares (Start).
	cfg := wasm.Config{CacheDir: cacheDir()}
	if configure != nil {
		configure(m, &cfg)
	}
	e := wasm.NewEngine(cfg)
	tb.Cleanup(func() { _ = e.Close(context.Background()) })
	mod, err := e.Load(context.Background(), m, bin)
	if err != nil {
		tb.Fatal(err)
	}
	return mod
}
