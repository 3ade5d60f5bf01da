//go:build !linux

package memsnap

import "errors"

// Without memory files (Linux's memfd), a memory is not snapshotted: the
// caller makes an instance per call (host/wasm/snapshot.go).

func snapshotMemory([]byte, int, *ownPages) ([]byte, error) { return nil, errors.ErrUnsupported }

func resetMemory(_, _ []byte, _ *ownPages) (Way, error) {
	return Dropped, errors.ErrUnsupported
}

func (*ownPages) beforeCall() {}
