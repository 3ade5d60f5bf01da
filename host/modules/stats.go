package modules

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
