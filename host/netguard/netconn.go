package netguard

import "net"

// NetConn returns the wrapped connection (as crypto/tls.Conn does), so a
// handler can reach the socket, e.g. to notice a client that hung up
// (host/hangup).
func (c *lingerConn) NetConn() net.Conn { return c.Conn }

// NetConn returns the wrapped connection.
func (c *conn) NetConn() net.Conn { return c.Conn }
