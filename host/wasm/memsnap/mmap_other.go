//go:build !linux && !darwin

package memsnap

import "github.com/tetratelabs/wazero/experimental"

// Allocator: wazero's own allocation on platforms without mmap here (nil).
var Allocator experimental.MemoryAllocator

// Memory is never allocated here (Allocator is wazero's); it exists so the
// callers' type assertions compile.
type Memory struct{ buf, view []byte }

func (m *Memory) Bytes() []byte                 { return m.buf }
func (m *Memory) Reallocate(size uint64) []byte { return nil }
func (m *Memory) Free()                         {}
