package ratelimit

import "sync/atomic"

// Built-in defaults (issue 31, item 9): what an account other than the
// operator's gets for each field the configuration leaves unset (0). They
// bound one tenant's flood (before: 60,000 requests from one key in 5.5 s)
// and leave ordinary use alone; the operator raises them in rate_limits
// and key_rate_limits (-1 = unlimited), per account or per key. The
// operator's own account is held only to limits set explicitly.
var (
	BuiltinAccount = Limits{RequestsPerMinute: 6_000, TokensPerMinute: 10_000_000, Concurrent: 128}
	BuiltinKey     = Limits{RequestsPerMinute: 3_000, TokensPerMinute: 5_000_000, Concurrent: 64}
)

// Unlimited is the configuration's value of a field that has no limit
// (0 there means "the built-in default").
const Unlimited = -1

// Effective returns l with each Unlimited field as 0, the limiter's
// "unlimited".
func (l Limits) Effective() Limits {
	if l.RequestsPerMinute < 0 {
		l.RequestsPerMinute = 0
	}
	if l.TokensPerMinute < 0 {
		l.TokensPerMinute = 0
	}
	if l.Concurrent < 0 {
		l.Concurrent = 0
	}
	return l
}

// Defaults are the configured defaults (rate_limits for every account,
// key_rate_limits for every key), replaced whole when the configuration
// is reloaded while requests read them. The nil *Defaults means none
// configured.
type Defaults struct{ p atomic.Pointer[[2]Limits] }

// NewDefaults holds account and, if given, key defaults.
func NewDefaults(account Limits, key ...Limits) *Defaults {
	d := &Defaults{}
	var k Limits
	if len(key) > 0 {
		k = key[0]
	}
	d.Store(account, k)
	return d
}

// Load returns the configured account defaults (as written: 0 unset, -1
// unlimited).
func (d *Defaults) Load() Limits {
	if d == nil {
		return Limits{}
	}
	if l := d.p.Load(); l != nil {
		return l[0]
	}
	return Limits{}
}

// LoadKey returns the configured key defaults, likewise.
func (d *Defaults) LoadKey() Limits {
	if d == nil {
		return Limits{}
	}
	if l := d.p.Load(); l != nil {
		return l[1]
	}
	return Limits{}
}

// Account is what an account with the given own limits is held to: its
// own, each unset field from the configuration, then (except for the
// operator's account) from BuiltinAccount; 0 = unlimited.
func (d *Defaults) Account(own Limits, operator bool) Limits {
	l := own.Or(d.Load())
	if !operator {
		l = l.Or(BuiltinAccount)
	}
	return l.Effective()
}

// Key is what a key with the given own limits is held to, likewise with
// key_rate_limits and BuiltinKey.
func (d *Defaults) Key(own Limits, operator bool) Limits {
	l := own.Or(d.LoadKey())
	if !operator {
		l = l.Or(BuiltinKey)
	}
	return l.Effective()
}

// Store replaces the defaults for requests admitted from now on.
func (d *Defaults) Store(account, key Limits) { d.p.Store(&[2]Limits{account, key}) }
