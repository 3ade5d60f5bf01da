package wasm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Module is a loaded module and its instance pool.
type Module struct {
	Manifest *manifest.Manifest
	ID       string // name@version

	rt       wazero.Runtime
	compiled wazero.CompiledModule
	engine   *Engine
	pool     chan *instance
	ext      *extism.CompiledPlugin // set for runtime "extism" (then rt and compiled are nil)

	// A tenant's module (LoadTenant): account is its owner, slots bound
	// its concurrent calls (PoolSize), and every call gets a fresh
	// instance. For the gateway's modules account is "" and slots nil.
	account string
	acct    *account
	slots   chan struct{}
	// shares bound each metered account's calls of a gateway's module
	// (account id → chan struct{}, cap half the pool): share.
	shares sync.Map
	// preempt: the module was instrumented (rewrite.Preempt). stateGlobals,
	// when set, name the exports of its mutable globals: a tenant's
	// instance is then reset after each call instead of made anew
	// (snapshot.go).
	preempt      bool
	stateGlobals []string
	// native are the hooks the host runs itself (native.go), set at load
	// before ready and never changed after.
	native map[abi.Hook]nativeFunc

	// Loading (engine.go, ensure): rt, compiled and preempt are set once,
	// before ready; bin is the binary until then.
	lazy    bool // loaded by LoadLazy: compiled on the first call
	ready   atomic.Bool
	loadMu  sync.Mutex
	loadErr error
	bin     []byte
	fetch   func() ([]byte, error) // reads bin when it is nil (LoadLazyFrom)
	// refetch, set for a tenant's module kept in a store
	// (LoadTenantStored), reads the binary again after the module parked
	// (park.go); lastCall (unix ns) and inflight say whether it is idle.
	refetch  func() ([]byte, error)
	lastCall atomic.Int64
	inflight atomic.Int32

	mu     sync.Mutex
	live   int // instances alive (pooled or in use)
	closed bool
	// trim is armed while more than one instance is alive (see trimIdle);
	// idleLow is the fewest instances the pool held since the last trim.
	trim    *time.Timer
	idleLow atomic.Int32
	calls   sync.WaitGroup
	refs    refcount
}

type instance struct {
	owner  *Module
	name   string
	mod    api.Module
	input  api.Function
	handle api.Function
	mem    api.Memory
	stack  [2]uint64
	// pending is the result of the last http_request, chat,
	// count_tokens, kv_get or kv_put, until read; fields is scratch for
	// decoding their input frames.
	pending []byte
	fields  [][]byte
	// ext is set instead of mod for an Extism instance (extism.go).
	ext *extismInstance
	// stderr is what the guest wrote to stderr in the current call.
	stderr guestStderr
	// snap is a tenant's instance's state after start, which reset puts
	// back after each call (snapshot.go); nil: the instance serves one call.
	snap *snapshot
	// started is the memory's size after start: what calls grew it by is
	// measured from there (put). A module whose start fills a large
	// memory (data tables) is not a grown instance.
	started uint32
	// idleBytes is what the instance counts against its account's idle
	// budget while it waits in the pool (keepIdle).
	idleBytes int64
}

func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	if m.ext != nil {
		return m.instantiateExtism(ctx)
	}
	name := fmt.Sprintf("%s#%d", m.ID, m.engine.seq.Add(1))
	// No file system, environment, arguments or real clocks: a module only
	// computes. wazero's defaults for clocks and randomness are fake and
	// deterministic, which also makes modules reproducible.
	in := &instance{owner: m, name: name}
	cfg := wazero.NewModuleConfig().
		WithName(name).
		WithStartFunctions(abi.ExportInit).
		WithStderr(&in.stderr)
	if t := m.Manifest.Limits.TimeoutMS; t > 0 && m.preempt {
		// Start functions spin like hooks: the time limit stops them too
		// (wazero's own preemption watches ctx by itself).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Millisecond)
		defer cancel()
	}
	// Registered before instantiation: start functions may already call
	// host functions.
	m.engine.instances.Store(name, in)
	mod, err := m.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		m.engine.instances.Delete(name)
		return nil, err
	}
	in.mod, in.input, in.handle, in.mem = mod, mod.ExportedFunction(abi.ExportInput), mod.ExportedFunction(abi.ExportHandle), mod.Memory()
	if in.mem != nil {
		in.started = in.mem.Size()
	}
	return in, nil
}

// get takes an instance from the pool, creating one when the pool is empty
// and the module is under its cap, else waiting for one to be returned.
func (m *Module) get(ctx context.Context) (*instance, error) {
	select {
	case in := <-m.pool:
		m.noteIdle()
		return in, nil
	default:
	}
	m.idleLow.Store(0)
	m.mu.Lock()
	if m.live < m.Manifest.Limits.PoolSize {
		m.startInstance(m.live >= 1) // a second one: a burst the trim undoes
		m.mu.Unlock()
		return m.madeInstance(m.instantiate(context.Background()))
	}
	m.mu.Unlock()
	select {
	case in := <-m.pool:
		return in, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// startInstance counts in an instance about to be made, and arms the
// pool's trim if arm and it is not armed. The caller holds m.mu.
func (m *Module) startInstance(arm bool) {
	m.live++
	if arm && m.trim == nil && !m.closed {
		m.trim = time.AfterFunc(m.engine.poolTrimEvery(), m.trimIdle)
	}
}

// madeInstance returns what making an instance returned, counting it out
// again if it failed.
func (m *Module) madeInstance(in *instance, err error) (*instance, error) {
	if err != nil {
		m.mu.Lock()
		m.live--
		m.mu.Unlock()
		return nil, err
	}
	return in, nil
}

// noteIdle lowers idleLow to the number of instances left in the pool.
func (m *Module) noteIdle() {
	n := int32(len(m.pool))
	for {
		low := m.idleLow.Load()
		if n >= low || m.idleLow.CompareAndSwap(low, n) {
			return
		}
	}
}

// trimIdle shrinks the pool after a burst: the instances that stayed in
// the pool for a whole period (at ~5 MiB each) were not needed, and are
// freed, keeping one warm. It re-arms itself while more than one instance
// is alive.
func (m *Module) trimIdle() {
	spare := int(m.idleLow.Swap(int32(len(m.pool))))
	for ; spare > 0; spare-- {
		m.mu.Lock()
		keep := (m.live <= m.warm()) || m.closed
		m.mu.Unlock()
		if keep {
			break
		}
		select {
		case in := <-m.pool:
			m.dropIdle(in)
		default:
			spare = 0
		}
	}
	m.idleLow.Store(int32(len(m.pool)))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live > m.warm() && !m.closed {
		m.trim.Reset(m.engine.poolTrimEvery())
	} else {
		m.trim = nil
	}
}

// warm is how many instances a trim keeps: one of the gateway's own
// modules, none of a tenant's (an account's idle modules cost nothing).
func (m *Module) warm() int {
	if m.slots != nil {
		return 0
	}
	return 1
}

// callTimeout is one call's time limit: the manifest's timeout_ms (base)
// for an input of up to scaleInputBytes, one more base period for each
// further scaleInputBytes, and at most maxTimeoutScale periods. A module's
// limit is set for the requests it usually sees; the gateway accepts
// bodies up to 10 MB, on which a linear module needs proportionally more
// (100,000 messages through context-compression) — while a module that
// loops still stops, at the ceiling.
func callTimeout(base time.Duration, input int) time.Duration {
	if base <= 0 {
		return 0
	}
	return base * time.Duration(min(1+input/scaleInputBytes, maxTimeoutScale))
}

const (
	scaleInputBytes = 1 << 20
	maxTimeoutScale = 8
)

// maxPooledMemory bounds how much calls may grow the memory of an idle
// pooled instance past its size after start. wazero
// cannot shrink a memory, so one call on a huge request (a 10 MB body
// through context-compression) would otherwise leave its instance holding
// what it grew to for as long as the pool keeps it: modules may be given
// room for the largest request the gateway accepts without that room
// staying taken.
const maxPooledMemory = 64 << 20

func (m *Module) put(in *instance) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed || in.mem != nil && in.snap == nil && in.mem.Size()-in.started > maxPooledMemory {
		m.discard(in)
		return
	}
	m.pool <- in // never blocks: at most PoolSize instances exist
}

func (m *Module) discard(in *instance) {
	in.close()
	m.mu.Lock()
	m.live--
	m.mu.Unlock()
}

func (in *instance) close() {
	if in.ext != nil {
		_ = in.ext.p.Close(context.Background())
	} else {
		in.owner.engine.instances.Delete(in.name)
		_ = in.mod.Close(context.Background())
	}
}

// Close waits for calls in flight, then frees the instances and the compiled
// code. Calls after Close fail.
func (m *Module) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	if m.trim != nil {
		m.trim.Stop()
		m.trim = nil
	}
	m.mu.Unlock()
	m.calls.Wait()
	for {
		select {
		case in := <-m.pool:
			m.dropIdle(in)
		default:
			if m.ext != nil {
				return m.engine.closeExtismModule(ctx, m)
			}
			m.engine.removeParkable(m)
			m.loadMu.Lock() // a load in progress finishes first
			defer m.loadMu.Unlock()
			m.bin, m.fetch = nil, nil
			if m.compiled == nil {
				return nil // never loaded, or parked
			}
			m.engine.compiledN.Add(-1)
			return m.compiled.Close(ctx)
		}
	}
}

// Live reports the number of live instances, for metrics and tests.
func (m *Module) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// Output is what a hook returned.
type Output struct {
	// Fields are the caller's to keep, but for CallBorrowed's: those are
	// valid until Release.
	Fields [][]byte
	// Memory is the size in bytes of the instance's linear memory when
	// the call returned (0 when not known: a native hook, an Extism
	// module): what `syctl plugin test` prints per call.
	Memory uint32
	lease  Lease
}

// Lent reports whether the fields are lent (CallBorrowed's, until
// Release) rather than the caller's.
func (o *Output) Lent() bool { return o.lease != nil }

// Release gives back the memory CallBorrowed's fields live in; the
// fields must not be used after. It does nothing for any other output,
// and may be called more than once.
func (o *Output) Release() {
	if o != nil && o.lease != nil {
		o.lease.Release()
		o.lease, o.Fields = nil, nil
	}
}

// Field returns field i or nil.
func (o *Output) Field(i int) []byte {
	if i < 0 || i >= len(o.Fields) {
		return nil
	}
	return o.Fields[i]
}

// Account is the account that published the module ("" for the gateway's).
func (m *Module) Account() string { return m.account }

// Call runs hook with the input fields. Failures come back as *apierr.Error
// with status 502: the module is part of the path to the provider, and a
// broken one is a bad gateway for this request only. A tenant's module may
// also fail with 429 when its account is over its call slots or its minute
// of module time. The client's message names the module, the hook and a
// short reason; a trap's wasm stack trace goes to the log only.
func (m *Module) Call(ctx context.Context, hook abi.Hook, fields ...[]byte) (*Output, error) {
	return m.call(ctx, hook, false, fields)
}

// CallBorrowed is Call whose output may be lent instead of copied (a
// native hook's pooled buffers): the caller must Release it, and not use
// its fields after. For the translated upstream request, written to the
// network and then done with.
func (m *Module) CallBorrowed(ctx context.Context, hook abi.Hook, fields ...[]byte) (*Output, error) {
	return m.call(ctx, hook, true, fields)
}

func (m *Module) call(ctx context.Context, hook abi.Hook, borrow bool, fields [][]byte) (*Output, error) {
	if aerr := m.enter(hook); aerr != nil {
		return nil, aerr
	}
	defer m.leave()

	if m.ext == nil {
		// Compiled on first use (LoadLazy, or again after it parked),
		// without the request's deadline (a client that hangs up does
		// not fail the load for everyone) and before the call's time
		// limit starts: compiling a Go guest takes longer than most
		// modules' whole limit.
		if lerr := m.ensure(context.WithoutCancel(ctx)); lerr != nil {
			return nil, m.fail(hook, "does not load: "+shortReason(lerr.Error()))
		}
	}
	lim := m.engine.tenantLimits()
	meter, aerr := m.meter(ctx, lim)
	if aerr != nil {
		return nil, aerr
	}
	start := time.Now()
	if f := m.native[hook]; f != nil {
		if meter != nil {
			defer func() { meter.charge(lim, time.Since(start)) }()
		}
		return m.callNative(ctx, hook, f, fields, borrow)
	}
	timeout := m.timeout(fields)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, m.deadline(hook, timeout))
		defer cancel()
	}
	ctx, cl := m.withCallLog(ctx)
	defer m.engine.droppedNote(ctx, m, cl)
	if meter != nil || m.slots != nil {
		// Module time is the CPU time of the thread the call runs on
		// (cpu_ms_per_minute): the call keeps its thread, so a machine
		// busy with other work, which makes a call take longer, does not
		// spend an account's minute (before, wall time did, and one cold
		// start on a loaded machine could use a burst up).
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		cl.cpu = haveThreadCPU
	}
	mstart := cl.now()
	if meter != nil {
		defer func() { meter.charge(lim, cl.now()-mstart-time.Duration(cl.waited.Load())) }()
	}

	var out []byte
	var err error
	if m.slots != nil {
		out, err = m.callTenant(ctx, hook, fields, timeout)
		if ae, ok := err.(*apierr.Error); ok {
			return nil, ae
		}
	} else {
		var in *instance
		if meter != nil {
			release, aerr := m.share(ctx, hook, meter)
			if aerr != nil {
				return nil, aerr
			}
			defer release()
		}
		if in, err = m.get(ctx); err != nil {
			return nil, m.fail(hook, "no instance available: "+err.Error())
		}
		mstart = cl.now() // waiting for an instance is not module time
		out, err = m.callPooled(ctx, in, hook, fields)
	}
	o, err := m.output(ctx, hook, out, err, timeout)
	if o != nil {
		o.Memory = cl.memory
	}
	return o, err
}

// enter counts a call in, so that Close waits for it; a closed module
// takes none.
func (m *Module) enter(hook abi.Hook) *apierr.Error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return m.fail(hook, "module was unloaded")
	}
	m.calls.Add(1)
	if m.refetch != nil {
		// Under mu, which park holds: a call counted here keeps the
		// module's compiled code until it leaves.
		m.inflight.Add(1)
		m.lastCall.Store(time.Now().UnixNano())
	}
	return nil
}

// leave counts a call out (enter).
func (m *Module) leave() {
	if m.refetch != nil {
		m.lastCall.Store(time.Now().UnixNano()) // idle from the call's end
		m.inflight.Add(-1)
	}
	m.calls.Done()
}

// meter is the calling account whose module time a call of the gateway's
// own module draws on (a tenant's are metered in callTenant; a failed call
// counts too), nil when none is; a 429 when that account has none left.
func (m *Module) meter(ctx context.Context, lim TenantLimits) (*account, *apierr.Error) {
	if m.slots != nil {
		return nil, nil
	}
	meter := m.engine.meterFor(ctx)
	if meter != nil {
		if aerr := meter.check(lim); aerr != nil {
			return nil, aerr
		}
	}
	return meter, nil
}

// timeout is a guest call's time limit for this input (callTimeout).
func (m *Module) timeout(fields [][]byte) time.Duration {
	input := 0
	for _, f := range fields {
		input += len(f)
	}
	return callTimeout(time.Duration(m.Manifest.Limits.TimeoutMS)*time.Millisecond, input)
}

// withCallLog gives the call its log (what its host functions record,
// and the time they waited) in the context.
func (m *Module) withCallLog(ctx context.Context) (context.Context, *callLog) {
	cl := &callLog{acct: m.acct, lim: m.engine.cfg.Logs.withDefaults()}
	if cl.env = CallEnvFrom(ctx); cl.env == nil {
		cl.env = &cl.local
	}
	return context.WithValue(ctx, callLogKey{}, cl), cl
}

// callPooled runs the call on in, one of the module's pooled instances,
// and puts it back, or discards it when the call failed: a trapped or
// interrupted instance may hold broken state.
func (m *Module) callPooled(ctx context.Context, in *instance, hook abi.Hook, fields [][]byte) ([]byte, error) {
	out, err := in.call(ctx, hook, fields)
	if err != nil {
		m.discard(in)
	} else {
		m.put(in)
	}
	return out, err
}

// output decodes what the guest returned (a status byte, then the fields'
// frame) into the hook's Output, or the 502 the client reads: err is the
// call's failure, timeout its time limit.
func (m *Module) output(ctx context.Context, hook abi.Hook, out []byte, err error, timeout time.Duration) (*Output, error) {
	if err != nil {
		if ctx.Err() != nil && timeout > 0 {
			return nil, m.broke(hook, fmt.Sprintf("exceeded its time limit of %d ms", timeout.Milliseconds()))
		}
		m.engine.log.ErrorContext(ctx, "module trapped", "module", m.ID, "account", m.account, "hook", hook.String(), "err", err.Error())
		return nil, m.broke(hook, "trapped: "+shortReason(err.Error()))
	}
	if len(out) == 0 {
		return nil, m.fail(hook, "returned no output")
	}
	if out[0] == abi.StatusError {
		return nil, m.fail(hook, shortReason(string(out[1:])))
	}
	if out[0] != abi.StatusOK {
		return nil, m.fail(hook, fmt.Sprintf("returned unknown status %d", out[0]))
	}
	fs, err := abi.Fields(make([][]byte, 0, 4), out[1:])
	if err != nil {
		return nil, m.fail(hook, "returned a malformed frame")
	}
	return &Output{Fields: fs}, nil
}

// callTenant runs a tenant's call on an instance in the state it had
// after start: one put back after its last call (snapshot.go), or one made
// for this call and closed after it where that cannot be done. No memory
// of an earlier call, of this account or another, is readable. The call
// holds one of the account's slots and one of the module's.
func (m *Module) callTenant(ctx context.Context, hook abi.Hook, fields [][]byte, timeout time.Duration) ([]byte, error) {
	release, aerr := m.acct.admit(ctx, m.engine.tenantLimits(), timeout)
	if aerr != nil {
		return nil, aerr
	}
	// What this call starts (its chat sub-requests and their plugins)
	// runs in its slot.
	ctx = context.WithValue(ctx, slotKey{}, m.acct)
	select {
	case m.slots <- struct{}{}:
	case <-ctx.Done():
		release(0)
		return nil, m.fail(hook, "no instance available: "+ctx.Err().Error())
	}
	defer func() { <-m.slots }()
	// Module time from here (Call locked the thread: cl.now is its CPU
	// time): starting an instance runs the module's own start-up code,
	// which is the account's; waiting for a slot is not.
	cl := logOf(ctx)
	start := cl.now()
	defer func() { release(cl.now() - start - time.Duration(cl.waited.Load())) }()
	in, err := m.tenantInstance(ctx)
	if err != nil {
		return nil, err
	}
	if in.snap != nil {
		// The call and its reset on one thread: the reset reads that
		// thread's page faults to know whether the call wrote a page it
		// does not already know (memsnap's resetMemory). A call
		// blocked in a host function (http, chat) keeps its thread while
		// it waits, and Go starts another for everything else: at most
		// the accounts' concurrent_calls such threads at once.
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		in.snap.img.BeforeCall()
	}
	out, err := in.call(ctx, hook, fields)
	// A failed call may have left anything anywhere: never reused.
	if err != nil || !in.reset() || !m.keepIdle(in) {
		m.discard(in)
	}
	return out, err
}

// maxReason bounds the reason a client reads.
const maxReason = 300

// shortReason is the first line of a failure, bounded: wazero puts the wasm
// stack trace on the lines after it, and those are for the log.
func shortReason(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > maxReason {
		s = s[:maxReason] + "…"
	}
	return s
}

// deadline is the cause of a call's context when its time limit runs out
// (context.Cause): what the call's work still waiting then — a chat
// sub-request's upstream call — reports, naming the module and its limit
// instead of the request's deadline.
func (m *Module) deadline(hook abi.Hook, timeout time.Duration) *apierr.Error {
	return m.fail(hook, fmt.Sprintf("exceeded its time limit of %d ms (timeout_ms) before a call it was waiting for (a chat sub-request) was answered", timeout.Milliseconds()))
}

func (m *Module) fail(hook abi.Hook, msg string) *apierr.Error {
	return &apierr.Error{
		Status:  http.StatusBadGateway,
		Message: fmt.Sprintf("module %s failed in %s: %s", m.ID, hook, msg),
	}
}

// ErrBroke is the cause of a call whose instance trapped or ran out of
// time, as opposed to a hook that answered with an error of its own: the
// conformance kit fails a guest for the first and accepts the second.
var ErrBroke = errors.New("wasm: the call trapped or ran out of time")

// broke is fail for a call that trapped or ran out of time.
func (m *Module) broke(hook abi.Hook, msg string) *apierr.Error {
	e := m.fail(hook, msg)
	e.Cause = ErrBroke
	return e
}

var errOutOfRange = errors.New("output outside module memory")

// call copies the frame into the guest in one pass, runs the hook and copies
// the output out (guest buffers are reused by the next call).
func (in *instance) call(ctx context.Context, hook abi.Hook, fields [][]byte) ([]byte, error) {
	if in.ext != nil {
		return in.ext.call(ctx, hook, fields)
	}
	size := abi.FrameSize(fields...)
	in.stack[0] = uint64(size)
	if err := in.input.CallWithStack(ctx, in.stack[:]); err != nil {
		return nil, err
	}
	ptr := uint32(in.stack[0])
	var hdr [4]byte
	for _, f := range fields {
		binary.LittleEndian.PutUint32(hdr[:], uint32(len(f)))
		if !in.mem.Write(ptr, hdr[:]) || !in.mem.Write(ptr+4, f) {
			return nil, errors.New("input buffer outside module memory")
		}
		ptr += 4 + uint32(len(f))
	}
	in.stack[0], in.stack[1] = uint64(hook), uint64(size)
	in.stderr.reset()
	if err := in.handle.CallWithStack(ctx, in.stack[:]); err != nil {
		if line := in.stderr.line(); line != "" {
			return nil, &trapError{err: err, wrote: line}
		}
		return nil, err
	}
	r := in.stack[0]
	view, ok := in.mem.Read(uint32(r>>32), uint32(r))
	if !ok {
		return nil, errOutOfRange
	}
	if cl := logOf(ctx); cl != nil {
		cl.memory = in.mem.Size()
	}
	return append([]byte(nil), view...), nil
}

// share takes one of account a's places among this module's instances:
// an account (the operator's excepted, meterFor) runs at most half the
// pool at once, at least one, so one whose calls wait on a page that
// sends a byte a second, or on slow sub-requests, cannot hold every
// instance while other accounts' calls queue behind it (issue 31 item 4:
// eight such requests cut another tenant's web-fetch from 1,407 to 0.8
// requests a second). It waits for a place until the call's deadline,
// then answers 429.
func (m *Module) share(ctx context.Context, hook abi.Hook, a *account) (func(), *apierr.Error) {
	v, ok := m.shares.Load(a.id)
	if !ok {
		v, _ = m.shares.LoadOrStore(a.id, make(chan struct{}, max(1, m.Manifest.Limits.PoolSize/2)))
	}
	ch := v.(chan struct{})
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, apierr.New(http.StatusTooManyRequests,
			"this account already runs %d calls of %s at once (%s), its share of the module's instances; retry later", cap(ch), m.ID, hook)
	}
}
