//go:build !unix

package upstream

import "net"

// peerClosed cannot peek on this platform: a closed idle connection is
// found by the request written to it.
func peerClosed(net.Conn) bool { return false }
