package rewrite

import (
	"bytes"
	"errors"
	"testing"
)

// A malformed binary is refused, whatever its counts say: a count near
// 2^64 in front of a short section must not make Preempt loop (or
// allocate) once per counted item, nor a section size past 2^63 make
// MergeData slice out of range. Each case is a module wazero refuses; the
// engine rewrites before it compiles, so these reach the rewrite.
func TestMalformedCountsRefused(t *testing.T) {
	huge := u(1 << 62)
	typeSec := sec(1, functype(nil, nil))
	funcSec := sec(3, u(0))
	for _, tc := range []struct {
		name string
		bin  []byte
	}{
		{"import count", wasmModule(typeSec, rawSec(2, huge))},
		{"export count", wasmModule(typeSec, funcSec, rawSec(7, huge), sec(10, code(nil)))},
		{"local groups", wasmModule(typeSec, funcSec, sec(10, cat(u(uint64(len(huge))), huge)))},
		{"section size", cat(wasmModule(), []byte{11}, u(1<<64-1))},
		{"data segment count", wasmModule(sec(5, []byte{0, 1}), rawSec(11, huge))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := compiles(tc.bin); err == nil {
				t.Fatal("wazero accepts the test's module: it is not malformed")
			}
			orig := bytes.Clone(tc.bin)
			if got := MergeData(tc.bin); !bytes.Equal(got, orig) {
				t.Errorf("MergeData changed a module it does not understand")
			}
			if _, _, err := Preempt(tc.bin); !errors.Is(err, ErrUnsupported) {
				t.Errorf("Preempt: %v, want ErrUnsupported", err)
			}
		})
	}
}
