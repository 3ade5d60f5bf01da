package wasm_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm"
)

// counterModule is a minimal ABI module whose handle adds one to a mutable
// Wasm global and answers with one field, the global's value as a digit.
// extra is code run first in handle: an instruction the reset must notice.
// With table, the module has a table.
func counterModule(extra []byte, table bool) []byte {
	sec := func(id byte, body []byte) []byte {
		return append(binary.AppendUvarint([]byte{id}, uint64(len(body))), body...)
	}
	name, sleb := wasm.AppendName, wasm.AppendSLEB
	body := func(code ...byte) []byte {
		return append(binary.AppendUvarint(nil, uint64(len(code)+1)), append([]byte{0}, code...)...)
	}

	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, sec(1, []byte{3, 0x60, 1, 0x7f, 1, 0x7f, 0x60, 2, 0x7f, 0x7f, 1, 0x7e, 0x60, 0, 0})...)
	m = append(m, sec(3, []byte{3, 2, 0, 1})...)
	if table {
		m = append(m, sec(4, []byte{1, 0x70, 0, 1})...)
	}
	m = append(m, sec(5, []byte{1, 0, 1})...)
	m = append(m, sec(6, []byte{1, 0x7f, 1, 0x41, 0, 0x0b})...)
	exp := []byte{4}
	exp = append(name(exp, abi.ExportMarker), 0, 0)
	exp = append(name(exp, abi.ExportInput), 0, 1)
	exp = append(name(exp, abi.ExportHandle), 0, 2)
	exp = append(name(exp, abi.ExportMemory), 2, 0)
	m = append(m, sec(7, exp)...)
	handle := append([]byte{}, extra...)
	handle = append(handle,
		0x23, 0, 0x41, 1, 0x6a, 0x24, 0, // g++
		0x41, 0x80, 0x10, 0x41, abi.StatusOK, 0x3a, 0, 0, // mem[2048] = ok
		0x41, 0x81, 0x10, 0x41, 1, 0x36, 2, 0, // mem[2049:2053] = 1 (the field's length)
		0x41, 0x85, 0x10, 0x23, 0, 0x41, '0', 0x6a, 0x3a, 0, 0, // mem[2053] = '0'+g
		0x42) // i64.const 2048<<32 | 6
	handle = sleb(handle, 2048<<32|6)
	handle = append(handle, 0x0b)
	code := []byte{3}
	code = append(code, body(0x0b)...)
	code = append(code, body(0x41, 0x80, 0x08, 0x0b)...) // input: the frame goes at 1024
	code = append(code, body(handle...)...)
	m = append(m, sec(10, code)...)
	return m
}

// A tenant's instance is put back as it was after start once a call ends,
// and kept for the next call, when the module's whole state can be put
// back: its memory (the Go guest keeps the last prompt in a Go variable)
// and its mutable globals (the counter module). A module that changes a
// table, or a call that grew the memory, gets an instance per call. Every
// call must see only its own request, whichever way it was served.
func TestTenantInstanceResetAfterEachCall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("instances are reset on Linux only (memory files); elsewhere every call gets a fresh one")
	}
	cases := []struct {
		name string
		bin  func(t *testing.T) []byte
		mode string // the test plugin's mode; "" for the counter module
		kept bool   // an instance is kept between calls
	}{
		{"go guest, memory", testPluginBinary, "remember", true},
		{"wasm global", func(*testing.T) []byte { return counterModule(nil, false) }, "", true},
		{"table.set: not reset", func(*testing.T) []byte {
			return counterModule([]byte{0x41, 0, 0xd0, 0x70, 0x26, 0}, true) // table[0] = null
		}, "", false},
		{"memory grown", func(*testing.T) []byte {
			// if memory.grow(1) != 1 (the size at start) { unreachable }
			return counterModule([]byte{0x41, 1, 0x40, 0, 0x41, 1, 0x47, 0x04, 0x40, 0x00, 0x0b}, false)
		}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := wasm.NewEngine(wasm.Config{Tenants: wasm.TenantLimits{TimeoutMS: 1000, MemoryPages: 1024}})
			t.Cleanup(func() { _ = e.Close(context.Background()) })
			m, err := manifest.Parse([]byte(`{"name":"t","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":{"host_functions":["http","log","chat"],"http_domains":["127.0.0.1"]}}`))
			if err != nil {
				t.Fatal(err)
			}
			mod, err := e.LoadTenant(context.Background(), "acct_a", m, tc.bin(t))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				prompt := fmt.Sprintf("secret number %d", i)
				cfg := fmt.Sprintf(`{"config":{"mode":%q}}`, tc.mode)
				out, err := mod.Call(context.Background(), abi.HookPreRequest, []byte(cfg),
					[]byte(`{"model":"m","messages":[{"role":"user","content":"`+prompt+`"}]}`))
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if tc.mode == "" {
					if got := string(out.Field(0)); got != "1" {
						t.Fatalf("call %d: the global counted %s calls, want 1: state of an earlier call survived", i, got)
					}
				} else if got := string(out.Field(1)); !strings.Contains(got, `"previous prompt: "`) {
					t.Fatalf("call %d read an earlier call's prompt: %s", i, got)
				}
				if live, want := mod.Live(), map[bool]int{true: 1, false: 0}[tc.kept]; live != want {
					t.Fatalf("after call %d: %d instances alive, want %d", i, live, want)
				}
			}
			// Each kept call's reset is counted once, whichever way it
			// found the pages (the first walks: the call faulted them in).
			var resets uint64
			for _, n := range e.Resets() {
				resets += n
			}
			if want := map[bool]uint64{true: 4, false: 0}[tc.kept]; resets != want || (tc.kept && e.Resets()["page_walk"] == 0) {
				t.Fatalf("resets counted %v, want %d in all, at least one walking the page tables", e.Resets(), want)
			}
		})
	}
}

// A kept instance's memory file is mapped twice (its memory, and the view
// a reset copies from); both go when the module closes, or its engine.
func TestTenantInstanceMappingsFreed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("instances are reset on Linux only")
	}
	mappings := func() int {
		b, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "switchyard-instance")
	}
	for _, closeModule := range []bool{true, false} {
		before := mappings()
		e := wasm.NewEngine(wasm.Config{Tenants: wasm.TenantLimits{TimeoutMS: 1000}})
		m, err := manifest.Parse([]byte(`{"name":"t","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":{"host_functions":["http","log","chat"],"http_domains":["127.0.0.1"]}}`))
		if err != nil {
			t.Fatal(err)
		}
		mod, err := e.LoadTenant(context.Background(), "acct_a", m, testPluginBinary(t))
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := mod.Call(context.Background(), abi.HookPreRequest, []byte(`{}`), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		if got := mappings() - before; got != 2 {
			t.Fatalf("one kept instance: %d mappings of its memory file, want 2", got)
		}
		if closeModule {
			_ = mod.Close(context.Background())
		}
		_ = e.Close(context.Background())
		if got := mappings() - before; got != 0 {
			t.Fatalf("closed (module closed first: %v): %d mappings left", closeModule, got)
		}
	}
}

// An account's modules each keep a warm instance while their memory fits
// the account's idle budget (TenantLimits.IdleBytes). Until 2026-11-29
// the budget was ConcurrentCalls instances across all of an account's
// modules: with one slot, two plugins called in turn kept one instance
// between them, and the other was instantiated on every call.
func TestTenantIdleBudgetCountsMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("instances are reset on Linux only")
	}
	m, err := manifest.Parse([]byte(`{"name":"t","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		idleBytes int64
		live      [2]int // instances each module keeps after its calls
	}{
		{"default budget: both kept", 0, [2]int{1, 1}},
		{"room for one 64 KiB memory", 64 << 10, [2]int{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := wasm.NewEngine(wasm.Config{Tenants: wasm.TenantLimits{TimeoutMS: 1000, MemoryPages: 16, ConcurrentCalls: 1, IdleBytes: tc.idleBytes}})
			t.Cleanup(func() { _ = e.Close(context.Background()) })
			var mods [2]*wasm.Module
			for i := range mods {
				if mods[i], err = e.LoadTenant(context.Background(), "acct_a", m, counterModule(nil, false)); err != nil {
					t.Fatal(err)
				}
			}
			for round := range 3 {
				for i, mod := range mods {
					if _, err := mod.Call(context.Background(), abi.HookPreRequest, []byte(`{}`), []byte(`{}`)); err != nil {
						t.Fatalf("round %d, module %d: %v", round, i, err)
					}
				}
			}
			for i, mod := range mods {
				if got := mod.Live(); got != tc.live[i] {
					t.Errorf("module %d keeps %d instances, want %d", i, got, tc.live[i])
				}
			}
		})
	}
}
