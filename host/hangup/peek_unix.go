//go:build unix

package hangup

import (
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

const supported = true

// peekGoneNow reports whether the peer has closed or reset the socket,
// without waiting. It runs once a request: its closure and buffer are
// pooled (a closure over a result made three allocations a call).
func peekGoneNow(rc syscall.RawConn) bool {
	p := peekers.Get().(*peeker)
	err := rc.Control(p.fn)
	gone := err == nil && p.result == peekedGone
	peekers.Put(p)
	return gone
}

type peeker struct {
	fn     func(fd uintptr) // peeks into buf, sets result
	result int
	buf    [1]byte
}

var peekers = sync.Pool{New: func() any {
	p := new(peeker)
	p.fn = func(fd uintptr) { p.result = peek(int(fd), p.buf[:]) }
	return p
}}

const (
	peekedNothing = iota // nothing to read yet
	peekedGone           // end of stream, a reset, or a dead socket
	peekedData           // a pipelined request waits: the client is there
)

// peek looks at the socket without consuming or waiting; b (one byte) is
// where the peeked byte goes.
func peek(fd int, b []byte) int {
	for {
		n, _, err := unix.Recvfrom(fd, b, unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return peekedNothing
		case err != nil, n == 0:
			return peekedGone
		}
		return peekedData
	}
}

// peekGone waits until the socket is readable, or the read deadline
// passes, and reports whether the peer closed or reset it.
func peekGone(rc syscall.RawConn) bool {
	var gone bool
	var b [1]byte
	err := rc.Read(func(fd uintptr) bool {
		switch peek(int(fd), b[:]) {
		case peekedNothing:
			return false // wait in the poller
		case peekedGone:
			gone = true
		}
		return true
	})
	return err == nil && gone
}
