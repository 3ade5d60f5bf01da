//go:build unix

package hangup

import (
	"syscall"

	"golang.org/x/sys/unix"
)

const supported = true

// peekGoneNow reports whether the peer has closed or reset the socket,
// without waiting.
func peekGoneNow(rc syscall.RawConn) bool {
	var gone bool
	err := rc.Control(func(fd uintptr) { gone = peek(int(fd)) == peekedGone })
	return err == nil && gone
}

const (
	peekedNothing = iota // nothing to read yet
	peekedGone           // end of stream, a reset, or a dead socket
	peekedData           // a pipelined request waits: the client is there
)

// peek looks at the socket without consuming or waiting.
func peek(fd int) int {
	var b [1]byte
	for {
		n, _, err := unix.Recvfrom(fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
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
	err := rc.Read(func(fd uintptr) bool {
		switch peek(int(fd)) {
		case peekedNothing:
			return false // wait in the poller
		case peekedGone:
			gone = true
		}
		return true
	})
	return err == nil && gone
}
