//go:build linux

package netguard

import (
	"net"

	"golang.org/x/sys/unix"
)

// unreadData reports whether the client has sent bytes the server has not
// read (SIOCINQ): only then would a plain close send a reset.
func unreadData(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return true
	}
	n := 1
	if cerr := rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ); err == nil {
			n = v
		}
	}); cerr != nil {
		return true
	}
	return n > 0
}
