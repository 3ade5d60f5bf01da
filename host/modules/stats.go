package modules

import "sort"

// PoolSizes reports the live instances (pooled or in use) of each active
// module, for metrics.
func (r *Registry) PoolSizes() map[string]int {
	active := *r.active.Load()
	out := make(map[string]int, len(active))
	for name, m := range active {
		out[name] = m.Live()
	}
	return out
}

// InstanceResets counts the resets of tenants' module instances by how
// their memory was put back (wasm.Engine.Resets).
func (r *Registry) InstanceResets() map[string]uint64 { return r.engine.Resets() }

// Compiled and Parks count the modules holding compiled code and the idle
// account modules that gave theirs back (wasm.Engine.Compiled).
func (r *Registry) Compiled() int64 { return r.engine.Compiled() }

// Parks: see Compiled.
func (r *Registry) Parks() uint64 { return r.engine.Parks() }

// Loads counts the modules this registry compiled and instantiated
// (publications, activations, versions compiled ahead); lazily loaded
// start-up versions count when their first call loads them elsewhere, not
// here.
func (r *Registry) Loads() int64 { return r.loads.Load() }

// Prewarmed lists the versions published by other gateways that are
// compiled here, ready for their activation (follow.go).
func (r *Registry) Prewarmed() []string {
	r.warmMu.Lock()
	defer r.warmMu.Unlock()
	var ids []string
	for id, w := range r.warm {
		if w.done() && w.mod != nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}
