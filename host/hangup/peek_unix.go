//go:build unix

package hangup

import (
	"syscall"

	"golang.org/x/sys/unix"
)

const supported = true

// peekGone waits until the socket is readable, or the read deadline
// passes, and reports whether the peer closed or reset it.
func peekGone(rc syscall.RawConn) bool {
	var gone bool
	var b [1]byte
	err := rc.Read(func(fd uintptr) bool {
		for {
			n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false // nothing yet: wait in the poller
			case err != nil: // a reset, or the socket is dead
				gone = true
			case n == 0: // end of stream: the client closed
				gone = true
			}
			return true // n > 0: a pipelined request waits; the client is there
		}
	})
	return err == nil && gone
}
