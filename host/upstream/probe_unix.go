//go:build unix

package upstream

import "syscall"

// peerClosed reports whether an idle connection can no longer carry a
// request: the peer closed or reset it, or sent bytes nobody asked for.
// It peeks without blocking (one recv(2) with MSG_PEEK|MSG_DONTWAIT, about
// a microsecond) and consumes nothing.
func peerClosed(c *conn) bool {
	rc := c.rc
	if rc == nil {
		// Not a socket (nothing to peek at), or a socket without a raw
		// connection (not to be trusted).
		return c.rcErr != nil
	}
	closed := false
	var b [1]byte
	err := rc.Read(func(fd uintptr) bool {
		for {
			n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
				closed = false // open, nothing to read: the idle state
			default:
				closed = err != nil || n >= 0 // an error, EOF (0) or stray bytes
			}
			return true
		}
	})
	return closed || err != nil
}
