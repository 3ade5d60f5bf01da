// Package datasync makes a file's data durable (fdatasync(2)) without
// holding a P of the Go scheduler while the disk works.
//
// The settlement journal syncs its segment every few milliseconds under
// load. A plain fdatasync is a system call that blocks for the disk's
// flush (0.3 ms on the development VM, far more on a busy disk), and the
// runtime treats a thread blocked in a system call by taking its P away
// (a hand-off to another thread, which must be woken) and by keeping its
// monitor thread polling every 20 µs for the next millisecond and more:
// every sync restarts that, and it cost 1.5 µs of a 58 µs request at 16
// clients (docs/performance.md, 2026-12-01).
//
// On Linux a Syncer hands the fdatasync — and the write before it, when
// there is one (WriteDatasync: a linked chain) — to io_uring: the kernel
// runs them on a worker thread of its own and signals an eventfd, which
// the goroutine waits on in the runtime's network poller like any socket. Where io_uring
// is not available (an old kernel, a seccomp profile that refuses it,
// kernel.io_uring_disabled), or fails, it is a plain fdatasync.
package datasync

import (
	"os"
	"sync"
)

// Syncer syncs files' data. Its ring takes one sync at a time; a sync
// asked for while another is in it is a plain fdatasync rather than a
// wait (the journal's flusher must not queue behind the sync of a
// segment being recycled).
type Syncer struct {
	mu   sync.Mutex
	ring *ring // nil: plain fdatasync
}

// New returns a Syncer using io_uring when the system offers it.
func New() *Syncer {
	r, err := newRing()
	if err != nil {
		return &Syncer{}
	}
	return &Syncer{ring: r}
}

// Async reports whether syncs go through io_uring.
func (s *Syncer) Async() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring != nil
}

// Datasync makes f's data durable, as fdatasync(2).
func (s *Syncer) Datasync(f *os.File) error { return s.WriteDatasync(f, nil, 0) }

// WriteDatasync writes b (if any) at off in f, then makes f's data
// durable: as f.WriteAt and fdatasync(2), in one round trip to the
// kernel's worker when the ring is used — the write does not hold a P
// either.
func (s *Syncer) WriteDatasync(f *os.File, b []byte, off int64) error {
	if s.mu.TryLock() {
		if r := s.ring; r != nil {
			n, err := r.writeDatasync(f, b, off)
			s.mu.Unlock()
			if err != nil || n == len(b) {
				return err
			}
			// Cut short (the sync was cancelled with it): the rest, then
			// the sync.
			b, off = b[n:], off+int64(n)
		} else {
			s.mu.Unlock()
		}
	}
	if len(b) > 0 {
		if _, err := f.WriteAt(b, off); err != nil {
			return err
		}
	}
	return fdatasync(f)
}

// Close releases the ring; later syncs are plain fdatasyncs.
func (s *Syncer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring == nil {
		return nil
	}
	err := s.ring.close()
	s.ring = nil
	return err
}
