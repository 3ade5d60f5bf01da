// Package writebehind is the gateway's log output: an io.Writer that
// writes a line at once when the output has been quiet, and otherwise
// gathers the lines of a busy moment into one write.
//
// Every request logs a line, and one write syscall per line was ~2% of the
// gateway's CPU at 16 clients. Batching only the lines that meet a write in
// flight does not help: a write takes a few µs and lines arrive hundreds of
// µs apart, so almost none ever meet one (measured: the syscalls stayed at
// one per line). So the rule is by time: a line that comes when nothing
// was written for linger, and nothing is pending, is written at once, as
// without the buffer (at low load nothing waits); a line that comes
// sooner joins the pending ones, which are written together linger after
// the first of them. The buffer is bounded: a line that would overfill it
// is written with the pending ones at once by its caller (backpressure:
// never unbounded growth, never a dropped line). Flush and Close write
// what is pending; a line logged after Close is written directly.
//
// Hand-written rather than a library: zap's BufferedWriteSyncer always
// buffers (written every 30 s by default, so a lone line sits in memory)
// and zerolog's diode drops lines when full; neither gives "at once when
// quiet, never lost".
package writebehind

import (
	"io"
	"sync"
	"time"
)

// Writer is an io.Writer that batches writes that come close together.
// Its methods are safe for concurrent use; lines reach out in the order
// their Writes were called.
type Writer struct {
	out    io.Writer
	max    int
	linger time.Duration

	mu      sync.Mutex
	pending []byte
	last    time.Time   // when the last write to out ended
	timer   *time.Timer // writes pending; armed while there is any
	armed   bool
	closed  bool
	err     error // the first error of a write whose caller had returned
}

// New returns a Writer on out that keeps at most max bytes pending
// (besides the line being added) and writes them at most linger after the
// first of them came.
func New(out io.Writer, max int, linger time.Duration) *Writer {
	w := &Writer{out: out, max: max, linger: linger}
	w.timer = time.AfterFunc(time.Hour, w.lingered)
	w.timer.Stop()
	return w
}

// Write writes p at once when the output has been quiet for linger (or w
// is closed) and returns out's error; otherwise it adds p to the pending
// lines and returns, writing them all first if p would overfill them.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || (len(w.pending) == 0 && time.Since(w.last) >= w.linger) {
		n, err := w.out.Write(p)
		w.last = time.Now()
		return n, err
	}
	w.pending = append(w.pending, p...)
	if len(w.pending) > w.max {
		if err := w.flushLocked(); err != nil {
			return len(p), err
		}
		return len(p), nil
	}
	if !w.armed {
		w.armed = true
		w.timer.Reset(w.linger)
	}
	return len(p), nil
}

// lingered is the timer's: the first pending line has waited linger.
func (w *Writer) lingered() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	if err := w.flushLocked(); err != nil && w.err == nil {
		w.err = err
	}
}

// flushLocked writes the pending lines, in one write.
func (w *Writer) flushLocked() error {
	if len(w.pending) == 0 {
		return nil
	}
	_, err := w.out.Write(w.pending)
	w.last = time.Now()
	w.pending = w.pending[:0]
	if cap(w.pending) > 2*w.max { // grown by one huge line: not kept
		w.pending = nil
	}
	return err
}

// Flush writes the pending lines now. It returns the first error a write
// met since the last Flush, including one whose caller had returned.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushErrLocked()
}

func (w *Writer) flushErrLocked() error {
	err := w.flushLocked()
	if err == nil {
		err = w.err
	}
	w.err = nil
	return err
}

// Close flushes; later writes go straight to out, so a line logged after
// Close (a goroutine finishing late) is not lost.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.timer.Stop()
	return w.flushErrLocked()
}
