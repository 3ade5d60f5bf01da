package wasm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// instantiateResettable makes an instance of a tenant's module on a memory
// of its own mapping (mmapAllocator) and snapshots it (snapshot.go).
func (m *Module) instantiateResettable(ctx context.Context) (*instance, error) {
	var mm *mmapMemory
	alloc := experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
		lm := mmapAllocator.Allocate(capacity, max)
		mm, _ = lm.(*mmapMemory)
		return lm
	})
	in, err := m.instantiate(experimental.WithMemoryAllocator(ctx, alloc))
	if err != nil {
		return nil, err
	}
	var mem []byte
	if mm != nil {
		mem = mm.buf
	}
	snap, ok := takeSnapshot(in, mem, m.stateGlobals)
	if snap != nil {
		mm.view = snap.view // unmapped with the memory
	}
	if !ok {
		in.close()
		return nil, errors.New("instance memory could not be snapshotted")
	}
	in.snap = snap
	return in, nil
}

// snapshotMemory makes mem (a whole mapping of mmapAllocator's) a private
// mapping of a memory file that holds its first size bytes: the contents
// stay as they are, and resetMemory later puts them back. view is a
// read-only view of the file, unmapped with the memory (mmapMemory.Free).
func snapshotMemory(mem []byte, size int) (view []byte, err error) {
	fd, err := unix.MemfdCreate("switchyard-instance", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd) // the mappings keep the file
	if err := unix.Ftruncate(fd, int64(len(mem))); err != nil {
		return nil, err
	}
	// Only the pages with something in them: the file reads zeros
	// elsewhere, and a Go guest's memory is mostly untouched heap.
	page := len(zeroPage)
	zero := func(off int) bool {
		b := mem[off:min(off+page, size)]
		return bytes.Equal(b, zeroPage[:len(b)])
	}
	for off := 0; off < size; {
		for off < size && zero(off) {
			off += page
		}
		end := off
		for end < size && !zero(end) {
			end += page
		}
		end = min(end, size)
		for off < end {
			n, err := unix.Pwrite(fd, mem[off:end], int64(off))
			if err != nil {
				return nil, err
			}
			off += n
		}
	}
	// syscall's Mmap, as mmapMemory's: its Free unmaps with syscall's
	// Munmap, which knows only the mappings syscall made.
	view, err = syscall.Mmap(fd, 0, len(mem), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	_, err = unix.MmapPtr(fd, 0, unsafe.Pointer(unsafe.SliceData(mem)), uintptr(len(mem)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED|mapNoReserve)
	if err != nil {
		_ = syscall.Munmap(view)
		// A failed MAP_FIXED may have unmapped the range: map zeros back
		// so nothing faults before the instance is closed.
		_, _ = unix.MmapPtr(-1, 0, unsafe.Pointer(unsafe.SliceData(mem)), uintptr(len(mem)),
			unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|mapNoReserve)
		return nil, errMemoryLost
	}
	return view, nil
}

// resetMemory puts the pages of mem written since snapshotMemory back to
// the memory file's bytes. The pages a call wrote are copies of the file's
// of their own (anonymous memory); the kernel's page map of the process
// says which, and those are copied back from view, a read-only view of the
// file, and stay in memory: a Go guest writes a hundred pages or more in
// a call, and dropping them (madvise) made the next call fault each one
// in again, 25 times the cost of the call. Where the page map cannot be
// read, they are dropped.
func resetMemory(mem, view []byte) error {
	if len(mem) == 0 {
		return nil
	}
	if view != nil && copyDirty(mem, view) == nil {
		return nil
	}
	return unix.Madvise(mem, unix.MADV_DONTNEED)
}

// pagemap is /proc/self/pagemap, opened once (nil: it cannot be read).
var pagemap = sync.OnceValue(func() *os.File {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil
	}
	return f
})

// pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst).
const (
	pmPresent = 1 << 63
	pmSwapped = 1 << 62
	pmFile    = 1 << 61 // file page or shared anonymous: not written here
)

// copyDirty copies back from view every page of mem the process wrote
// (present or swapped, and not the file's).
func copyDirty(mem, view []byte) error {
	f := pagemap()
	if f == nil {
		return errors.ErrUnsupported
	}
	page := len(zeroPage) // the page map has an entry per page of the OS's size
	var buf [512]uint64
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	for first := 0; first*page < len(mem); first += len(buf) {
		n := min(len(buf), (len(mem)-first*page+page-1)/page)
		raw := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), n*8)
		if _, err := f.ReadAt(raw, int64(base/uintptr(page)+uintptr(first))*8); err != nil {
			return err
		}
		for k, e := range buf[:n] {
			if e&pmSwapped != 0 || (e&pmPresent != 0 && e&pmFile == 0) {
				off := (first + k) * page
				end := min(off+page, len(mem))
				copy(mem[off:end], view[off:end])
			}
		}
	}
	return nil
}

// zeroPage is a page of the OS's size (4 KiB on amd64; 16 or 64 KiB on
// some arm64 kernels), all zeros.
var zeroPage = make([]byte, os.Getpagesize())
