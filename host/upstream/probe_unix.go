//go:build unix

package upstream

import "github.com/switchyard/switchyard/host/sockio"

// peerClosed reports whether an idle connection can no longer carry a
// request: the peer closed or reset it, or sent bytes nobody asked for.
// It peeks without blocking and consumes nothing (sockio: one raw
// recv(2) on Linux, well under a microsecond).
func peerClosed(c *conn) bool {
	rc := c.rc
	if rc == nil {
		// Not a socket (nothing to peek at), or a socket without a raw
		// connection (not to be trusted).
		return c.rcErr != nil
	}
	// Control, not Read: the peek never waits for the socket to become
	// readable, so it needs the descriptor only, not the poller's read
	// lock and deadline checks.
	var b [1]byte
	state := sockio.Closed
	err := rc.Control(func(fd uintptr) { state = sockio.Peek(int(fd), b[:]) })
	return err != nil || state != sockio.Empty
}
