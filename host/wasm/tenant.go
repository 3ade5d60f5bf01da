package wasm

import (
	"context"
	"net/http"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
)

// TenantLimits are the operator's ceilings for modules published by an
// account (config tenant_modules). A tenant's manifest is clamped to them at
// load; zero fields take the defaults of DefaultTenantLimits.
type TenantLimits struct {
	// TimeoutMS bounds one call. A tenant's timeout_ms of 0 (no limit)
	// or above this becomes this: account modules are always preemptible.
	TimeoutMS int
	// MemoryPages caps linear memory (64 KiB pages).
	MemoryPages uint32
	// PoolSize caps concurrent calls of one module.
	PoolSize int
	// ConcurrentCalls caps the calls of all of one account's modules in
	// flight at once. With the default (half the CPUs, at least one), one
	// tenant's spinning calls leave the other half of the cores to everyone
	// else.
	ConcurrentCalls int
	// CPUMsPerMinute is the module time (wall time of calls) one account
	// may use per minute, as a rate: its budget refills continuously at
	// this rate and holds at most one call at the time limit (or one
	// second's worth, if more). A call starts only with budget left; past
	// it, calls fail with 429 until the budget refills. This is what keeps
	// a tenant whose every call loops to its share on average, where
	// ConcurrentCalls bounds it at any instant.
	CPUMsPerMinute int64
	// IdleBytes is how much memory the idle instances of one account's
	// modules may keep between calls (each is reset to its state after
	// start and reused, saving an instantiation per call — milliseconds
	// for a Go module). Default: ConcurrentCalls instances at MemoryPages,
	// the most the account's calls can hold at once anyway, so keeping
	// them costs no more than running them; counted by each instance's
	// actual memory, so an account whose modules are small keeps one of
	// each warm instead of only ConcurrentCalls in all (until 2026-11-29,
	// two plugins of one account on 2 cores alternated one warm instance
	// and the other paid 9–16 ms per call).
	IdleBytes int64
	// CompiledIdle is how long an account's module may go uncalled
	// before its compiled code is freed (park.go); its next call
	// compiles it again from the store. Default 10 minutes; negative:
	// never. Compiled code is several MiB per module (a Go guest), so
	// without it every module an account ever activated stays in
	// memory.
	CompiledIdle time.Duration
}

// LogLimits bound what modules write to the gateway's log, per call and per
// account (the gateway's own modules share the budget of account "") per
// clock minute. Lines past a budget are dropped and counted in one
// "N lines dropped" note.
type LogLimits struct {
	BytesPerCall, LinesPerCall     int64
	BytesPerMinute, LinesPerMinute int64
}

// DefaultTenantLimits are the ceilings when the operator sets none.
func DefaultTenantLimits() TenantLimits {
	return TenantLimits{
		TimeoutMS:       500,
		MemoryPages:     512, // 32 MiB
		PoolSize:        4,
		ConcurrentCalls: max(1, goruntime.GOMAXPROCS(0)/2),
		CPUMsPerMinute:  15_000, // a quarter of one core
		CompiledIdle:    10 * time.Minute,
	}
}

// DefaultLogLimits are the log budgets when the operator sets none.
func DefaultLogLimits() LogLimits {
	return LogLimits{BytesPerCall: 16 << 10, LinesPerCall: 64, BytesPerMinute: 1 << 20, LinesPerMinute: 2000}
}

func (t TenantLimits) withDefaults() TenantLimits {
	d := DefaultTenantLimits()
	orDefault(&t.TimeoutMS, d.TimeoutMS)
	orDefault(&t.MemoryPages, d.MemoryPages)
	orDefault(&t.PoolSize, d.PoolSize)
	orDefault(&t.ConcurrentCalls, d.ConcurrentCalls)
	if t.IdleBytes <= 0 {
		t.IdleBytes = int64(t.ConcurrentCalls) * int64(t.MemoryPages) << 16
	}
	orDefault(&t.CPUMsPerMinute, d.CPUMsPerMinute)
	if t.CompiledIdle == 0 {
		t.CompiledIdle = d.CompiledIdle
	}
	return t
}

func (l LogLimits) withDefaults() LogLimits {
	d := DefaultLogLimits()
	for _, p := range []struct{ v, d *int64 }{
		{&l.BytesPerCall, &d.BytesPerCall}, {&l.LinesPerCall, &d.LinesPerCall},
		{&l.BytesPerMinute, &d.BytesPerMinute}, {&l.LinesPerMinute, &d.LinesPerMinute},
	} {
		orDefault(p.v, *p.d)
	}
	return l
}

// orDefault sets *v to d when the operator left it unset (0 or less).
func orDefault[T int | int64 | uint32](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Clamp returns the limits m runs with as a module of a tenant: each at most
// the ceiling, and a time limit always.
func (t TenantLimits) Clamp(l manifest.Limits) manifest.Limits {
	t = t.withDefaults()
	if l.TimeoutMS <= 0 || l.TimeoutMS > t.TimeoutMS {
		l.TimeoutMS = t.TimeoutMS
	}
	if l.MemoryPages == 0 || l.MemoryPages > t.MemoryPages {
		l.MemoryPages = t.MemoryPages
	}
	if l.PoolSize <= 0 || l.PoolSize > t.PoolSize {
		l.PoolSize = t.PoolSize
	}
	return l
}

// account is what the engine tracks per account: its call slots, and the
// minute its CPU time and log budgets are counted in.
type account struct {
	id    string
	slots chan struct{} // nil for the gateway's own modules
	// idleBytes is the memory of the instances of the account's modules
	// kept between calls (snapshot.go), at most TenantLimits.IdleBytes.
	idleBytes atomic.Int64

	mu       sync.Mutex
	minute   int64 // unix minute the log counters belong to
	logBytes int64
	logLines int64
	// budget is the module time left (ms, may be negative after a long
	// call), as of refilled.
	budget   float64
	refilled time.Time
}

// rollover resets the counters at a new minute. The caller holds a.mu.
func (a *account) rollover(now time.Time) {
	if m := now.Unix() / 60; m != a.minute {
		a.minute, a.logBytes, a.logLines = m, 0, 0
	}
}

func (e *Engine) accountFor(id string, tenant bool) *account {
	if v, ok := e.accounts.Load(id); ok {
		return v.(*account)
	}
	a := &account{id: id}
	if tenant {
		a.slots = make(chan struct{}, e.tenantLimits().ConcurrentCalls)
	}
	v, _ := e.accounts.LoadOrStore(id, a)
	return v.(*account)
}

func (e *Engine) tenantLimits() TenantLimits { return e.cfg.Tenants.withDefaults() }

// slotKey marks a context whose call holds a slot of the account it names
// (*account).
type slotKey struct{}

// admit takes one of the account's call slots, waiting at most wait, and
// checks its CPU budget for the minute. release gives the slot back and
// charges the call's time.
func (a *account) admit(ctx context.Context, lim TenantLimits, wait time.Duration) (release func(time.Duration), err *apierr.Error) {
	if err := a.check(lim); err != nil {
		return nil, err
	}
	if held, _ := ctx.Value(slotKey{}).(*account); held == a {
		// Called from within a call of this account (a plugin's chat
		// sub-request running the account's plugins): it runs in the
		// caller's slot, which waits for it — waiting for another slot
		// would wait for the caller itself (before: 429 with one slot).
		// Its time is within the caller's, which is charged for it; the
		// budget is checked all the same.
		return func(time.Duration) {}, nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
	case <-t.C:
		return nil, apierr.New(http.StatusTooManyRequests, "this account already runs %d plugin calls at once (the operator's limit); retry later", lim.ConcurrentCalls)
	case <-ctx.Done():
		return nil, apierr.New(http.StatusTooManyRequests, "this account already runs %d plugin calls at once (the operator's limit)", lim.ConcurrentCalls)
	}
	return func(d time.Duration) {
		<-a.slots
		a.charge(lim, d)
	}, nil
}

// check refuses a call (429) while the account's module time is spent.
func (a *account) check(lim TenantLimits) *apierr.Error {
	a.mu.Lock()
	left := a.refill(lim, time.Now())
	a.mu.Unlock()
	if left > 0 {
		return nil
	}
	rate := float64(lim.CPUMsPerMinute) / 60_000 // ms of budget per ms
	e := apierr.New(http.StatusTooManyRequests, "this account's plugins used their module time (%d ms per minute, the operator's limit); retry later", lim.CPUMsPerMinute)
	e.Metadata = map[string]any{"retry_after_seconds": int64(-left/rate/1000) + 1}
	return e
}

// charge takes d of module time from the account's budget.
func (a *account) charge(lim TenantLimits, d time.Duration) {
	a.mu.Lock()
	a.refill(lim, time.Now())
	a.budget -= float64(max(d, 0)) / float64(time.Millisecond)
	a.mu.Unlock()
}

// meterFor is the account a call of one of the gateway's own modules is
// metered against (issue 31 item 1): the calling request's account, whose
// module-time budget its own plugins draw on too — so a request that makes
// the file-parser or moderation work for seconds spends its account's
// minute, not everyone's — unless the operator's (Config.Unmetered), or
// the call runs inside a call of that account's own plugin, whose time
// already counts it. nil: not metered.
func (e *Engine) meterFor(ctx context.Context) *account {
	env := CallEnvFrom(ctx)
	if env == nil || env.Account == "" || (e.cfg.Unmetered != nil && e.cfg.Unmetered(env.Account)) {
		return nil
	}
	a := e.accountFor(env.Account, true)
	if held, _ := ctx.Value(slotKey{}).(*account); held == a {
		return nil
	}
	return a
}

// refill adds the budget earned since the last refill and returns what is
// left. The caller holds a.mu.
func (a *account) refill(lim TenantLimits, now time.Time) float64 {
	burst := float64(max(int64(lim.TimeoutMS), lim.CPUMsPerMinute/60))
	if a.refilled.IsZero() {
		a.budget = burst
	} else {
		a.budget = min(burst, a.budget+float64(now.Sub(a.refilled))/float64(time.Millisecond)*float64(lim.CPUMsPerMinute)/60_000)
	}
	a.refilled = now
	return a.budget
}

// callLog is one call's state the host functions read: its log budget and
// what it dropped, and the request's env (the caller's, or local when the
// caller set none).
type callLog struct {
	env     *CallEnv
	local   CallEnv
	acct    *account
	lim     LogLimits
	bytes   int64
	lines   int64
	dropped atomic.Int64
	// waited is the module time (ns, on the call's clock: now) the call
	// spent in host functions that wait on the network or a sub-request
	// (http, chat, embed): not module time, which the account's budget
	// counts.
	waited atomic.Int64
	// cpu says the call's goroutine is locked to its OS thread and now
	// reads that thread's CPU time (threadCPU); otherwise the wall clock.
	cpu bool
	// memory is the instance's memory size when the call returned
	// (Output.Memory), written by the call's own goroutine.
	memory uint32
}

// now reads the call's module-time clock: the CPU time of its thread
// when the call holds it (cpu), else the wall clock. Only differences
// of readings of one call mean anything.
func (c *callLog) now() time.Duration {
	if c.cpu {
		if t, ok := threadCPU(); ok {
			return t
		}
	}
	return time.Since(clockEpoch)
}

// clockEpoch is the wall clock's zero for callLog.now (monotonic).
var clockEpoch = time.Now()

// haveThreadCPU says the platform has a per-thread CPU clock: asked once,
// not with a system call at the start of every metered call.
var haveThreadCPU = func() bool { _, ok := threadCPU(); return ok }()

// clockOf reads the module-time clock of the call ctx belongs to (zero
// outside a call): what waitedSince takes.
func clockOf(ctx context.Context) time.Duration {
	if c := logOf(ctx); c != nil {
		return c.now()
	}
	return 0
}

// waitedSince adds the module time since start (clockOf) to the wait of
// the call ctx belongs to: on the CPU clock, the host's own work in a
// sub-request run on the call's thread; on the wall clock, the whole
// wait.
func waitedSince(ctx context.Context, start time.Duration) {
	if c := logOf(ctx); c != nil {
		c.waited.Add(int64(c.now() - start))
	}
}

// allow reports whether a line of n bytes may be written, charging it to
// the call's and the account's budgets.
func (c *callLog) allow(n int) bool {
	if c.lines+1 > c.lim.LinesPerCall || c.bytes+int64(n) > c.lim.BytesPerCall {
		c.dropped.Add(1)
		return false
	}
	a := c.acct
	a.mu.Lock()
	a.rollover(time.Now())
	ok := a.logLines+1 <= c.lim.LinesPerMinute && a.logBytes+int64(n) <= c.lim.BytesPerMinute
	if ok {
		a.logLines++
		a.logBytes += int64(n)
	}
	a.mu.Unlock()
	if !ok {
		c.dropped.Add(1)
		return false
	}
	c.lines++
	c.bytes += int64(n)
	return true
}

type callLogKey struct{}

// logOf finds the log budget of the call ctx belongs to.
func logOf(ctx context.Context) *callLog {
	c, _ := ctx.Value(callLogKey{}).(*callLog)
	return c
}

// droppedNote logs one line for the lines a call dropped.
func (e *Engine) droppedNote(ctx context.Context, m *Module, c *callLog) {
	if n := c.dropped.Load(); n > 0 {
		e.log.WarnContext(ctx, strconv.FormatInt(n, 10)+" lines dropped (module log budget)", "module", m.ID, "account", m.account)
	}
}
