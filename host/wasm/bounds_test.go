package wasm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi/manifest"
)

// TestHugeDeclarationRefusedBeforeWazero: the 20-byte module declaring a
// type of 2^32 parameters is refused as a load error by every way a
// binary reaches wazero; before the check, wazero allocated 32 GiB for it
// and the process died (what a tenant could publish).
func TestHugeDeclarationRefusedBeforeWazero(t *testing.T) {
	evil := []byte("\x00asm\x01\x00\x00\x00\x01\x08\x01\x60\xff\xff\xff\xff\x0f\x00") // 2^32-1 parameters
	m := &manifest.Manifest{Name: "evil", Version: "1.0.0", Kind: manifest.KindPlugin, Hooks: []string{"pre_request"},
		Limits: manifest.Limits{MemoryPages: 16, TimeoutMS: 100, PoolSize: 1}}
	var le *LoadError
	if err := ValidateNative(context.Background(), m, evil); !errors.As(err, &le) || !strings.Contains(err.Error(), "declares more items") {
		t.Fatalf("ValidateNative: %v", err)
	}
	e := NewEngine(Config{})
	defer e.Close(context.Background())
	for _, rt := range []string{manifest.RuntimeNative, manifest.RuntimeExtism} {
		mm := *m
		mm.Runtime = rt
		if _, err := e.Load(context.Background(), &mm, evil); !errors.As(err, &le) || !strings.Contains(err.Error(), "declares more items") {
			t.Fatalf("Load (%s): %v", rt, err)
		}
	}
}
