//go:build linux || darwin

package memsnap

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// Memory backs a tenant instance's linear memory with an anonymous
// mapping of its maximum size, so growing never copies (wazero's default
// grows a Go slice, and a Go guest grows its memory many times while it
// initialises: a third of the cost of a fresh instance) and pages are
// committed only when touched. Freeing unmaps it. host/wasm uses it for
// tenants' instances (Module.callTenant), whose memory Take then maps anew.
type Memory struct {
	buf []byte
	// view is a read-only mapping of the memory file Take maps buf from,
	// if it did: freed with the memory, however the instance closes
	// (its runtime closing with it included).
	view []byte
}

// Bytes is the whole mapping (the memory's maximum size), nil once freed.
func (m *Memory) Bytes() []byte { return m.buf }

func (m *Memory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

func (m *Memory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
	if m.view != nil {
		_ = syscall.Munmap(m.view)
		m.view = nil
	}
}

// Allocator maps each memory; where mapping fails, the memory is a Go
// slice as wazero's own.
var Allocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil {
		return &sliceMemory{max: max}
	}
	return &Memory{buf: b}
})

// sliceMemory grows a Go slice, copying, as wazero does by default.
type sliceMemory struct {
	buf []byte
	max uint64
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size > uint64(len(m.buf)) {
		m.buf = append(m.buf, make([]byte, size-uint64(len(m.buf)))...)
	}
	return m.buf[:size:size]
}

func (m *sliceMemory) Free() { m.buf = nil }
