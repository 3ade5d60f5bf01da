package wasm

import (
	"context"
	"sync"
	"sync/atomic"
)

// refcount lets a request pin the module version it started with: a hot
// swap retires the old version, which closes itself only when the last
// request holding it lets go.
type refcount struct {
	n       atomic.Int64
	retired atomic.Bool
	once    sync.Once
	release atomic.Pointer[func()] // ReleaseFunc's
}

// Retain pins m. Pair every Retain with a Release.
func (m *Module) Retain() { m.refs.n.Add(1) }

// Release unpins m; the last release of a retired module closes it.
func (m *Module) Release() {
	if m.refs.n.Add(-1) == 0 && m.refs.retired.Load() {
		m.closeOnce()
	}
}

// ReleaseFunc is m.Release as a func value, made once per module: a
// registry that hands out the method value with each pin allocated a
// closure each time (three a request).
func (m *Module) ReleaseFunc() func() {
	if f := m.refs.release.Load(); f != nil {
		return *f
	}
	f := m.Release
	m.refs.release.CompareAndSwap(nil, &f)
	return *m.refs.release.Load()
}

// Retire marks m as replaced. It closes now if nothing holds it, otherwise
// when the last holder releases it.
func (m *Module) Retire() {
	m.refs.retired.Store(true)
	if m.refs.n.Load() == 0 {
		m.closeOnce()
	}
}

func (m *Module) closeOnce() {
	m.refs.once.Do(func() { go func() { _ = m.Close(context.Background()) }() })
}
