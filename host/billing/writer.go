package billing

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/store"
)

// writer is the ledger's single bbolt writer. Operations are queued in
// order and committed in groups: while one transaction is being fsynced,
// the next operations accumulate and share the following commit. Order is
// FIFO, so a reservation is always written before its checkpoint and its
// settlement.
//
// An operation must be a pure function of the transaction's state (it
// applies deltas, never copies of memory), because it runs again in a
// transaction of its own when the group it was in fails.
type writer struct {
	db     store.DB
	logf   func(string, ...any)
	mu     sync.Mutex
	closed bool
	queue  []op
	spare  []op
	// flushing is the group being committed, until its commit is done:
	// with queue, what pending looks through.
	flushing []op
	wake     chan struct{}
	urgent   chan struct{} // an operation someone waits on was queued
	quit     chan struct{}
	// window is how long a commit waits for more operations when nobody is
	// waiting on any of the queued ones: one fsync then covers many
	// requests instead of one each (it costs CPU and I/O that the requests
	// in flight compete with). Zero commits at once.
	window time.Duration
	exited chan struct{}
	// observe, when set, is told each group commit's size and time
	// (metrics).
	observe atomic.Pointer[func(ops int, d time.Duration)]
	// Loop goroutine only: consecutive unavailable-store failures, and
	// when closing began.
	fails   int
	closing time.Time
	settled map[string]struct{} // holds the group being committed settles
}

type op struct {
	fn   func(store.Tx) error
	done chan error // nil: nobody waits (the write's absence is harmless)
	// reads, when set, appends the values fn will read: a store whose
	// reads are round trips (PostgreSQL) fetches a whole group's in one
	// (store.Prefetch) instead of one or more per operation.
	reads func([]store.Ref) []store.Ref
	// hold names the hold record fn writes, settles the one it settles
	// (and deletes). A group that settles a hold skips the writes of that
	// hold: in one transaction they would be undone by the settlement
	// anyway (a request answered within the commit window — most JSON
	// requests — never writes its hold record).
	hold, settles string
	// gen is the record a settlement writes (with settles): until it is
	// committed, the ledger answers reads of it from here (pending).
	gen *Generation
	// journaled is the journal segment holding the settlement (journal.go),
	// told once the store has committed it.
	journaled *segment
}

func newWriter(db store.DB, logf func(string, ...any), window time.Duration) *writer {
	w := &writer{db: db, logf: logf, window: window, wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1),
		quit: make(chan struct{}), exited: make(chan struct{})}
	go w.loop()
	return w
}

func (w *writer) submit(o op) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, o)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	if o.done != nil {
		select {
		case w.urgent <- struct{}{}:
		default:
		}
	}
	return true
}

// do queues fn and waits until it is committed (durable) or has failed.
func (w *writer) do(fn func(store.Tx) error) error { return w.doOp(op{fn: fn}) }

// doOp is do for an operation that says what it reads or which hold it
// writes or settles (op).
func (w *writer) doOp(o op) error {
	o.done = make(chan error, 1)
	if !w.submit(o) {
		return ErrClosed
	}
	return <-o.done
}

// async queues fn without waiting.
func (w *writer) async(fn func(store.Tx) error) { w.submit(op{fn: fn}) }

// sync waits until everything queued before it is committed. With nothing
// queued or being committed it returns at once: an empty commit would
// still cost the store two fsyncs, and readers call sync before they read.
func (w *writer) sync() error {
	w.mu.Lock()
	idle := len(w.queue) == 0 && w.flushing == nil && !w.closed
	w.mu.Unlock()
	if idle {
		return nil
	}
	return w.do(func(store.Tx) error { return nil })
}

func (w *writer) loop() {
	defer close(w.exited)
	for {
		select {
		case <-w.wake:
			if w.window > 0 {
				t := time.NewTimer(w.window)
				select {
				case <-t.C:
				case <-w.urgent:
				case <-w.quit:
				}
				t.Stop()
			}
		case <-w.quit:
			w.mu.Lock()
			w.closed = true
			w.mu.Unlock()
			for w.flush() {
			}
			return
		}
		w.flush()
	}
}

// flush commits what is queued and reports whether there was anything.
func (w *writer) flush() bool {
	w.mu.Lock()
	// Two buffers alternate: the queue being filled and the batch being
	// committed; spare is handed over once so they never share an array.
	batch := w.queue
	w.queue, w.spare = w.spare[:0], nil
	if len(batch) > 0 {
		w.flushing = batch // in the same critical section: see sync
	}
	w.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	start := time.Now()
	err := w.commit(batch)
	if f := w.observe.Load(); f != nil {
		(*f)(len(batch), time.Since(start))
	}
	if err != nil && errors.Is(err, store.ErrUnavailable) && w.retrying() {
		w.keepForRetry(batch, err)
		return true
	}
	w.fails = 0
	var errs []error
	if err != nil {
		// One operation (or the commit) failed and the group was rolled
		// back: run each alone so one failure does not fail the others.
		errs = make([]error, len(batch))
		for i, o := range batch {
			errs[i] = w.db.Update(o.fn)
			if o.done == nil && errs[i] != nil && w.logf != nil {
				w.logf("billing: background write failed: %v", errs[i])
			}
		}
	}
	// The batch is in the store now: it stops being pending before anyone
	// waiting on it is answered, so a sync that waiter calls next finds the
	// writer idle rather than committing nothing.
	w.mu.Lock()
	w.flushing = nil
	w.mu.Unlock()
	for i, o := range batch {
		if o.journaled != nil && (errs == nil || errs[i] == nil) {
			o.journaled.committed()
		}
		if o.done != nil {
			if errs != nil {
				o.done <- errs[i]
			} else {
				o.done <- nil
			}
		}
	}
	clear(batch)
	w.mu.Lock()
	w.spare = batch[:0]
	w.mu.Unlock()
	return true
}

// commit runs batch in one transaction. An operation on a hold that an
// operation of the same batch settles is skipped: the settlement is its
// final word.
func (w *writer) commit(batch []op) error {
	clear(w.settled)
	for _, o := range batch {
		if o.settles != "" {
			if w.settled == nil {
				w.settled = map[string]struct{}{}
			}
			w.settled[o.settles] = struct{}{}
		}
	}
	skip := func(o *op) bool {
		if o.hold == "" || len(w.settled) == 0 {
			return false
		}
		_, ok := w.settled[o.hold]
		return ok
	}
	return w.db.Update(func(tx store.Tx) error {
		if _, ok := tx.(store.Prefetcher); ok {
			var refs []store.Ref
			for i := range batch {
				if o := &batch[i]; o.reads != nil && !skip(o) {
					refs = o.reads(refs)
				}
			}
			store.Prefetch(tx, refs)
		}
		g := groupTx{Tx: tx}
		for i := range batch {
			if o := &batch[i]; !skip(o) {
				if err := o.fn(&g); err != nil {
					return err
				}
			}
		}
		return g.writeBack()
	})
}

// keepForRetry answers the batch's waiters with err and queues again, in
// order, the writes nobody waits on, then wakes the writer after a backoff.
func (w *writer) keepForRetry(batch []op, err error) {
	// The store cannot be reached (a shared store's outage): nothing in
	// the group can commit now. Those waiting get the error; the
	// writes nobody waits on — settlements acknowledged from memory —
	// stay queued, in order, and are retried until the store is back,
	// so an outage delays them and loses none. Each operation is safe
	// to run again (see the type's comment) should the lost commit have
	// gone through after all.
	var keep []op
	for _, o := range batch {
		if o.done != nil {
			o.done <- err
		} else {
			keep = append(keep, o)
		}
	}
	w.mu.Lock()
	w.queue = append(keep, w.queue...)
	w.flushing = nil
	w.mu.Unlock()
	if w.logf != nil {
		w.logf("billing: store unavailable, %d writes kept for retry: %v", len(keep), err)
	}
	select {
	case <-time.After(w.backoff()):
	case <-w.quit:
	}
	// Retry even if nothing new is submitted.
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pending returns the record of the settlement of id that is queued or
// being committed, nil when there is none. The caller must not modify it.
// A read that misses the store looks here (then in the store again, for
// a commit that ended in between), so the record a response was answered
// with is readable at once, not one commit window later. It scans the
// queue (a commit window of writes, a few thousand at most) under the
// lock that submit takes; only a read that missed the store pays for it.
func (w *writer) pending(id string) *Generation {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, group := range [2][]op{w.queue, w.flushing} {
		for i := len(group) - 1; i >= 0; i-- {
			if o := &group[i]; o.gen != nil && o.settles == id {
				return o.gen
			}
		}
	}
	return nil
}

// backoff is the pause before retrying after consecutive failures:
// 100 ms doubling to 2 s.
func (w *writer) backoff() time.Duration {
	w.fails++
	return min(100*time.Millisecond<<min(w.fails-1, 5), 2*time.Second)
}

// retrying reports whether writes that cannot reach the store are kept:
// always while running, and for closeGrace after Close began.
func (w *writer) retrying() bool {
	select {
	case <-w.quit:
	default:
		return true
	}
	if w.closing.IsZero() {
		w.closing = time.Now()
	}
	return time.Since(w.closing) < closeGrace
}

// closeGrace bounds how long Close waits for an unreachable store before
// the writes still queued are given up (logged).
const closeGrace = 10 * time.Second

// close commits everything queued and stops the writer.
func (w *writer) close() {
	close(w.quit)
	<-w.exited
}
