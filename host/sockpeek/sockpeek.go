// Package sockpeek looks at a socket's receive queue without consuming it
// and without waiting: one recv(2) with MSG_PEEK|MSG_DONTWAIT.
//
// Two per-request checks use it — is the client still there (hangup), has
// the upstream closed this pooled connection (upstream) — so its cost is
// on every request. On Linux it is a raw system call: a call that cannot
// block needs none of the runtime's system-call bookkeeping, and that
// bookkeeping is not free. When every P is idle (a gateway waiting on the
// network between requests) entering a system call wakes the runtime's
// monitor thread, a futex wake and a context switch, measured at about
// 3 µs of a 140 µs request at one client (docs/performance.md).
package sockpeek

// State is what a peek found.
type State int

const (
	// Empty: the socket is open and has nothing to read.
	Empty State = iota
	// Closed: end of stream, a reset, or a socket that cannot be read.
	Closed
	// Data: bytes are waiting (the byte peeked is in the caller's buffer).
	Data
)

// Peek looks at fd; b (at least one byte) receives the byte peeked.
func Peek(fd int, b []byte) State {
	for {
		n, err := recvPeek(fd, b)
		switch {
		case err == errIntr:
			continue
		case err == errAgain:
			return Empty
		case err != nil, n == 0:
			return Closed
		}
		return Data
	}
}
