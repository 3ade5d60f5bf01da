// Package writebehind is the gateway's log output: an io.Writer whose
// writes are copied into a buffer and written to the underlying writer by
// one goroutine, which writes everything that arrived while its previous
// write was in flight as one write.
//
// Every request logs a line, and one write syscall per line was ~2% of the
// gateway's CPU at 16 clients. slog's handlers hold their lock across
// Write, so batching has to happen behind Write rather than in front of
// it. There is no timer: a line that arrives while the goroutine is idle is
// written at once, so at low load nothing waits. The buffer is bounded (a
// writer waits for room: backpressure, never unbounded growth, never a
// dropped line), and Flush/Close wait until every accepted line is written.
//
// Hand-written rather than a library: zap's BufferedWriteSyncer flushes on
// a timer (30 s by default, so lines sit in memory at low load) and
// zerolog's diode drops lines when full; neither matches "no delay, no
// loss".
package writebehind

import (
	"io"
	"sync"
)

// Writer is an io.Writer that writes behind its callers. Its methods are
// safe for concurrent use.
type Writer struct {
	out io.Writer
	max int

	mu      sync.Mutex
	changed sync.Cond // pending was taken (room) or the goroutine went idle
	pending []byte
	spare   []byte // the previous batch's buffer, reused
	busy    bool   // pending is non-empty or being written: the goroutine owns it
	closed  bool
	err     error // the first error out returned
	wake    chan struct{}
	done    chan struct{}
}

// New starts a Writer on out that holds at most max bytes not yet written
// (a single longer write is still accepted once the buffer is empty).
func New(out io.Writer, max int) *Writer {
	w := &Writer{out: out, max: max, wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.changed.L = &w.mu
	go w.run()
	return w
}

// Write copies p into the buffer and returns; it waits only while the
// buffer is full. After Close it writes p through to out.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	for !w.closed && len(w.pending) > 0 && len(w.pending)+len(p) > w.max {
		w.changed.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		return w.out.Write(p)
	}
	w.pending = append(w.pending, p...)
	kick := !w.busy
	w.busy = true
	w.mu.Unlock()
	if kick {
		// busy gates the kicks: at most one is outstanding, so this never
		// blocks.
		w.wake <- struct{}{}
	}
	return len(p), nil
}

func (w *Writer) run() {
	defer close(w.done)
	for range w.wake {
		w.mu.Lock()
		for len(w.pending) > 0 {
			batch := w.pending
			w.pending = w.spare[:0]
			w.changed.Broadcast()
			w.mu.Unlock()
			_, err := w.out.Write(batch)
			w.mu.Lock()
			if err != nil && w.err == nil {
				w.err = err
			}
			w.spare = nil
			if cap(batch) <= 2*w.max { // a buffer grown by one huge line is not kept
				w.spare = batch
			}
		}
		w.busy = false
		w.changed.Broadcast()
		w.mu.Unlock()
	}
}

// Flush waits until every byte written so far has been written to out,
// and returns the first error out returned.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.busy {
		w.changed.Wait()
	}
	return w.err
}

// Close flushes and stops the goroutine; later writes go straight to out,
// so a line logged after Close is not lost.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	for w.busy {
		w.changed.Wait()
	}
	w.closed = true
	w.changed.Broadcast()
	err := w.err
	w.mu.Unlock()
	close(w.wake)
	<-w.done
	return err
}
