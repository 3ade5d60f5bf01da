package memsnap

import (
	"bytes"
	"errors"
	"os"
	goruntime "runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// pageFinders are the two ways findOwnPages reads the page tables.
var pageFinders = []struct {
	name string
	find func(f *os.File, mem []byte, runs []pageRun) ([]pageRun, error)
}{
	{"PAGEMAP_SCAN", scanOwnPages},
	{"page map read", readOwnPages},
}

// snapshotted maps a memory of pages pages, fills every other page of the
// first filled with bytes (the memory file has holes), and snapshots it;
// want is a copy of its bytes.
func snapshotted(t testing.TB, pages, filled int) (mem, view []byte, own *ownPages, want []byte) {
	t.Helper()
	page := len(zeroPage)
	mm, ok := Allocator.Allocate(uint64(pages*page), uint64(pages*page)).(*Memory)
	if !ok {
		t.Skip("memory could not be mapped")
	}
	t.Cleanup(mm.Free)
	mem = mm.buf
	for p := 0; p < filled; p += 2 {
		for i := p * page; i < (p+1)*page; i += 97 {
			mem[i] = byte(p + i)
		}
	}
	own = new(ownPages)
	view, err := snapshotMemory(mem, filled*page, own)
	if err != nil {
		t.Fatal(err)
	}
	mm.view = view
	return mem, view, own, bytes.Clone(mem)
}

func mustEqual(t *testing.T, what string, mem, want []byte) {
	t.Helper()
	for i := range mem {
		if mem[i] != want[i] {
			t.Fatalf("%s: page %d not put back (byte %d is %d, want %d)", what, i/len(zeroPage), i, mem[i], want[i])
		}
	}
}

// Both ways of reading the page tables find exactly the pages written
// since the snapshot — over the file's bytes, over its holes, beyond the
// snapshot's size, in more runs than one PAGEMAP_SCAN call returns — and
// not the pages only read.
func TestFindOwnPages(t *testing.T) {
	if pagemap() == nil {
		t.Skip("no /proc/self/pagemap")
	}
	const pages, filled = 600, 400
	page := len(zeroPage)
	for _, f := range pageFinders {
		t.Run(f.name, func(t *testing.T) {
			mem, view, _, want := snapshotted(t, pages, filled)
			var sum byte
			for p := 1; p < pages; p += 3 { // reads: the file's pages and zeros
				sum += mem[p*page]
			}
			_ = sum
			written := map[int]bool{}
			for p := 0; p < pages; p += 4 {
				mem[p*page+page/2] ^= 0xff
				written[p] = true
			}
			mem[len(mem)-1] = 7
			written[pages-1] = true
			runs, err := f.find(pagemap(), mem, nil)
			if errors.Is(err, errors.ErrUnsupported) {
				t.Skip("the kernel has no PAGEMAP_SCAN (before 6.7)")
			} else if err != nil {
				t.Fatal(err)
			}
			found := map[int]bool{}
			for _, r := range runs {
				for off := r.start; off < r.end; off += page {
					found[off/page] = true
				}
			}
			if len(found) != len(written) {
				t.Fatalf("found %d written pages, want %d", len(found), len(written))
			}
			for p := range written {
				if !found[p] {
					t.Fatalf("page %d written, not found", p)
				}
			}
			(&ownPages{runs: runs}).copyBack(mem, view)
			mustEqual(t, "copied back", mem, want)
		})
	}
}

// A reset puts back every page written since the snapshot, whether it
// walked the page tables (the call's thread faulted: a page written for the
// first time faults) or copied back the pages it already knew (no fault):
// across calls that write known pages, new pages, and both.
func TestResetMemorySkipsTheWalkWithoutFaults(t *testing.T) {
	if pagemap() == nil {
		t.Skip("no /proc/self/pagemap")
	}
	goruntime.LockOSThread() // as callTenant does for a call and its reset
	defer goruntime.UnlockOSThread()
	page := len(zeroPage)
	mem, view, own, want := snapshotted(t, 300, 200)
	writes := []struct {
		name  string
		pages []int
		new   bool // a page written for the first time: the reset must walk
	}{
		{"first write of a file page and a hole", []int{0, 1}, true},
		{"the same pages again", []int{0, 1}, false},
		{"a new page past the snapshot's size", []int{250}, true},
		{"known pages and a new one", []int{0, 250, 120}, true},
		{"nothing", nil, false},
		{"known pages only", []int{120, 1}, false},
	}
	skipped := 0
	for _, w := range writes {
		for i := range 20 {
			own.beforeCall()
			for _, p := range w.pages {
				mem[p*page+5]++
			}
			how, err := resetMemory(mem, view, own)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 && w.new && how != Walked {
				t.Fatalf("%s: a page written for the first time, and the reset did not walk the page tables", w.name)
			}
			if how == Known {
				skipped++
			}
			mustEqual(t, w.name, mem, want)
		}
	}
	// The thread's own faults for anything else send a reset to the walk;
	// most of these 120 took none.
	if skipped == 0 {
		t.Fatal("every reset walked the page tables: the pages kept were never enough")
	}
	for _, r := range own.runs {
		for off := r.start; off < r.end; off += page {
			switch off / page {
			case 0, 1, 120, 250:
			default:
				t.Fatalf("page %d kept as written; it never was", off/page)
			}
		}
	}
}

// Only the faults of the call's thread send its reset to the walk: another
// thread's fault during the call does not (the call's writes are all on
// its own thread), one of its own does.
func TestResetMemoryCountsTheCallsThread(t *testing.T) {
	if pagemap() == nil {
		t.Skip("no /proc/self/pagemap")
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	page := len(zeroPage)
	mem, view, own, want := snapshotted(t, 300, 200)
	elsewhere, err := unix.Mmap(-1, 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(elsewhere) })
	fault := func() { // a page fault of the calling thread, not in mem
		if err := unix.Madvise(elsewhere, unix.MADV_DONTNEED); err != nil {
			t.Error(err)
		}
		elsewhere[0]++
	}
	call := func(during func()) Way {
		own.beforeCall()
		mem[5*page]++
		during()
		how, err := resetMemory(mem, view, own)
		if err != nil {
			t.Fatal(err)
		}
		mustEqual(t, "after the call", mem, want)
		return how
	}
	call(func() {}) // page 5 known from here on
	skipped := 0
	for range 10 {
		if how := call(fault); how != Walked {
			t.Fatalf("the call's thread faulted, and its reset did not walk the page tables (%d)", how)
		}
		if call(func() {
			done := make(chan struct{})
			go func() { // not this goroutine's thread: it is locked to it
				fault()
				close(done)
			}()
			<-done
		}) == Known {
			skipped++
		}
	}
	if skipped == 0 {
		t.Fatal("another thread's faults sent every reset to the walk")
	}
	// A reset without a count taken as its call began walks.
	mem[5*page]++
	if how, err := resetMemory(mem, view, own); err != nil || how != Walked {
		t.Fatalf("a reset with no count of its own: %d, %v; want the walk", how, err)
	}
	mustEqual(t, "without a count", mem, want)
}

// BenchmarkResetMemory is a reset's memory part on a Go guest's shape:
// ~850 pages after start, 25 of them written by each call — without a page
// fault since the last reset, and walking the page tables both ways.
func BenchmarkResetMemory(b *testing.B) {
	if pagemap() == nil {
		b.Skip("no /proc/self/pagemap")
	}
	const pages, filled = 850, 600
	page := len(zeroPage)
	write := func(mem []byte) {
		for p := range 25 {
			mem[p*30*page] = 1
		}
	}
	b.Run("known pages", func(b *testing.B) {
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		mem, view, own, _ := snapshotted(b, pages, filled)
		for b.Loop() {
			own.beforeCall()
			write(mem)
			if _, err := resetMemory(mem, view, own); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, f := range pageFinders {
		b.Run(f.name, func(b *testing.B) {
			mem, view, own, _ := snapshotted(b, pages, filled)
			for b.Loop() {
				write(mem)
				runs, err := f.find(pagemap(), mem, own.runs[:0])
				if errors.Is(err, errors.ErrUnsupported) {
					b.Skip("the kernel has no PAGEMAP_SCAN (before 6.7)")
				} else if err != nil {
					b.Fatal(err)
				}
				own.runs = runs
				own.copyBack(mem, view)
			}
		})
	}
}
