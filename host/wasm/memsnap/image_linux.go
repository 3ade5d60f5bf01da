package memsnap

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// snapshotMemory makes mem (a whole mapping of mmapAllocator's) a private
// mapping of a memory file that holds its first size bytes: the contents
// stay as they are, and resetMemory later puts them back; own is told
// that none of its pages are the process's own yet. view is a
// read-only view of the file, unmapped with the memory (Memory.Free).
func snapshotMemory(mem []byte, size int, own *ownPages) (view []byte, err error) {
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
	// syscall's Mmap, as Memory's: its Free unmaps with syscall's
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
		return nil, ErrLost
	}
	*own = ownPages{known: true} // a fresh private mapping: none are
	return view, nil
}

// resetMemory puts the pages of mem written since snapshotMemory back to
// the memory file's bytes. The pages a call wrote are copies of the file's
// of the process's own (anonymous memory); those are copied back from
// view, a read-only view of the file, and stay in memory: a Go guest
// writes a hundred pages or more in a call, and dropping them (madvise)
// made the next call fault each one in again, 25 times the cost of the
// call.
//
// Which pages are the process's own, the kernel's page tables say; but
// walking them costs ~35 ns a page on this project's machines, every page
// of the memory (~10 µs for a Go guest's 850), written or not. So own
// keeps the pages found, and the walk is skipped when the call's thread
// took no page fault during the call: every page not among them is either
// not mapped or the file's page mapped read-only (the mapping is private),
// so writing it faults, and the kernel counts each fault against the
// thread that took it (getrusage(RUSAGE_THREAD)'s minor and major faults:
// the guest's write, the host's into the guest's memory, a system call's
// on its behalf). That thread is the call's own: the call runs locked to
// it (host/wasm's callTenant), from beforeCall to this reset, and every
// write into an instance's memory during a call is made on the call's
// goroutine — the
// guest's code, the host functions it calls (a host function's helpers
// hand their results back to it, which writes them), wazero's own. With no
// fault, the pages written are among those kept, and copying those back
// is the whole reset. A fault of the thread for anything else (the Go
// runtime growing its heap, say) only sends the reset to the walk; other
// threads' faults do not count.
//
// Where the page tables cannot be read, the pages are dropped.
func resetMemory(mem, view []byte, own *ownPages) (Way, error) {
	if len(mem) == 0 {
		return Known, nil
	}
	// beforeCall's count serves this reset only: a reset without one of
	// its own walks.
	began := own.counted
	own.counted = false
	if view != nil {
		faults, counted := threadFaults()
		if counted && own.known && began && faults == own.faults {
			own.copyBack(mem, view)
			return Known, nil
		}
		runs, err := findOwnPages(mem, own.runs[:0])
		if err == nil {
			own.runs, own.known = runs, true
			own.copyBack(mem, view)
			return Walked, nil
		}
	}
	own.known = false
	return Dropped, unix.Madvise(mem, unix.MADV_DONTNEED)
}

// threadFaults is the page faults the calling thread has taken, false
// when the kernel does not say.
func threadFaults() (uint64, bool) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0, false
	}
	return uint64(ru.Minflt) + uint64(ru.Majflt), true
}

// beforeCall takes the fault count of the thread the call is locked to
// (host/wasm's callTenant), for resetMemory to compare with.
func (o *ownPages) beforeCall() {
	o.faults, o.counted = threadFaults()
}

// pagemap is /proc/self/pagemap, opened once (nil: it cannot be read).
var pagemap = sync.OnceValue(func() *os.File {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil
	}
	return f
})

// findOwnPages appends to runs the pages of mem that are the process's own:
// anonymous, present or swapped out.
func findOwnPages(mem []byte, runs []pageRun) ([]pageRun, error) {
	f := pagemap()
	if f == nil {
		return runs, errors.ErrUnsupported
	}
	if !noScan.Load() {
		out, err := scanOwnPages(f, mem, runs)
		if !errors.Is(err, errors.ErrUnsupported) {
			return out, err
		}
		noScan.Store(true)
	}
	return readOwnPages(f, mem, runs)
}

// noScan is set once the kernel has refused PAGEMAP_SCAN (before 6.7).
var noScan atomic.Bool

// PAGEMAP_SCAN (Documentation/admin-guide/mm/pagemap.rst, "Pagemap Scan
// IOCTL"; linux/fs.h): the kernel walks the page tables of a range and
// returns only the runs of pages that match, where reading the page map
// returns an entry for every page for the host to test. The walk itself
// costs about the same either way (BenchmarkResetMemory: 47 against 61
// µs on 850 pages, on a busy machine); what the fault count saves
// (resetMemory) is the walk.
const (
	pmScanIoctl   = 0xc0606610 // _IOWR('f', 16, struct pm_scan_arg)
	pageIsFile    = 1 << 2
	pageIsPresent = 1 << 3
	pageIsSwapped = 1 << 4
	pmScanArgSize = 96
	pmScanVecRuns = 64
)

type pmScanArg struct {
	size, flags, start, end, walkEnd, vec, vecLen, maxPages       uint64
	categoryInverted, categoryMask, categoryAnyofMask, returnMask uint64
}

type pageRegion struct{ start, end, categories uint64 }

// scanBufs are the runs PAGEMAP_SCAN writes, on the heap: the kernel is
// handed their address as a number, which would not follow a goroutine
// stack that moved.
var scanBufs = sync.Pool{New: func() any { return new([pmScanVecRuns]pageRegion) }}

// scanOwnPages is findOwnPages with PAGEMAP_SCAN: the pages present or
// swapped and not the file's. ErrUnsupported: the kernel does not have it.
func scanOwnPages(f *os.File, mem []byte, runs []pageRun) ([]pageRun, error) {
	vec := scanBufs.Get().(*[pmScanVecRuns]pageRegion)
	defer scanBufs.Put(vec)
	base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
	end := base + uint64(len(mem))
	arg := pmScanArg{
		size:              pmScanArgSize,
		start:             base,
		end:               end,
		vec:               uint64(uintptr(unsafe.Pointer(vec))),
		vecLen:            pmScanVecRuns,
		categoryInverted:  pageIsFile,
		categoryMask:      pageIsFile,
		categoryAnyofMask: pageIsPresent | pageIsSwapped,
		returnMask:        pageIsPresent | pageIsSwapped,
	}
	fd := f.Fd()
	for arg.start < end {
		n, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, pmScanIoctl, uintptr(unsafe.Pointer(&arg)))
		switch errno {
		case 0:
		case unix.ENOTTY, unix.EINVAL:
			return runs, errors.ErrUnsupported
		default:
			return runs, errno
		}
		for _, r := range vec[:n] {
			// The kernel rounds the range's end up to a page: mem's
			// length is whole pages unless the OS's page is larger than
			// Wasm's 64 KiB.
			lo, hi := int(r.start-base), int(min(r.end, end)-base)
			if k := len(runs) - 1; k >= 0 && runs[k].end == lo {
				runs[k].end = hi // split only by the categories returned
			} else {
				runs = append(runs, pageRun{lo, hi})
			}
		}
		if arg.walkEnd <= arg.start {
			return runs, errors.New("wasm: PAGEMAP_SCAN made no progress")
		}
		arg.start = arg.walkEnd
	}
	return runs, nil
}

// pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst).
const (
	pmPresent = 1 << 63
	pmSwapped = 1 << 62
	pmFile    = 1 << 61 // file page or shared anonymous: not written here
)

// readOwnPages is findOwnPages by reading the page map: an entry per page.
func readOwnPages(f *os.File, mem []byte, runs []pageRun) ([]pageRun, error) {
	page := len(zeroPage) // the page map has an entry per page of the OS's size
	var buf [512]uint64
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	for first := 0; first*page < len(mem); first += len(buf) {
		n := min(len(buf), (len(mem)-first*page+page-1)/page)
		raw := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), n*8)
		if _, err := f.ReadAt(raw, int64(base/uintptr(page)+uintptr(first))*8); err != nil {
			return runs, err
		}
		for k, e := range buf[:n] {
			if e&pmSwapped != 0 || (e&pmPresent != 0 && e&pmFile == 0) {
				off := (first + k) * page
				end := min(off+page, len(mem))
				if j := len(runs) - 1; j >= 0 && runs[j].end == off {
					runs[j].end = end
				} else {
					runs = append(runs, pageRun{off, end})
				}
			}
		}
	}
	return runs, nil
}

// zeroPage is a page of the OS's size (4 KiB on amd64; 16 or 64 KiB on
// some arm64 kernels), all zeros.
var zeroPage = make([]byte, os.Getpagesize())
