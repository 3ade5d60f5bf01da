package wasm

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
)

// NativeHook is a host implementation of one hook that a module may
// declare, in its manifest's "native", to compute identically (docs/abi.md
// §native hooks). The first-party adapters' translation is plain Go that
// builds for the host too; running it natively instead of through the
// guest saves the Wasm hop (a Go guest's chat_request costs ~20 µs in the
// module, ~2 µs native) on every request.
//
// A declaration is checked, not trusted: when a module loads, it is called
// on every sample and its output must equal the implementation's byte for
// byte, or the module keeps being called. So a module that declares an
// implementation but was changed (another build, a bug fix, a broken
// build) is never silently replaced by host code.
type NativeHook struct {
	Hook abi.Hook
	// Bind returns the implementation for the module m (it may read m's
	// name and version: the OpenAI adapter stamps them into a header).
	// The returned function must be safe for concurrent use. Its output
	// fields are the caller's to keep when the Lease is nil; otherwise
	// they stay valid until the Lease is released (the implementation's
	// pooled buffers).
	Bind func(m *manifest.Manifest) func(in [][]byte) ([][]byte, Lease, error)
	// Samples are input field lists on which the module's own output must
	// equal the implementation's.
	Samples [][][]byte
}

// Lease is memory a native hook's output lives in, lent to the caller
// until Release (once).
type Lease interface{ Release() }

// nativeFunc is a bound implementation of one hook of one module.
type nativeFunc func(in [][]byte) ([][]byte, Lease, error)

// bindNatives decides, for a module that just loaded, which of the hooks
// its manifest declares native the host may run itself: those whose
// implementation the engine has and whose samples the module answers
// identically. It runs before the module serves a call, on the instance
// the load made.
func (m *Module) bindNatives(ctx context.Context) {
	if len(m.Manifest.Native) == 0 {
		return
	}
	hooks := make([]string, 0, len(m.Manifest.Native))
	for h := range m.Manifest.Native {
		hooks = append(hooks, h)
	}
	sort.Strings(hooks) // a stable order for the log
	for _, h := range hooks {
		name := m.Manifest.Native[h]
		impl, ok := m.engine.cfg.Natives[name]
		hook, _ := abi.HookByName(h)
		if !ok || impl.Hook != hook {
			m.engine.log.Warn("module declares a native hook this host does not implement; the module is called",
				"module", m.ID, "hook", h, "native", name)
			continue
		}
		f := nativeFunc(impl.Bind(m.Manifest))
		if reason := m.differs(ctx, hook, f, impl.Samples); reason != "" {
			m.engine.log.Warn("module's output differs from the native hook it declares; the module is called",
				"module", m.ID, "hook", h, "native", name, "reason", reason)
			continue
		}
		if m.native == nil {
			m.native = map[abi.Hook]nativeFunc{}
		}
		m.native[hook] = f
	}
	if len(m.native) > 0 {
		m.engine.log.Info("module hooks run natively", "module", m.ID, "hooks", m.nativeHookNames())
	}
}

// differs calls the module and f on every sample and says how the first
// mismatch differs ("" when none does).
func (m *Module) differs(ctx context.Context, hook abi.Hook, f nativeFunc, samples [][][]byte) string {
	if len(samples) == 0 {
		return "the implementation has no samples to check it against"
	}
	for i, in := range samples {
		want, err := m.callGuest(ctx, hook, in)
		if err != nil && ctx.Err() != nil {
			return "the check was cancelled"
		}
		if err != nil {
			return fmt.Sprintf("sample %d: the module failed: %v", i, err)
		}
		if reason := compareNative(f, in, want); reason != "" {
			return fmt.Sprintf("sample %d: %s", i, reason)
		}
	}
	return ""
}

// compareNative calls f on in and says how its output differs from want.
func compareNative(f nativeFunc, in, want [][]byte) string {
	got, lease, err := safeCall(f, in)
	if err != nil {
		return fmt.Sprintf("the native hook failed: %v", err)
	}
	if lease != nil {
		defer lease.Release()
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d output fields, the module returned %d", len(got), len(want))
	}
	for j := range got {
		if !bytes.Equal(got[j], want[j]) {
			return fmt.Sprintf("output field %d differs", j)
		}
	}
	return ""
}

// callGuest calls the module itself on one pooled instance, decoding its
// output as Call does.
func (m *Module) callGuest(ctx context.Context, hook abi.Hook, fields [][]byte) ([][]byte, error) {
	// The check's calls are this module's own, not the caller's: they must
	// not write into the call log ctx may carry (another module's, when a
	// host function's sub-request is what loads this one). Two modules
	// loading at once under one fusion raced on it.
	ctx = context.WithValue(ctx, callLogKey{}, (*callLog)(nil))
	if t := m.Manifest.Limits.TimeoutMS; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Millisecond)
		defer cancel()
	}
	in, err := m.get(ctx)
	if err != nil {
		return nil, err
	}
	out, err := in.call(ctx, hook, fields)
	if err != nil {
		m.discard(in)
		return nil, err
	}
	m.put(in)
	if len(out) == 0 || out[0] != abi.StatusOK {
		return nil, fmt.Errorf("status %v", out[:min(len(out), 1)])
	}
	return abi.Fields(nil, out[1:])
}

// errPanicked is a native hook's panic, as a call's failure.
type errPanicked struct{ v any }

func (e errPanicked) Error() string { return fmt.Sprintf("native hook panicked: %v", e.v) }

// safeCall runs f. The implementation is the host's own code, but the
// input is a client's: a panic fails this call like a trap, never the
// gateway.
func safeCall(f nativeFunc, in [][]byte) (out [][]byte, lease Lease, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, lease, err = nil, nil, errPanicked{p}
		}
	}()
	return f(in)
}

// callNative runs a native hook in place of the module's.
func (m *Module) callNative(ctx context.Context, hook abi.Hook, f nativeFunc, fields [][]byte, borrow bool) (*Output, error) {
	fs, lease, err := safeCall(f, fields)
	if err != nil {
		if p, ok := err.(errPanicked); ok {
			m.engine.log.ErrorContext(ctx, "native hook panicked", "module", m.ID, "hook", hook.String(), "panic", fmt.Sprint(p.v))
			return nil, m.fail(hook, "native hook failed")
		}
		return nil, m.fail(hook, shortReason(err.Error()))
	}
	if lease != nil && !borrow {
		// The caller keeps what Call returns: one copy of every field,
		// then the implementation's buffers go back.
		n := 0
		for _, f := range fs {
			n += len(f)
		}
		buf, own := make([]byte, 0, n), make([][]byte, len(fs))
		for i, f := range fs {
			buf = append(buf, f...)
			own[i] = buf[len(buf)-len(f) : len(buf) : len(buf)]
		}
		lease.Release()
		fs, lease = own, nil
	}
	return &Output{Fields: fs, lease: lease}, nil
}

// NativeHooks names the hooks the host runs natively for this module
// (sorted), for listings and tests. Empty until the module has loaded.
func (m *Module) NativeHooks() []string {
	if !m.ready.Load() {
		return nil
	}
	return m.nativeHookNames()
}

// nativeHookNames is NativeHooks without the readiness check, for the
// load itself.
func (m *Module) nativeHookNames() []string {
	var names []string
	for h := range m.native {
		names = append(names, h.String())
	}
	sort.Strings(names)
	return names
}
