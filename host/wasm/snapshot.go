package wasm

import (
	"context"
	"errors"

	"github.com/tetratelabs/wazero/api"
)

// A tenant's call sees nothing of an earlier call (LoadTenant). A fresh
// instance per call guarantees it, but costs what starting the guest
// costs: tens of milliseconds for a Go guest, whose runtime initialises,
// against microseconds for the call itself. So, where it can be done
// exactly, an instance is instead put back after each call as it was when
// its start functions had run, and kept for the next call — Wasmtime's
// copy-on-write memory images, on wazero:
//
//   - memory: once started, the instance's linear memory becomes a private
//     mapping of a memory file holding its bytes (snapshotMemory); a reset
//     copies the file's bytes back over the pages the process wrote
//     (resetMemory), at a cost that follows those pages, not the memory's
//     size. wazero cannot shrink a memory, so the size the guest
//     sees is a global of rewrite.Preempt's, vsize, which a reset puts back like
//     the others: after a call that grew the memory, the next sees the
//     size a fresh instance has, with zero pages beyond it to grow into.
//   - globals: rewrite.Preempt exports every mutable global the module defines, and
//     a reset sets each back to its value after start.
//   - tables and segments: a module with an instruction that changes a table
//     or drops a segment, or that imports a memory, a table or a mutable
//     global, is not reset (rewrite says so); it gets an instance per call.
//   - the host's side: the result of a host call not yet read is dropped.
//
// Not put back: wazero's fake clock and random source, which move on, and
// a standard stream the guest closed (no files are open) — the host's
// counters, not anything a request held.
type snapshot struct {
	mem     []byte // the memory's whole mapping (its maximum size)
	view    []byte // a read-only view of the memory file, as long as mem
	size    uint32 // the memory's size after start, in bytes
	globals []api.MutableGlobal
	values  []uint64
	own     ownPages
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

// resetWay is how resetMemory found the pages to put back.
type resetWay int

const (
	resetKnown   resetWay = iota // the pages it knew: no fault during the call
	resetWalked                  // the page tables walked
	resetDropped                 // the page tables unreadable: pages dropped
	resetWays
)

// Resets counts the resets of tenants' instances by how their memory was
// put back, for the operator to see whether the cheap way is the usual one
// (switchyard_module_instance_resets_total; snapshot_linux.go's
// resetMemory says what each costs).
func (e *Engine) Resets() map[string]uint64 {
	return map[string]uint64{
		"known_pages": e.resets[resetKnown].Load(),
		"page_walk":   e.resets[resetWalked].Load(),
		"dropped":     e.resets[resetDropped].Load(),
	}
}

// errMemoryLost: the memory's mapping was replaced and could not be put
// back; the instance must be closed unused.
var errMemoryLost = errors.New("wasm: instance memory lost while snapshotting")

// takeSnapshot records in's state after start; mem is its memory's
// mapping. It returns nil, and in is used for one call only, when the
// module's state cannot all be put back (or the platform cannot map a
// memory file); ok false means in's memory could not be kept and in must
// not be used at all.
func takeSnapshot(in *instance, mem []byte, globals []string) (s *snapshot, ok bool) {
	if mem == nil || globals == nil || in.mem == nil {
		return nil, true
	}
	s = &snapshot{mem: mem, size: in.mem.Size()}
	for _, name := range globals {
		g, isMutable := in.mod.ExportedGlobal(name).(api.MutableGlobal)
		if !isMutable {
			return nil, true
		}
		s.globals = append(s.globals, g)
		s.values = append(s.values, g.Get())
	}
	if int(s.size) > len(mem) {
		return nil, true
	}
	view, err := snapshotMemory(mem, int(s.size), &s.own)
	switch err {
	case nil:
		s.view = view
		return s, true
	case errMemoryLost:
		return nil, false
	default:
		return nil, true
	}
}

// reset puts in back as it was after start; false when it cannot be (in
// is then closed, not reused).
func (in *instance) reset() bool {
	s := in.snap
	if s == nil {
		return false
	}
	// Pages a call grew the memory by (beyond s.size) read the file's
	// zeros again too; the guest sees its size after start (vsize).
	size := in.mem.Size()
	if int(size) > len(s.mem) {
		return false
	}
	how, err := resetMemory(s.mem[:size], s.view[:size], &s.own)
	if err != nil {
		return false
	}
	in.owner.engine.resets[how].Add(1)
	for i, g := range s.globals {
		g.Set(s.values[i])
	}
	in.pending = nil
	return true
}

// tenantInstance returns an idle instance of a tenant's module, put back
// after its last call, or a new one.
func (m *Module) tenantInstance(ctx context.Context) (*instance, error) {
	select {
	case in := <-m.pool:
		m.acct.idle.Add(-1)
		m.noteIdle()
		return in, nil
	default:
	}
	m.idleLow.Store(0)
	m.mu.Lock()
	m.startInstance(m.stateGlobals != nil) // kept after the call: trimmed when idle
	m.mu.Unlock()
	return m.madeInstance(m.instantiateResettable(ctx))
}

// keepIdle puts a reset instance of a tenant's module in the pool, unless
// the account already has as many idle instances as it may run calls at
// once (its modules' idle instances cost memory whether or not it calls
// them again).
func (m *Module) keepIdle(in *instance) bool {
	if m.acct.idle.Add(1) > int32(m.engine.tenantLimits().ConcurrentCalls) {
		m.acct.idle.Add(-1)
		return false
	}
	m.pool <- in // never blocks: at most PoolSize instances exist
	return true
}

// dropIdle closes an instance taken from the pool by a trim or Close.
func (m *Module) dropIdle(in *instance) {
	if m.slots != nil {
		m.acct.idle.Add(-1)
	}
	m.discard(in)
}
