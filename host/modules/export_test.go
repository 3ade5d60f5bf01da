package modules

// ConvergeOne is converge's step for one module, with the version its
// snapshot of the store read (possibly stale by the time it runs).
func (r *Registry) ConvergeOne(name, version string) { r.converge1(name, version) }
