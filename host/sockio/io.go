package sockio

import (
	"io"
	"net"
	"os"
	"syscall"
)

// Conn reads and writes a socket with raw read(2) and write(2) calls made
// from its poller callbacks (syscall.RawConn's Read and Write): the
// socket is non-blocking, so a call returns at once, and when it would
// block (EAGAIN) the goroutine waits in the runtime's poller exactly as
// net.Conn's own Read and Write do, deadlines included.
//
// Why not net.Conn's own: see the package comment.
//
// Errors are those of net.Conn: io.EOF at the end of the stream, the
// deadline's os.ErrDeadlineExceeded, others in a *net.OpError.
type Conn struct {
	net.Conn
	rc syscall.RawConn
}

// New returns c reading and writing through rc, its raw connection; nil
// when raw calls are not supported here (use c itself).
func New(c net.Conn, rc syscall.RawConn) *Conn {
	if !rawSupported || rc == nil {
		return nil
	}
	return &Conn{Conn: c, rc: rc}
}

// NetConn returns the wrapped connection.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// SyscallConn returns the socket's raw connection, the same one every
// time.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// maxRW caps one call, as internal/poll does: some systems refuse larger
// reads and writes.
const maxRW = 1 << 30

func (c *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if len(b) > maxRW {
		b = b[:maxRW]
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			n, errno = rawRead(int(fd), b)
			switch errno {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller
			}
			return true
		}
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *Conn) Write(b []byte) (int, error) {
	written := 0
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for written < len(b) {
			chunk := b[written:]
			if len(chunk) > maxRW {
				chunk = chunk[:maxRW]
			}
			var n int
			n, errno = rawWrite(int(fd), chunk)
			switch {
			case errno == syscall.EINTR:
				continue
			case errno == syscall.EAGAIN:
				errno = 0
				return false // wait in the poller until writable
			case errno != 0:
				return true
			}
			written += n
		}
		return true
	})
	switch {
	case err != nil:
		return written, c.opError("write", err)
	case errno != 0:
		return written, c.opError("write", os.NewSyscallError("write", errno))
	}
	return written, nil
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
