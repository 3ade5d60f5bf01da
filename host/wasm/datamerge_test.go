package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"testing"

	"github.com/switchyard/switchyard/abi/manifest"
)

// The merged binary instantiates to the same memory as the original, with
// far fewer data segments.
func TestMergeDataKeepsMemory(t *testing.T) {
	bin, err := os.ReadFile("../../build/testdata/testplugin.wasm")
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	merged := mergeData(bin)
	before, after := segments(t, bin), segments(t, merged)
	t.Logf("data segments: %d before, %d after", before, after)
	if after*10 > before {
		t.Fatalf("data segments: %d before, %d after", before, after)
	}
	e := NewEngine("", nil)
	defer e.Close(context.Background())
	memOf := func(b []byte) []byte {
		m, err := manifest.Parse([]byte(`{"name":"t","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":{"host_functions":["http","log","chat"],"http_domains":["x"]},"limits":{"timeout_ms":1000}}`))
		if err != nil {
			t.Fatal(err)
		}
		mod, err := e.Load(context.Background(), m, b)
		if err != nil {
			t.Fatal(err)
		}
		defer mod.Close(context.Background())
		in := <-mod.pool
		defer func() { mod.pool <- in }()
		v, _ := in.mem.Read(0, in.mem.Size())
		return append([]byte(nil), v...)
	}
	if a, b := memOf(bin), memOf(merged); !bytes.Equal(a, b) {
		t.Fatalf("memory after instantiation differs (%d vs %d bytes)", len(a), len(b))
	}
	// Not rewritten when segments could be named by index.
	withCount := append(append([]byte(nil), bin[:8]...), 12, 1, 0)
	withCount = append(withCount, bin[8:]...)
	if got := mergeData(withCount); !bytes.Equal(got, withCount) {
		t.Fatal("a module with a DataCount section was rewritten")
	}
}

func segments(t *testing.T, bin []byte) int {
	for i := 8; i < len(bin); {
		n, w := binary.Uvarint(bin[i+1:])
		if bin[i] == 11 {
			s, err := parseData(bin[i+1+w : i+1+w+int(n)])
			if err != nil {
				t.Fatal(err)
			}
			return len(s)
		}
		i += 1 + w + int(n)
	}
	return 0
}
