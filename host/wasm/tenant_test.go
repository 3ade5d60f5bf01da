package wasm_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm"
)

func TestTenantClamp(t *testing.T) {
	ceil := wasm.TenantLimits{TimeoutMS: 500, MemoryPages: 512, PoolSize: 4}
	cases := []struct {
		name     string
		in, want manifest.Limits
	}{
		{"no time limit gets the ceiling", manifest.Limits{TimeoutMS: 0, MemoryPages: 256, PoolSize: 2}, manifest.Limits{TimeoutMS: 500, MemoryPages: 256, PoolSize: 2}},
		{"everything over", manifest.Limits{TimeoutMS: 60_000, MemoryPages: 65536, PoolSize: 1024}, manifest.Limits{TimeoutMS: 500, MemoryPages: 512, PoolSize: 4}},
		{"under is kept", manifest.Limits{TimeoutMS: 20, MemoryPages: 128, PoolSize: 1}, manifest.Limits{TimeoutMS: 20, MemoryPages: 128, PoolSize: 1}},
		{"zero ceilings are the defaults", manifest.Limits{MemoryPages: 1 << 16, PoolSize: 1 << 10}, wasm.TenantLimits{}.Clamp(manifest.Limits{MemoryPages: wasm.DefaultTenantLimits().MemoryPages, PoolSize: wasm.DefaultTenantLimits().PoolSize})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ceil
			if strings.HasPrefix(tc.name, "zero") {
				c = wasm.TenantLimits{}
			}
			if got := c.Clamp(tc.in); got != tc.want {
				t.Fatalf("Clamp(%+v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

// BenchmarkPluginCall is the per-call cost of one pre_request hook on a 1 KB
// request: trusted and pooled without preemption (timeout_ms 0), trusted and
// pooled with it, and as a tenant's module (preemptible, every call from
// the instance's state after start — reset, snapshot.go — account slots and
// budget). The test plugin (a Go guest, `make
// wasm`) always; the three examples too when `make -C examples` built them.
func BenchmarkPluginCall(b *testing.B) {
	root := filepath.Join("..", "..")
	guests := []struct{ name, wasm, manifest string }{
		{"testplugin", filepath.Join(root, "build", "testdata", "testplugin.wasm"), `{"name":"testplugin","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":{"host_functions":["http","log","chat"],"http_domains":["127.0.0.1"]}}`},
	}
	for _, ex := range []string{"go-native-plugin", "c-native-plugin", "as-extism-plugin"} {
		w := filepath.Join(root, "build", "examples", ex+".wasm")
		if mj, err := os.ReadFile(filepath.Join(root, "build", "examples", ex+".json")); err == nil {
			guests = append(guests, struct{ name, wasm, manifest string }{ex, w, string(mj)})
		}
	}
	ctx := []byte(`{"config":{"id":"p","blocked":["forbidden"]},"model":"test/chat","scope":"account"}`)
	body := []byte(`{"model":"test/chat","messages":[{"role":"user","content":"` + strings.Repeat("x", 950) + `"}]}`)
	e := wasm.NewEngine(wasm.Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero"), Tenants: wasm.TenantLimits{CPUMsPerMinute: 1 << 40, ConcurrentCalls: 64, MemoryPages: 1024}})
	b.Cleanup(func() { _ = e.Close(context.Background()) })
	for _, g := range guests {
		bin, err := os.ReadFile(g.wasm)
		if err != nil {
			b.Fatalf("%v (run make wasm)", err)
		}
		for _, tc := range []struct {
			name    string
			timeout int
			tenant  bool
		}{
			{"trusted-pooled-no-preemption", 0, false},
			{"trusted-pooled-preemption", 1000, false},
			{"tenant-reset-preemption", 1000, true},
		} {
			b.Run(g.name+"/"+tc.name, func(b *testing.B) {
				m, err := manifest.Parse([]byte(g.manifest))
				if err != nil {
					b.Fatal(err)
				}
				m.Limits.TimeoutMS, m.Limits.PoolSize = tc.timeout, 4
				m.Limits.MemoryPages = max(m.Limits.MemoryPages, 256)
				var mod *wasm.Module
				if tc.tenant {
					mod, err = e.LoadTenant(context.Background(), "acct_bench", m, bin)
				} else {
					mod, err = e.Load(context.Background(), m, bin)
				}
				if err != nil {
					b.Fatal(err)
				}
				defer mod.Close(context.Background())
				b.ReportAllocs()
				for b.Loop() {
					if _, err := mod.Call(context.Background(), abi.HookPreRequest, ctx, body); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// Extism modules of a tenant get the same treatment: clamped limits (no
// time limit becomes the ceiling), an instance per call, and log lines
// tagged with the account.
func TestTenantExtism(t *testing.T) {
	var buf syncBuffer
	e := wasm.NewEngine(wasm.Config{Log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), Tenants: wasm.TenantLimits{TimeoutMS: 50}})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	bin := module([]imp{impInputOffset, impErrorSet, impUserLog},
		[]fn{preRequest(i32const(2), callImport(0), callImport(2), callImport(0), callImport(1), i32const(1))}, 1)
	mod, err := e.LoadTenant(context.Background(), "acct_ext", extismManifest(t, `"grants":{"host_functions":["log"]},`), bin)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, err = mod.Call(context.Background(), abi.HookPreRequest, []byte("hello from the guest"))
		if err == nil || !strings.Contains(err.Error(), "hello from the guest") {
			t.Fatalf("call: %v", err)
		}
		if mod.Live() != 0 {
			t.Fatalf("%d instances kept after a tenant's call", mod.Live())
		}
	}
	if got := buf.String(); !strings.Contains(got, "hello from the guest") || !strings.Contains(got, "account=acct_ext") {
		t.Fatalf("log line without its account: %q", got)
	}
	spin, err := e.LoadTenant(context.Background(), "acct_ext", extismManifest(t, ""), module(nil, []fn{preRequest(loopForever, i32const(0))}, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spin.Call(context.Background(), abi.HookPreRequest, nil, nil); err == nil || !strings.Contains(err.Error(), "time limit of 50 ms") {
		t.Fatalf("spinning tenant Extism module: %v", err)
	}
}

// testPluginBinary is the test plugin (host/pipeline/testdata/testplugin).
func testPluginBinary(t *testing.T) []byte {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join("..", "..", "build", "testdata", "testplugin.wasm"))
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	return bin
}

// loadTestPlugin loads the test plugin (make wasm) with a time limit.
func loadTestPlugin(t *testing.T, e *wasm.Engine) *wasm.Module {
	t.Helper()
	bin := testPluginBinary(t)
	m, err := manifest.Parse([]byte(`{"name":"testplugin","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":{"host_functions":["http","log","chat"],"http_domains":["127.0.0.1"]},"limits":{"timeout_ms":1000}}`))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := e.Load(context.Background(), m, bin)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// Validations are remembered per process by module bytes and manifest: the
// same bytes under a manifest that grants less are still refused after
// they were accepted with the grants they need.
func TestValidateRemembersOnlyWhatWasValidated(t *testing.T) {
	bin, err := os.ReadFile(filepath.Join("..", "..", "build", "testdata", "testplugin.wasm"))
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	e := wasm.NewEngine(wasm.Config{})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	granted, err := manifest.Parse([]byte(`{"name":"testplugin","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":{"host_functions":["http","log","chat"],"http_domains":["127.0.0.1"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	stingy, err := manifest.Parse([]byte(`{"name":"testplugin","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":{"host_functions":["log","chat"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := e.Validate(context.Background(), granted, bin); err != nil {
			t.Fatalf("round %d, with its grants: %v", i, err)
		}
		if err := e.Validate(context.Background(), stingy, bin); err == nil || !strings.Contains(err.Error(), "http") {
			t.Fatalf("round %d, without the http grant: %v", i, err)
		}
	}
}
