package rewrite

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
)

// The merged binary instantiates to the same memory as the original, with
// far fewer data segments.
func TestMergeDataKeepsMemory(t *testing.T) {
	bin, err := os.ReadFile("../../../build/testdata/testplugin.wasm")
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	merged := MergeData(bin)
	before, after := segments(t, bin), segments(t, merged)
	t.Logf("data segments: %d before, %d after", before, after)
	if after*10 > before {
		t.Fatalf("data segments: %d before, %d after", before, after)
	}
	// The memory as the data segments leave it: no start function runs,
	// so nothing but the segments wrote it.
	memOf := func(b []byte) []byte {
		m, err := instantiate(t, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := m.Memory().Read(0, m.Memory().Size())
		return append([]byte(nil), v...)
	}
	if a, b := memOf(bin), memOf(merged); !bytes.Equal(a, b) {
		t.Fatalf("memory after instantiation differs (%d vs %d bytes)", len(a), len(b))
	}
	// Not rewritten when segments could be named by index.
	withCount := append(append([]byte(nil), bin[:8]...), 12, 1, 0)
	withCount = append(withCount, bin[8:]...)
	if got := MergeData(withCount); !bytes.Equal(got, withCount) {
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
