//go:build !linux

package wasm

import (
	"context"
	"errors"

	"github.com/tetratelabs/wazero/experimental"
)

// instantiateResettable: without memory files (Linux's memfd), a tenant's
// instance serves one call (snapshot.go).
func (m *Module) instantiateResettable(ctx context.Context) (*instance, error) {
	return m.instantiate(experimental.WithMemoryAllocator(ctx, mmapAllocator))
}

func snapshotMemory([]byte, int, *ownPages) ([]byte, error) { return nil, errors.ErrUnsupported }

func resetMemory(_, _ []byte, _ *ownPages) (resetWay, error) {
	return resetDropped, errors.ErrUnsupported
}

func (*ownPages) beforeCall() {}
