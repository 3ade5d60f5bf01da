package wasm

// Parking an idle tenant module (issue 31 item 2): an account's module that
// nobody called for TenantLimits.CompiledIdle gives back its compiled code
// (several MiB of machine code and wazero's metadata per Go guest) and is
// compiled again from the store on its next call. The gateway's memory then
// grows with the account modules in use, not with the ones stored: 200
// published modules no longer hold 200 compiled modules for ever.
//
// Only tenants' native modules park: the gateway's own are few and called
// on most requests, and an Extism module's compiled code belongs to the
// Extism SDK's runtime.

import (
	"context"
	"time"
)

// park frees m's compiled code and its idle instances when m is idle at
// now: no call in flight and none since now-idle. It reports whether it
// did.
//
// Lock order as in ensure (loadMu, then mu): a call enters under mu and
// compiles under loadMu, so holding both, no call can be between its
// enter and its use of the compiled code.
func (m *Module) park(now time.Time, idle time.Duration) bool {
	if m.refetch == nil {
		return false
	}
	m.loadMu.Lock()
	defer m.loadMu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || !m.ready.Load() || m.inflight.Load() > 0 ||
		now.Sub(time.Unix(0, m.lastCall.Load())) < idle {
		return false
	}
	// With no call in flight every live instance is idle in the pool,
	// but for one a pool trim has just taken out to close.
	for drained := false; !drained; {
		select {
		case in := <-m.pool:
			m.acct.idleBytes.Add(-in.idleBytes)
			in.close()
			m.live--
		default:
			drained = true
		}
	}
	if m.live > 0 {
		return false // the trim's: the next round parks
	}
	m.ready.Store(false)
	c := m.compiled
	m.rt, m.compiled, m.stateGlobals, m.preempt = nil, nil, nil, false
	m.fetch = m.refetch // the next call reads the binary again (load)
	m.engine.compiledN.Add(-1)
	m.engine.parks.Add(1)
	_ = c.Close(context.Background())
	return true
}

// parkIdle parks every registered module idle at now and returns how many
// it parked.
func (e *Engine) parkIdle(now time.Time) int {
	idle := e.tenantLimits().CompiledIdle
	if idle < 0 {
		return 0
	}
	e.parkMu.Lock()
	mods := make([]*Module, 0, len(e.parkable))
	for m := range e.parkable {
		mods = append(mods, m)
	}
	e.parkMu.Unlock()
	n := 0
	for _, m := range mods {
		if m.park(now, idle) {
			n++
		}
	}
	return n
}

// addParkable registers m with the parker, starting the parker with the
// first one.
func (e *Engine) addParkable(m *Module) {
	if e.tenantLimits().CompiledIdle < 0 {
		return
	}
	e.parkMu.Lock()
	defer e.parkMu.Unlock()
	if e.parkable == nil {
		e.parkable = map[*Module]struct{}{}
		e.parkStop = make(chan struct{})
		go e.parker(e.parkStop)
	}
	e.parkable[m] = struct{}{}
}

// removeParkable forgets m (Close).
func (e *Engine) removeParkable(m *Module) {
	e.parkMu.Lock()
	delete(e.parkable, m)
	e.parkMu.Unlock()
}

// parker looks for idle modules a few times per idle period, so a module
// parks at most a quarter period late, and at least once a minute.
func (e *Engine) parker(stop <-chan struct{}) {
	every := min(max(e.tenantLimits().CompiledIdle/4, time.Second), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			e.parkIdle(now)
		}
	}
}

// stopParker ends the parker (Engine.Close).
func (e *Engine) stopParker() {
	e.parkMu.Lock()
	defer e.parkMu.Unlock()
	if e.parkStop != nil {
		close(e.parkStop)
		e.parkStop = nil
	}
}

// Compiled is how many native modules hold compiled code now
// (switchyard_modules_compiled), and Parks how many times an idle tenant
// module gave its code back (switchyard_module_parks_total).
func (e *Engine) Compiled() int64 { return e.compiledN.Load() }

// Parks: see Compiled.
func (e *Engine) Parks() uint64 { return e.parks.Load() }
