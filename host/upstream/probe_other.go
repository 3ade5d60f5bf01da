//go:build !unix

package upstream

// peerClosed cannot peek on this platform: a closed idle connection is
// found by the request written to it.
func peerClosed(*conn) bool { return false }
