package modules

// ConvergeOne is converge's step for one module, run after its snapshot
// of the store was read (possibly stale by the time it runs).
func (r *Registry) ConvergeOne(name string) { r.converge1(name) }
