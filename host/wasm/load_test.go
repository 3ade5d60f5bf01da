package wasm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/wasm"
)

func mf(t *testing.T, extra string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(`{"name":"t","version":"1.0.0","abi":1,"kind":"adapter","hooks":["chat_request"],` + extra + `"grants":{"host_functions":["log"]},"limits":{"memory_pages":4,"pool_size":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func engine(t *testing.T) *wasm.Engine { return engineWith(t, wasm.Config{}) }

// engineWith is an engine made with cfg, closed when the test ends.
func engineWith(t *testing.T, cfg wasm.Config) *wasm.Engine {
	e := wasm.NewEngine(cfg)
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

func TestLoadRefuses(t *testing.T) {
	logImport := []imp{{module: "switchyard", name: "log", params: []byte{i32, i32, i32}}}
	cases := []struct {
		name     string
		bin      []byte
		manifest string
		want     string
	}{
		{"not wasm", []byte("hello"), "", "does not compile"},
		{"other ABI version", module(nil, abiFuncs("switchyard_abi_v2", nil), 1), "", "ABI version 2 is not supported"},
		{"no marker", module(nil, abiFuncs("something_else", nil), 1), "", "missing export switchyard_abi_v1"},
		{"no sy_handle", module(nil, abiFuncs("switchyard_abi_v1", nil)[:2], 1), "", "missing export sy_handle"},
		{"no memory", module(nil, abiFuncs("switchyard_abi_v1", nil), 0), "", "missing export memory"},
		{"wrong signature", module(nil, []fn{{export: "switchyard_abi_v1"}, {export: "sy_input", params: []byte{i32}, results: []byte{i32}, body: i32const1024},
			{export: "sy_handle", params: []byte{i32}, results: []byte{i64}, body: i64OutOK}}, 1), "", "signature"},
		{"ungranted host function", module([]imp{{module: "switchyard", name: "http_fetch", params: []byte{i32}}}, abiFuncs("switchyard_abi_v1", nil), 1), "", "unknown host function"},
		{"unknown import module", module([]imp{{module: "env", name: "abort"}}, abiFuncs("switchyard_abi_v1", nil), 1), "", "env.abort"},
		{"extism module", module([]imp{{module: "extism:host/env", name: "input_length", results: []byte{i64}}}, abiFuncs("switchyard_abi_v1", nil), 1), "", "Extism module"},
		{"memory over the cap", module(nil, abiFuncs("switchyard_abi_v1", nil), 64), "", "over limit of 4 pages"},
	}
	e := engine(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Load(context.Background(), mf(t, tc.manifest), tc.bin)
			var le *wasm.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("want a LoadError, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "t@1.0.0") {
				t.Fatalf("error %q should name the module and say %q", err, tc.want)
			}
		})
	}
	// A log import is fine when granted, refused when not.
	m := mf(t, "")
	if _, err := e.Load(context.Background(), m, module(logImport, abiFuncs("switchyard_abi_v1", nil), 1)); err != nil {
		t.Fatalf("granted log import refused: %v", err)
	}
	m.Grants.HostFunctions = nil
	if _, err := e.Load(context.Background(), m, module(logImport, abiFuncs("switchyard_abi_v1", nil), 1)); err == nil || !strings.Contains(err.Error(), "does not grant") {
		t.Fatalf("ungranted log import: %v", err)
	}
	// Outbound HTTP is a grant of its own.
	httpImport := []imp{{module: "switchyard", name: "http_request", params: []byte{i32, i32}, results: []byte{i64}}}
	m.Grants.HostFunctions = []string{"log"}
	if _, err := e.Load(context.Background(), m, module(httpImport, abiFuncs("switchyard_abi_v1", nil), 1)); err == nil || !strings.Contains(err.Error(), "http_request which its manifest does not grant") {
		t.Fatalf("ungranted http import: %v", err)
	}
	m.Grants.HostFunctions = []string{"http"}
	if _, err := e.Load(context.Background(), m, module(httpImport, abiFuncs("switchyard_abi_v1", nil), 1)); err != nil {
		t.Fatalf("granted http import refused: %v", err)
	}
}

func TestCallFailuresAreContained(t *testing.T) {
	e := engine(t)
	cases := []struct {
		name   string
		prefix []byte
		limit  string
		want   string
	}{
		{"trap", unreachable, "", "trapped"},
		{"infinite loop", loopForever, `"limits":{"timeout_ms":50},`, "time limit of 50 ms"},
		{"memory bomb", growForever, `"limits":{"timeout_ms":200},`, "failed in chat_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := manifest.Parse([]byte(`{"name":"bad","version":"1.0.0","abi":1,"kind":"adapter","hooks":["chat_request"],` + tc.limit + `"grants":{}}`))
			if err != nil {
				t.Fatal(err)
			}
			m.Limits.MemoryPages = 16
			mod, err := e.Load(context.Background(), m, module(nil, abiFuncs("switchyard_abi_v1", tc.prefix), 1))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = mod.Call(context.Background(), abi.HookChatRequest, []byte("{}"), []byte("{}"))
			if err == nil {
				t.Fatal("a hostile call succeeded")
			}
			ae := apierr.From(err)
			if ae.Status != http.StatusBadGateway || !strings.Contains(ae.Message, tc.want) {
				t.Fatalf("got %d %q, want 502 mentioning %q", ae.Status, ae.Message, tc.want)
			}
			if time.Since(start) > 10*time.Second {
				t.Fatal("the call was not interrupted")
			}
			// The broken instance was discarded; the module still serves
			// calls with fresh instances (and fails them the same way).
			if mod.Live() > m.Limits.PoolSize {
				t.Fatalf("%d live instances over a pool of %d", mod.Live(), m.Limits.PoolSize)
			}
		})
	}
}
