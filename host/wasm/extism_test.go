package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/wasm"
)

// Hand-made Extism modules: each exports pre_request () -> i32 and imports
// what the case needs from the Extism kernel. The AssemblyScript example
// (examples/as-extism-plugin) covers a real PDK-built module.

func extismManifest(t *testing.T, extra string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(`{"name":"x","version":"1.0.0","abi":1,"kind":"plugin","runtime":"extism","hooks":["pre_request"],` + extra + `"limits":{"memory_pages":16,"pool_size":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var (
	impInputOffset = imp{module: "extism:host/env", name: "input_offset", results: []byte{i64}}
	impErrorSet    = imp{module: "extism:host/env", name: "error_set", params: []byte{i64}}
	impUserLog     = imp{module: "extism:host/user", name: "log", params: []byte{i32, i64}}
	callImport     = func(i byte) []byte { return []byte{0x10, i} }
	i32const       = func(v byte) []byte { return []byte{0x41, v} }
	preRequest     = func(body ...[]byte) fn {
		return fn{export: "pre_request", results: []byte{i32}, body: bytes.Join(body, nil)}
	}
	extismEchoAsError = module([]imp{impInputOffset, impErrorSet}, []fn{preRequest(callImport(0), callImport(1), i32const(1))}, 1)
)

func TestExtismLoadRefuses(t *testing.T) {
	e := engine(t)
	cases := []struct {
		name   string
		bin    []byte
		grants string
		want   string
	}{
		{"http not granted", module([]imp{{module: "extism:host/env", name: "http_request", params: []byte{i64, i64}, results: []byte{i64}}}, []fn{preRequest(i32const(0))}, 1),
			`"grants":{"host_functions":["log"],"http_domains":["api.example.com"]},`, `extism:host/env.http_request which its manifest does not grant (grants.host_functions needs "http")`},
		{"extism log not granted", module([]imp{{module: "extism:host/env", name: "log_info", params: []byte{i64}}}, []fn{preRequest(i32const(0))}, 1),
			"", `extism:host/env.log_info which its manifest does not grant`},
		{"user log not granted", module([]imp{impUserLog}, []fn{preRequest(i32const(0))}, 1),
			"", "extism:host/user.log which its manifest does not grant"},
		{"user log with a wrong signature", module([]imp{{module: "extism:host/user", name: "log", params: []byte{i64}}}, []fn{preRequest(i32const(0))}, 1),
			`"grants":{"host_functions":["log"]},`, "want [i32 i64] -> []"},
		{"unknown user function", module([]imp{{module: "extism:host/user", name: "exec", params: []byte{i64}}}, []fn{preRequest(i32const(0))}, 1),
			`"grants":{"host_functions":["log"]},`, "unknown host function extism:host/user.exec"},
		{"unknown kernel function", module([]imp{{module: "extism:host/env", name: "spawn"}}, []fn{preRequest(i32const(0))}, 1),
			"", "extism:host/env.spawn, which this host does not provide"},
		{"native host functions", module([]imp{{module: "switchyard", name: "log", params: []byte{i32, i32, i32}}}, []fn{preRequest(i32const(0))}, 1),
			`"grants":{"host_functions":["log"]},`, "through extism:host/user"},
		{"AssemblyScript abort", module([]imp{{module: "env", name: "abort", params: []byte{i32, i32, i32, i32}}}, []fn{preRequest(i32const(0))}, 1),
			"", "--use abort="},
		{"hook not exported", module(nil, []fn{{export: "pre_requesT", results: []byte{i32}, body: i32const(0)}}, 1),
			"", "missing export pre_request"},
		{"native module", module(nil, abiFuncs("switchyard_abi_v1", nil), 1),
			"", `remove "runtime": "extism"`},
		{"hook with parameters", module(nil, []fn{{export: "pre_request", params: []byte{i32}, results: []byte{i32}, body: i32const(0)}}, 1),
			"", "want an Extism function"},
		{"memory over the cap", module(nil, []fn{preRequest(i32const(0))}, 64),
			"", "over limit of 16 pages"},
		{"not wasm", []byte("hello"), "", "does not compile"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Load(context.Background(), extismManifest(t, tc.grants), tc.bin)
			var le *wasm.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("want a LoadError, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "x@1.0.0") {
				t.Fatalf("error %q should name the module and say %q", err, tc.want)
			}
		})
	}
	// Extism's own http_request cannot be kept to public addresses: granted,
	// it is still refused unless the engine allows private networks.
	httpModule := module([]imp{{module: "extism:host/env", name: "http_request", params: []byte{i64, i64}, results: []byte{i64}}}, []fn{preRequest(i32const(0))}, 1)
	httpGrant := `"grants":{"host_functions":["http"],"http_domains":["api.example.com","*.example.org"]},`
	if _, err := e.Load(context.Background(), extismManifest(t, httpGrant), httpModule); err == nil || !strings.Contains(err.Error(), "cannot be confined to public addresses") {
		t.Fatalf("Extism http_request on a production engine: %v", err)
	}
	dev := engineWith(t, wasm.Config{AllowPrivateNetworks: true})
	if _, err := dev.Load(context.Background(), extismManifest(t, httpGrant), httpModule); err != nil {
		t.Fatalf("Extism http_request granted on a development engine: %v", err)
	}
	// The other imports load when granted.
	granted := []struct {
		bin    []byte
		grants string
	}{
		{module([]imp{{module: "extism:host/env", name: "log_info", params: []byte{i64}}}, []fn{preRequest(i32const(0))}, 1), `"grants":{"host_functions":["log"]},`},
		{module([]imp{impUserLog}, []fn{preRequest(i32const(0))}, 1), `"grants":{"host_functions":["log"]},`},
		{module([]imp{{module: "wasi_snapshot_preview1", name: "proc_exit", params: []byte{i32}}}, []fn{preRequest(i32const(0))}, 1), ""},
	}
	for i, g := range granted {
		if _, err := e.Load(context.Background(), extismManifest(t, g.grants), g.bin); err != nil {
			t.Errorf("granted case %d refused: %v", i, err)
		}
	}
}

func TestExtismCall(t *testing.T) {
	e := engine(t)
	mod, err := e.Load(context.Background(), extismManifest(t, ""), extismEchoAsError)
	if err != nil {
		t.Fatal(err)
	}
	// The module reports its whole Extism input as its error: the input is
	// the native frame, and an error_set is the hook's failure.
	for range 3 {
		_, err = mod.Call(context.Background(), abi.HookPreRequest, []byte(`{"config":{}}`), []byte(`{"messages":[]}`))
		ae := apierr.From(err)
		want := string(abi.AppendFieldString(abi.AppendFieldString(nil, `{"config":{}}`), `{"messages":[]}`))
		if ae.Status != http.StatusBadGateway || ae.Message != "module x@1.0.0 failed in pre_request: "+want {
			t.Fatalf("got %d %q", ae.Status, ae.Message)
		}
	}
	// A failure the guest reported is not a trap: its instance is reused.
	if mod.Live() != 1 {
		t.Fatalf("%d live instances after reported failures, want 1", mod.Live())
	}
	// A hook the host calls but the module did not declare.
	if _, err := mod.Call(context.Background(), abi.HookPostResponse, nil, nil); err == nil {
		t.Fatal("an undeclared hook succeeded")
	}

	// No output at all, and a non-zero return code without an error.
	for _, tc := range []struct {
		body []byte
		want string
	}{
		{i32const(0), "returned no output"},
		{i32const(7), "returned code 7"},
	} {
		mod, err := e.Load(context.Background(), extismManifest(t, ""), module(nil, []fn{preRequest(tc.body)}, 1))
		if err != nil {
			t.Fatal(err)
		}
		_, err = mod.Call(context.Background(), abi.HookPreRequest, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("got %v, want %q", err, tc.want)
		}
		if mod.Live() != 1 {
			t.Fatalf("%d live instances, want 1", mod.Live())
		}
		if err := mod.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := mod.Call(context.Background(), abi.HookPreRequest, nil, nil); err == nil || !strings.Contains(err.Error(), "unloaded") {
			t.Fatalf("call after Close: %v", err)
		}
	}
}

func TestExtismFailuresAreContained(t *testing.T) {
	e := engine(t)
	cases := []struct {
		name  string
		body  []byte
		limit string
		want  string
	}{
		{"trap", unreachable, "", "trapped"},
		{"infinite loop", loopForever, `"limits":{"timeout_ms":50},`, "time limit of 50 ms"},
		// An instruction the preemption rewrite does not know (SIMD): the
		// module runs as written, under wazero's check.
		{"infinite loop, not rewritten", loopForeverSIMD, `"limits":{"timeout_ms":50},`, "time limit of 50 ms"},
		{"memory bomb", growForever, `"limits":{"timeout_ms":200},`, "failed in pre_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := manifest.Parse([]byte(`{"name":"bad","version":"1.0.0","abi":1,"kind":"plugin","runtime":"extism","hooks":["pre_request"],` + tc.limit + `"grants":{}}`))
			if err != nil {
				t.Fatal(err)
			}
			m.Limits.MemoryPages = 16
			m.Limits.PoolSize = 2
			mod, err := e.Load(context.Background(), m, module(nil, []fn{preRequest(tc.body, i32const(0))}, 1))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second call runs on a fresh instance
				start := time.Now()
				_, err = mod.Call(context.Background(), abi.HookPreRequest, []byte("{}"), []byte("{}"))
				ae := apierr.From(err)
				if err == nil || ae.Status != http.StatusBadGateway || !strings.Contains(ae.Message, tc.want) {
					t.Fatalf("got %v, want 502 mentioning %q", err, tc.want)
				}
				if time.Since(start) > 10*time.Second {
					t.Fatal("the call was not interrupted")
				}
				if mod.Live() != 0 {
					t.Fatalf("the broken instance was kept: %d live", mod.Live())
				}
			}
		})
	}
}

// syncBuffer is a log sink safe for the host's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestExtismLog(t *testing.T) {
	var buf syncBuffer
	e := wasm.NewEngine(wasm.Config{Log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	// log(2 = warn, the input block), then report the input as the error.
	bin := module([]imp{impInputOffset, impErrorSet, impUserLog},
		[]fn{preRequest(i32const(2), callImport(0), callImport(2), callImport(0), callImport(1), i32const(1))}, 1)
	mod, err := e.Load(context.Background(), extismManifest(t, `"grants":{"host_functions":["log"]},`), bin)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = mod.Call(context.Background(), abi.HookPreRequest, []byte("hello from the guest"))
	if got := buf.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "hello from the guest") || !strings.Contains(got, "module=x@1.0.0") {
		t.Fatalf("log line missing: %q", got)
	}
}

func TestExtismEngineClose(t *testing.T) {
	dir := t.TempDir()
	e := wasm.NewEngine(wasm.Config{CacheDir: dir})
	mod, err := e.Load(context.Background(), extismManifest(t, ""), extismEchoAsError)
	if err != nil {
		t.Fatal(err)
	}
	// A second engine on the same cache directory loads from the cache.
	e2 := wasm.NewEngine(wasm.Config{CacheDir: dir})
	if _, err := e2.Load(context.Background(), extismManifest(t, ""), extismEchoAsError); err != nil {
		t.Fatal(err)
	}
	_ = e2.Close(context.Background())
	mod.Retain()
	mod.Retire()
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mod.Release() // closes the module after the engine did: no panic, no error
	if _, err := e.Load(context.Background(), extismManifest(t, ""), extismEchoAsError); err == nil || !strings.Contains(err.Error(), "engine is closed") {
		t.Fatalf("load after Close: %v", err)
	}
}
