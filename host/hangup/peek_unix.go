//go:build unix

package hangup

import (
	"sync"
	"syscall"

	"github.com/switchyard/switchyard/host/sockio"
)

const supported = true

// peekGoneNow reports whether the peer has closed or reset the socket,
// without waiting. It runs once a request: its closure and buffer are
// pooled (a closure over a result made three allocations a call).
func peekGoneNow(rc syscall.RawConn) bool {
	p := peekers.Get().(*peeker)
	err := rc.Control(p.fn)
	gone := err == nil && p.result == sockio.Closed
	peekers.Put(p)
	return gone
}

type peeker struct {
	fn     func(fd uintptr) // peeks into buf, sets result
	result sockio.State
	buf    [1]byte
}

var peekers = sync.Pool{New: func() any {
	p := new(peeker)
	p.fn = func(fd uintptr) { p.result = sockio.Peek(int(fd), p.buf[:]) }
	return p
}}

// peekGone waits until the socket is readable, or the read deadline
// passes, and reports whether the peer closed or reset it.
func peekGone(rc syscall.RawConn) bool {
	var gone bool
	var b [1]byte
	err := rc.Read(func(fd uintptr) bool {
		switch sockio.Peek(int(fd), b[:]) {
		case sockio.Empty:
			return false // wait in the poller
		case sockio.Closed:
			gone = true
		}
		return true
	})
	return err == nil && gone
}
