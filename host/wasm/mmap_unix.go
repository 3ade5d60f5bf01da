//go:build linux || darwin

package wasm

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mmapMemory backs a tenant instance's linear memory with an anonymous
// mapping of its maximum size, so growing never copies (wazero's default
// grows a Go slice, and a Go guest grows its memory many times while it
// initialises: a third of the cost of a fresh instance) and pages are
// committed only when touched. Freeing unmaps it. Used for tenants'
// instances (Module.callTenant), whose memory snapshot.go then maps anew.
type mmapMemory struct {
	buf []byte
	// view is a read-only mapping of the memory file snapshot.go maps buf
	// from, if it did: freed with the memory, however the instance closes
	// (its runtime closing with it included).
	view []byte
}

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

func (m *mmapMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
	if m.view != nil {
		_ = syscall.Munmap(m.view)
		m.view = nil
	}
}

// mmapAllocator maps each memory; where mapping fails, the memory is a Go
// slice as wazero's own.
var mmapAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil {
		return &sliceMemory{max: max}
	}
	return &mmapMemory{buf: b}
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
