// Package sockio reads, writes and peeks at sockets with raw system
// calls.
//
// Every request makes a handful of socket calls: it reads the client's
// request, writes the upstream's, reads the upstream's answer, writes the
// client's, and peeks twice (is the client still there, has the upstream
// closed this pooled connection). The sockets are non-blocking, so none
// of these calls can block, yet net.Conn enters each through the
// runtime's syscall bookkeeping, made for calls that may. That costs a
// gateway twice: with every P idle (between requests) entering a system
// call wakes the runtime's monitor thread, a futex wake and a context
// switch; and under load a write that runs the loopback receive path
// inline can last long enough for the monitor to hand the P to another
// thread and to keep polling every 20 µs. A raw call is, to the
// scheduler, ordinary running code. Measured in docs/performance.md
// (2026-12-01): at one client the gateway's CPU a request fell by a
// fifth.
package sockio

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
