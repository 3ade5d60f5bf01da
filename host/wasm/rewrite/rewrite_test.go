package rewrite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// call is one call of a differential test: an export and its arguments.
type call struct {
	fn   string
	args []uint64
}

// handModule is a hand-written module, the calls that exercise it (in
// order, on one instance) and the globals it exports.
type handModule struct {
	name    string
	bin     []byte
	calls   []call
	globals []string
}

// loops: loops counted down and nested, long enough to pass YieldEvery
// several times.
func loopsModule() handModule {
	sum := code([]byte{i32}, cat(
		[]byte{0x02, 0x40, 0x03, 0x40},                  // block loop
		[]byte{0x20, 0, 0x45, 0x0d, 1},                  // br_if 1 (n == 0)
		[]byte{0x20, 1, 0x20, 0, 0x6a, 0x21, 1},         // acc += n
		[]byte{0x20, 0}, i32c(1), []byte{0x6b, 0x21, 0}, // n--
		[]byte{0x0c, 0, 0x0b, 0x0b}, // br 0 end end
		[]byte{0x20, 1})...)
	inner := cat(
		[]byte{0x41, 0, 0x21, 4},
		[]byte{0x02, 0x40, 0x03, 0x40},
		[]byte{0x20, 4, 0x20, 1, 0x4f, 0x0d, 1}, // j >= b: out
		[]byte{0x20, 2}, i32c(1), []byte{0x6a, 0x21, 2},
		[]byte{0x20, 4}, i32c(1), []byte{0x6a, 0x21, 4},
		[]byte{0x0c, 0, 0x0b, 0x0b})
	mul := code([]byte{i32, i32, i32}, cat(
		[]byte{0x02, 0x40, 0x03, 0x40},
		[]byte{0x20, 3, 0x20, 0, 0x4f, 0x0d, 1}, // i >= a: out
		inner,
		[]byte{0x20, 3}, i32c(1), []byte{0x6a, 0x21, 3},
		[]byte{0x0c, 0, 0x0b, 0x0b},
		[]byte{0x20, 2})...)
	return handModule{
		name: "loops",
		bin: wasmModule(
			sec(1, functype([]byte{i32}, []byte{i32}), functype([]byte{i32, i32}, []byte{i32})),
			sec(3, u(0), u(1)),
			sec(7, export("sum", 0, 0), export("mul", 0, 1)),
			sec(10, sum, mul),
		),
		calls: []call{
			{"sum", []uint64{0}}, {"sum", []uint64{1}}, {"sum", []uint64{10}}, {"sum", []uint64{100_000}},
			{"mul", []uint64{0, 5}}, {"mul", []uint64{7, 9}}, {"mul", []uint64{300, 700}},
		},
	}
}

// memory: memory.size and memory.grow (which the rewrite replaces), up to
// and past the maximum, bulk memory, a data segment, and an access out of
// bounds.
func memoryModule() handModule {
	return handModule{
		name: "memory",
		bin: wasmModule(
			sec(1, functype([]byte{i32}, []byte{i32}), functype(nil, []byte{i32}), functype([]byte{i32, i32}, nil)),
			sec(3, u(0), u(1), u(2), u(0), u(2)),
			sec(5, []byte{1, 1, 4}), // min 1, max 4 pages
			sec(7, export("grow", 0, 0), export("size", 0, 1), export("store", 0, 2), export("load", 0, 3),
				export("fill", 0, 4), export("memory", 2, 0)),
			sec(10,
				code(nil, 0x20, 0, 0x40, 0),             // memory.grow
				code(nil, 0x3f, 0),                      // memory.size
				code(nil, 0x20, 0, 0x20, 1, 0x36, 2, 0), // i32.store
				code(nil, 0x20, 0, 0x28, 2, 0),          // i32.load
				code(nil, cat([]byte{0x20, 0}, i32c(0xab), []byte{0x20, 1, 0xfc, 11, 0})...), // memory.fill
			),
			sec(11, cat([]byte{0}, i32c(16), []byte{0x0b}, str("hello"))),
		),
		calls: []call{
			{"size", nil}, {"load", []uint64{16}}, {"grow", []uint64{1}}, {"size", nil},
			{"store", []uint64{65536 + 4, 42}}, {"load", []uint64{65536 + 4}}, {"fill", []uint64{100, 300}},
			{"grow", []uint64{10}}, {"grow", []uint64{0}}, {"grow", []uint64{2}}, {"size", nil}, {"grow", []uint64{1}},
			{"load", []uint64{4 << 16}}, // out of bounds: a trap
		},
	}
}

// calls: an imported function (indices move up by the rewrite's import),
// calls direct, indirect through a table and recursive, br_table,
// mutable globals, and a start function that loops.
func callsModule() handModule {
	inc := code(nil, cat([]byte{0x23, 0}, i32c(1), []byte{0x6a, 0x24, 0})...)
	dispatch := code(nil, cat(
		[]byte{0x10, 1},                // call inc
		[]byte{0x20, 0, 0x10, 0, 0x1a}, // drop (env.f n)
		[]byte{0x02, 0x40, 0x02, 0x40, 0x02, 0x40, 0x02, 0x40},
		[]byte{0x20, 0, 0x0e, 3, 0, 1, 2, 3, 0x0b}, // br_table 0 1 2 default 3
		i32c(10), []byte{0x0f, 0x0b},
		i32c(20), []byte{0x0f, 0x0b},
		i32c(30), []byte{0x0f, 0x0b},
		i32c(99))...)
	indirect := code(nil, cat([]byte{0x20, 0}, i32c(0), []byte{0x11, 0, 0})...)
	fact := code(nil, cat(
		[]byte{0x20, 0}, i32c(1), []byte{0x4c, 0x04, i32},
		i32c(1),
		[]byte{0x05, 0x20, 0, 0x20, 0}, i32c(1), []byte{0x6b, 0x10, 4, 0x6c},
		[]byte{0x0b})...)
	start := code([]byte{i32}, cat(
		[]byte{0x02, 0x40, 0x03, 0x40},
		[]byte{0x20, 0}, i32c(50_000), []byte{0x4f, 0x0d, 1},
		[]byte{0x23, 1}, i32c(1), []byte{0x6a, 0x24, 1},
		[]byte{0x20, 0}, i32c(1), []byte{0x6a, 0x21, 0},
		[]byte{0x0c, 0, 0x0b, 0x0b})...)
	return handModule{
		name: "calls",
		bin: wasmModule(
			sec(1, functype([]byte{i32}, []byte{i32}), functype(nil, nil)),
			sec(2, importFunc("env", "f", 0)),
			sec(3, u(1), u(0), u(0), u(0), u(1)),
			sec(4, []byte{0x70, 0, 2}), // funcref table, 2 entries
			sec(6, cat([]byte{i32, 1}, i32c(0), []byte{0x0b}), cat([]byte{i32, 1}, i32c(0), []byte{0x0b}),
				cat([]byte{i64, 0}, []byte{0x42, 7, 0x0b})),
			sec(7, export("dispatch", 0, 2), export("indirect", 0, 3), export("fact", 0, 4),
				export("g0", 3, 0), export("g1", 3, 1), export("g2", 3, 2)),
			rawSec(8, u(5)), // start
			sec(9, cat([]byte{0}, i32c(0), []byte{0x0b}, u(2), u(2), u(4))),
			sec(10, inc, dispatch, indirect, fact, start),
		),
		calls: []call{
			{"dispatch", []uint64{0}}, {"dispatch", []uint64{1}}, {"dispatch", []uint64{2}}, {"dispatch", []uint64{7}},
			{"indirect", []uint64{1}}, {"fact", []uint64{10}}, {"fact", []uint64{0}},
		},
		globals: []string{"g0", "g1", "g2"},
	}
}

// elemExprs: element segments of expressions (ref.func, which the rewrite
// shifts), passive and declarative ones, and table.get/ref.is_null.
func elemExprsModule() handModule {
	get := code(nil, 0x20, 0, 0x25, 0, 0xd1) // ref.is_null (table.get 0 n)
	indirect := code(nil, cat([]byte{0x20, 0}, i32c(1), []byte{0x11, 0, 0})...)
	double := code(nil, 0x20, 0, 0x20, 0, 0x6a)
	return handModule{
		name: "elem-exprs",
		bin: wasmModule(
			sec(1, functype([]byte{i32}, []byte{i32})),
			sec(3, u(0), u(0), u(0)),
			sec(4, []byte{0x70, 0, 3}),
			sec(7, export("isnull", 0, 0), export("indirect", 0, 1)),
			sec(9,
				cat([]byte{4}, i32c(1), []byte{0x0b}, u(1), []byte{0xd2, 2, 0x0b}), // active, table 0, exprs
				cat([]byte{5, 0x70}, u(1), []byte{0xd2, 0, 0x0b}),                  // passive
				cat([]byte{7, 0x70}, u(1), []byte{0xd2, 1, 0x0b}),                  // declarative
			),
			sec(10, get, indirect, double),
		),
		calls: []call{{"isnull", []uint64{0}}, {"isnull", []uint64{1}}, {"indirect", []uint64{21}}},
	}
}

func handModules() []handModule {
	return []handModule{loopsModule(), memoryModule(), callsModule(), elemExprsModule()}
}

// transcript runs the calls on one instance of bin and records what each
// returned (or the first line of its trap), then the exported globals and
// a digest of the memory.
func transcript(t *testing.T, bin []byte, calls []call, globals []string) []string {
	t.Helper()
	m, err := instantiate(t, bin, nil)
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	var out []string
	for _, c := range calls {
		res, err := m.ExportedFunction(c.fn).Call(context.Background(), c.args...)
		if err != nil {
			res = nil
			out = append(out, fmt.Sprintf("%s%v: trap %s", c.fn, c.args, strings.SplitN(err.Error(), "\n", 2)[0]))
			continue
		}
		out = append(out, fmt.Sprintf("%s%v = %v", c.fn, c.args, res))
	}
	for _, g := range globals {
		out = append(out, fmt.Sprintf("global %s = %d", g, m.ExportedGlobal(g).Get()))
	}
	if mem := m.ExportedMemory("memory"); mem != nil {
		b, _ := mem.Read(0, mem.Size())
		out = append(out, fmt.Sprintf("memory %d bytes, sha256 %x", len(b), sha256.Sum256(b)))
	}
	return out
}

// Preempt and MergeData keep a module's meaning: on every hand-written
// module, the rewritten binary returns what the original returns, call
// for call, traps where it traps, and leaves the same globals and memory.
func TestRewriteComputesAlike(t *testing.T) {
	for _, hm := range handModules() {
		t.Run(hm.name, func(t *testing.T) {
			want := transcript(t, hm.bin, hm.calls, hm.globals)
			pre, _, err := Preempt(hm.bin)
			if err != nil {
				t.Fatalf("Preempt: %v", err)
			}
			for _, v := range []struct {
				name string
				bin  []byte
			}{{"Preempt", pre}, {"MergeData", MergeData(hm.bin)}} {
				got := transcript(t, v.bin, hm.calls, hm.globals)
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s: the rewritten module computes\n%s\nthe original\n%s", v.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
		})
	}
}

// The same on the Go guests `make wasm` builds, as the engine rewrites
// them (MergeData, then Preempt): after _initialize, every hook is called
// on the same input, and the outputs, traps and memory must match.
func TestRewriteComputesAlikeBuiltModules(t *testing.T) {
	mods := builtModules(t)
	cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(os.TempDir(), "switchyard-test-rewrite-cache"))
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close(context.Background())
	cfg := wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache)
	for name, bin := range mods {
		t.Run(name, func(t *testing.T) {
			rw, _, err := Preempt(MergeData(bin))
			if err != nil {
				t.Fatalf("Preempt: %v", err)
			}
			want, got := hookTranscript(t, bin, cfg), hookTranscript(t, rw, cfg)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("the rewritten module computes\n%s\nthe original\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// hookTranscript calls every hook of an ABI v1 module once, with a context
// and a chat body as its two input fields.
func hookTranscript(t *testing.T, bin []byte, cfg wazero.RuntimeConfig) []string {
	t.Helper()
	m, err := instantiate(t, bin, cfg, abi.ExportInit)
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	input, handle := m.ExportedFunction(abi.ExportInput), m.ExportedFunction(abi.ExportHandle)
	if input == nil || handle == nil {
		t.Skip("not an ABI v1 module")
	}
	fields := [][]byte{[]byte(`{}`), []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`)}
	frame := abi.AppendField(abi.AppendField(nil, fields[0]), fields[1])
	var out []string
	ctx := context.Background()
	for hook := abi.HookChatRequest; hook <= abi.HookToolCall; hook++ {
		out = append(out, callHook(ctx, m, input, handle, hook, frame))
	}
	b, _ := m.Memory().Read(0, m.Memory().Size())
	return append(out, fmt.Sprintf("memory %d bytes, sha256 %x", len(b), sha256.Sum256(b)))
}

func callHook(ctx context.Context, m api.Module, input, handle api.Function, hook abi.Hook, frame []byte) string {
	res, err := input.Call(ctx, uint64(len(frame)))
	if err != nil {
		return fmt.Sprintf("%s: input trap %s", hook, strings.SplitN(err.Error(), "\n", 2)[0])
	}
	if !m.Memory().Write(uint32(res[0]), frame) {
		return fmt.Sprintf("%s: input outside memory", hook)
	}
	res, err = handle.Call(ctx, uint64(hook), uint64(len(frame)))
	if err != nil {
		return fmt.Sprintf("%s: trap %s", hook, strings.SplitN(err.Error(), "\n", 2)[0])
	}
	view, ok := m.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	if !ok {
		return fmt.Sprintf("%s: output outside memory", hook)
	}
	return fmt.Sprintf("%s: %q", hook, view)
}

// compiles reports whether wazero (interpreter: the same validation as
// the compiler, compiled faster) accepts bin.
func compiles(bin []byte) error {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	c, err := rt.CompileModule(ctx, bin)
	if err == nil {
		_ = c.Close(ctx)
	}
	return err
}

// exportsStateName reports whether bin exports a name of the rewrite's
// (StateGlobalPrefix): the one case in which a rewritten module does not
// validate (duplicate export) and the engine falls back to wazero's check.
func exportsStateName(bin []byte) bool {
	return bytes.Contains(bin, []byte(StateGlobalPrefix))
}

// boundedCounts reports whether every LEB128 in bin could be under 2^21:
// no run of three bytes with the continuation bit. wazero's decoder
// allocates for a vector's declared count before reading its items (a
// function type of 2^32 parameters is a 32 GiB allocation, and the
// process dies), so the fuzz target hands wazero only inputs whose counts
// cost it at most a few hundred MiB. Preempt and MergeData still see every
// input.
func boundedCounts(bin []byte) bool {
	run := 0
	for _, b := range bin {
		if b&0x80 == 0 {
			run = 0
		} else if run++; run >= 3 {
			return false
		}
	}
	return true
}

// FuzzRewrite: Preempt and MergeData never panic, leave their input
// alone, and turn a module wazero accepts into one it accepts; Preempt's
// state names are mutable globals the rewritten module exports.
func FuzzRewrite(f *testing.F) {
	for _, hm := range handModules() {
		f.Add(hm.bin)
	}
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, bin []byte) {
		orig := bytes.Clone(bin)
		merged := MergeData(bin)
		pre, state, perr := Preempt(bin)
		if !bytes.Equal(bin, orig) {
			t.Fatal("the input was modified")
		}
		if perr != nil && !errors.Is(perr, ErrUnsupported) {
			t.Fatalf("Preempt: %v, want ErrUnsupported", perr)
		}
		if !boundedCounts(bin) || compiles(bin) != nil {
			return
		}
		if err := compiles(merged); err != nil {
			t.Fatalf("MergeData made a valid module invalid: %v", err)
		}
		if perr != nil || exportsStateName(bin) {
			return
		}
		if err := compiles(pre); err != nil {
			t.Fatalf("Preempt made a valid module invalid: %v", err)
		}
		if state != nil {
			checkState(t, pre, state)
		}
	})
}

// checkState checks that every name in state is a global bin exports.
func checkState(t *testing.T, bin []byte, state []string) {
	t.Helper()
	secs, err := sections(bin)
	if err != nil {
		t.Fatal(err)
	}
	globals := map[string]bool{}
	for _, s := range secs {
		if s.id != 7 {
			continue
		}
		r := reader{b: s.body}
		for n := r.u(); n > 0 && r.err == nil; n-- {
			name := string(r.name())
			if r.byte() == 3 {
				globals[name] = true
			}
			r.u()
		}
	}
	for _, name := range state {
		if !globals[name] {
			t.Fatalf("state names %s, which the rewritten module does not export as a global", name)
		}
	}
}
