// Package memsnap puts a Wasm instance's linear memory back as it was at a
// snapshot, at a cost that follows the pages written since, not the
// memory's size: Wasmtime's copy-on-write memory images, on wazero. It
// knows nothing of modules or instances; host/wasm's snapshot.go decides
// what to snapshot (a tenant's instance after start) and puts the
// instance's globals back itself.
//
// A memory comes from Allocator: an anonymous mapping of its maximum size
// (Memory). Take makes it a private mapping of a memory file holding its
// bytes; Image.Reset copies the file's bytes back over the pages written
// since. Where the OS has no memory files (all but Linux), Take answers
// errors.ErrUnsupported and the caller makes a fresh instance instead.
package memsnap

import "errors"

// Way is how Image.Reset found the pages to put back.
type Way int

const (
	Known   Way = iota // the pages it knew: no fault during the call
	Walked             // the page tables walked
	Dropped            // the page tables unreadable: pages dropped
	Ways               // the number of ways, for counters indexed by Way
)

// ErrLost: the memory's mapping was replaced and could not be put back;
// the instance must be closed unused.
var ErrLost = errors.New("wasm: instance memory lost while snapshotting")

// Image is a memory's contents at a snapshot (Take) and what Reset knows
// of the pages written since.
type Image struct {
	view []byte // a read-only view of the memory file, as long as the mapping
	own  ownPages
}

// Take makes m's memory a private mapping of a memory file that holds its
// first size bytes: the contents stay as they are, and Reset later puts
// them back. The file's read-only view is unmapped with m (Memory.Free).
// ErrLost: m can no longer be used; errors.ErrUnsupported: the platform
// cannot (other errors: it could not this time); in both, m is unchanged.
func Take(m *Memory, size int) (*Image, error) {
	im := &Image{}
	view, err := snapshotMemory(m.buf, size, &im.own)
	if err != nil {
		return nil, err
	}
	im.view, m.view = view, view
	return im, nil
}

// BeforeCall takes the page-fault count of the calling thread, which the
// call and Reset must both run on (runtime.LockOSThread), for Reset to
// compare with (resetMemory).
func (im *Image) BeforeCall() { im.own.beforeCall() }

// Reset puts the pages of mem, the first len(mem) bytes of the memory's
// mapping, written since Take back to their bytes at Take (pages past the
// snapshot's size read zeros again). An error: the memory could not be put
// back and must not be used again.
func (im *Image) Reset(mem []byte) (Way, error) {
	if len(mem) > len(im.view) {
		return Dropped, errors.New("memsnap: memory larger than its mapping")
	}
	return resetMemory(mem, im.view[:len(mem)], &im.own)
}

// ownPages is what resetMemory knows of a memory's pages that are the
// process's own copies (see there).
type ownPages struct {
	runs    []pageRun // in order, byte offsets in the memory
	known   bool      // runs holds every such page since the last reset
	faults  uint64    // the call's thread's page faults as the call began
	counted bool      // faults was read for the call now running
}

// pageRun is a run of pages, [start, end) in bytes from the memory's start.
type pageRun struct{ start, end int }

// copyBack copies the runs back from view.
func (o *ownPages) copyBack(mem, view []byte) {
	for _, r := range o.runs {
		if end := min(r.end, len(mem)); r.start < end {
			copy(mem[r.start:end], view[r.start:end])
		}
	}
}
