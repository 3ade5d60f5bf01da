package ratelimit

import "sync/atomic"

// Defaults are every account's default limits (the configuration's
// rate_limits), replaced whole when the configuration is reloaded while
// requests read them. The nil *Defaults means unlimited.
type Defaults struct{ p atomic.Pointer[Limits] }

// NewDefaults holds l.
func NewDefaults(l Limits) *Defaults {
	d := &Defaults{}
	d.Store(l)
	return d
}

// Load returns the current defaults.
func (d *Defaults) Load() Limits {
	if d == nil {
		return Limits{}
	}
	if l := d.p.Load(); l != nil {
		return *l
	}
	return Limits{}
}

// Store replaces the defaults for requests admitted from now on.
func (d *Defaults) Store(l Limits) { d.p.Store(&l) }
