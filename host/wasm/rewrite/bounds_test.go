package rewrite

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// module is a WebAssembly 1 binary of the given sections (id, contents).
func module(secs ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range secs {
		out = append(out, s[0])
		out = binary.AppendUvarint(out, uint64(len(s)-1))
		out = append(out, s[1:]...)
	}
	return out
}

func uv(n uint64) []byte { return u(n) }

// TestCheckCountsRefusesHugeDeclarations: a count no section could hold
// is refused before wazero reads it (a type of 2^32 parameters, 20 bytes,
// had wazero allocate 32 GiB and the process die); modules that hold what
// they declare pass.
func TestCheckCountsRefusesHugeDeclarations(t *testing.T) {
	tests := []struct {
		name string
		bin  []byte
		bad  bool
	}{
		{"2^32 parameters", module(cat([]byte{1}, uv(1), []byte{0x60}, uv(1<<32), uv(0))), true},
		{"2^32 results", module(cat([]byte{1}, uv(1), []byte{0x60, 0}, uv(1<<32))), true},
		{"2^30 types", module(cat([]byte{1}, uv(1<<30), []byte{0x60, 0, 0})), true},
		{"2^32 imports", module(cat([]byte{2}, uv(1<<32))), true},
		{"2^32 functions", module(cat([]byte{3}, uv(1<<32), []byte{0})), true},
		{"2^32 exports", module(cat([]byte{7}, uv(1<<32))), true},
		{"2^32 data segments", module(cat([]byte{11}, uv(1<<32))), true},
		{"data count 2^32", module(cat([]byte{12}, uv(1<<32))), true},
		{"2^32 locals", module(cat([]byte{10}, uv(1), uv(8), uv(1), uv(1<<32), []byte{0x7f, 0x0b})), true},
		{"locals over the limit in groups", module(cat([]byte{10}, uv(1), uv(9), uv(2), uv(30_000), []byte{0x7f}, uv(30_000), []byte{0x7f}, []byte{0x0b})), true},
		{"2^32 function names", module(cat([]byte{0}, uv(4), []byte("name"), []byte{1}, uv(5), uv(1<<32))), true},
		{"2^32 local names", module(cat([]byte{0}, uv(4), []byte("name"), []byte{2}, uv(7), uv(1), uv(0), uv(1<<32))), true},
		{"a type of two parameters", module(cat([]byte{1}, uv(1), []byte{0x60, 2, 0x7f, 0x7f, 1, 0x7f})), false},
		{"a function of 100 locals", module(cat([]byte{10}, uv(1), uv(4), uv(1), uv(100), []byte{0x7f, 0x0b})), false},
		{"not a module", []byte("not wasm"), false}, // wazero's to refuse
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCounts(tt.bin)
			if tt.bad != (err != nil) || (err != nil && !errors.Is(err, ErrCounts)) {
				t.Fatalf("CheckCounts = %v, want refused %v", err, tt.bad)
			}
		})
	}
}

// TestCheckCountsPassesBuiltModules: every module the build makes (first
// party, test guests, examples in any language) passes.
func TestCheckCountsPassesBuiltModules(t *testing.T) {
	root, _ := filepath.Abs("../../..")
	var n int
	for _, pattern := range []string{"build/wasm/*.wasm", "build/testdata/*.wasm", "build/examples/*/*.wasm", "build/examples/*.wasm"} {
		files, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, f := range files {
			bin, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckCounts(bin); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			n++
		}
	}
	if n == 0 {
		t.Skip("no built modules (run make wasm)")
	}
	t.Logf("%d built modules pass", n)
}

func FuzzCheckCounts(f *testing.F) {
	f.Add(module(cat([]byte{1}, uv(1), []byte{0x60}, uv(1<<32), uv(0))))
	f.Add(module(cat([]byte{10}, uv(1), uv(4), uv(1), uv(100), []byte{0x7f, 0x0b})))
	f.Fuzz(func(t *testing.T, bin []byte) {
		_ = CheckCounts(bin) // must not panic or hang
	})
}
