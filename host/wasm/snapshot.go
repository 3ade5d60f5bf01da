package wasm

import (
	"context"
	"errors"

	"github.com/switchyard/switchyard/host/wasm/memsnap"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
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
//     mapping of a memory file holding its bytes (memsnap.Take); a reset
//     copies the file's bytes back over the pages the process wrote
//     (memsnap.Image.Reset), at a cost that follows those pages, not the memory's
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
	img     *memsnap.Image
	globals []api.MutableGlobal
	values  []uint64
}

// Resets counts the resets of tenants' instances by how their memory was
// put back, for the operator to see whether the cheap way is the usual one
// (switchyard_module_instance_resets_total; memsnap's resetMemory says
// what each costs).
func (e *Engine) Resets() map[string]uint64 {
	return map[string]uint64{
		"known_pages": e.resets[memsnap.Known].Load(),
		"page_walk":   e.resets[memsnap.Walked].Load(),
		"dropped":     e.resets[memsnap.Dropped].Load(),
	}
}

// instantiateResettable makes an instance of a tenant's module on a memory
// of its own mapping (memsnap.Allocator) and snapshots it.
func (m *Module) instantiateResettable(ctx context.Context) (*instance, error) {
	if memsnap.Allocator == nil {
		return m.instantiate(ctx) // no mappings here: an instance per call
	}
	var mm *memsnap.Memory
	alloc := experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
		lm := memsnap.Allocator.Allocate(capacity, max)
		mm, _ = lm.(*memsnap.Memory)
		return lm
	})
	in, err := m.instantiate(experimental.WithMemoryAllocator(ctx, alloc))
	if err != nil {
		return nil, err
	}
	snap, ok := takeSnapshot(in, mm, m.stateGlobals)
	if !ok {
		in.close()
		return nil, errors.New("instance memory could not be snapshotted")
	}
	in.snap = snap
	return in, nil
}

// takeSnapshot records in's state after start; mm is its memory. It
// returns nil, and in is used for one call only, when the module's state
// cannot all be put back (or the platform cannot map a memory file); ok
// false means in's memory could not be kept and in must not be used at all.
func takeSnapshot(in *instance, mm *memsnap.Memory, globals []string) (s *snapshot, ok bool) {
	if mm == nil || mm.Bytes() == nil || globals == nil || in.mem == nil {
		return nil, true
	}
	s = &snapshot{mem: mm.Bytes()}
	for _, name := range globals {
		g, isMutable := in.mod.ExportedGlobal(name).(api.MutableGlobal)
		if !isMutable {
			return nil, true
		}
		s.globals = append(s.globals, g)
		s.values = append(s.values, g.Get())
	}
	size := in.mem.Size()
	if int(size) > len(s.mem) {
		return nil, true
	}
	img, err := memsnap.Take(mm, int(size))
	switch err {
	case nil:
		s.img = img
		return s, true
	case memsnap.ErrLost:
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
	// Pages a call grew the memory by (beyond its size at the snapshot)
	// read the file's zeros again too; the guest sees its size after start
	// (vsize).
	size := in.mem.Size()
	if int(size) > len(s.mem) {
		return false
	}
	how, err := s.img.Reset(s.mem[:size])
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
		m.acct.idleBytes.Add(-in.idleBytes)
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
// its memory would take the account's idle instances past their budget
// (TenantLimits.IdleBytes: idle instances cost memory whether or not the
// account calls them again).
func (m *Module) keepIdle(in *instance) bool {
	// A kept instance has been reset (a snapshot of its memory): never an
	// Extism one, whose memories the SDK does not show.
	in.idleBytes = int64(in.mem.Size())
	if m.acct.idleBytes.Add(in.idleBytes) > m.engine.tenantLimits().IdleBytes {
		m.acct.idleBytes.Add(-in.idleBytes)
		return false
	}
	m.pool <- in // never blocks: at most PoolSize instances exist
	return true
}

// dropIdle closes an instance taken from the pool by a trim or Close.
func (m *Module) dropIdle(in *instance) {
	if m.slots != nil {
		m.acct.idleBytes.Add(-in.idleBytes)
	}
	m.discard(in)
}
