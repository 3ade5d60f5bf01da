package wasm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/abi/conformance"
	"github.com/switchyard/switchyard/host/wasm/kithost"
)

// TestConformance runs the ABI conformance kit against this host.
func TestConformance(t *testing.T) {
	guest, err := os.ReadFile(filepath.Join("..", "..", "build", "testdata", "conformance.wasm"))
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	h, err := kithost.New(filepath.Join(os.TempDir(), "switchyard-test-wazero-cache"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	conformance.Run(t, h, guest)
}
