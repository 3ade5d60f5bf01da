package sockio

import (
	"io"
	"net"
	"os"
	"sync"
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
	// rd and wr hold a call's state for the poller's callback, made once
	// per connection: a closure per call cost four allocations a round
	// trip, and the GC's headroom follows the allocation rate
	// (host/gctune), so an open stream's share of RSS grew ~10 KB.
	rd, wr rawOp
}

// rawOp is one direction's call in flight: its buffer, what the system
// call returned, and the callback bound to it. mu serialises the calls
// of one direction (net.Conn allows concurrent Reads; the descriptor's
// own lock orders them only inside the callback).
type rawOp struct {
	mu    sync.Mutex
	b     []byte
	n     int // read: what the call read; write: how much of b is written
	errno syscall.Errno
	call  func(fd uintptr) bool
}

// run makes the calls on b through wait (the raw connection's Read or
// Write, which waits in the poller while call returns false) and returns
// what they did.
func (op *rawOp) run(b []byte, wait func(func(fd uintptr) bool) error) (int, syscall.Errno, error) {
	op.mu.Lock()
	defer op.mu.Unlock()
	op.b, op.n, op.errno = b, 0, 0
	err := wait(op.call)
	op.b = nil
	return op.n, op.errno, err
}

// New returns c reading and writing through rc, its raw connection; nil
// when raw calls are not supported here (use c itself).
func New(c net.Conn, rc syscall.RawConn) *Conn {
	if !rawSupported || rc == nil {
		return nil
	}
	conn := &Conn{Conn: c, rc: rc}
	conn.rd.call = conn.rd.readOnce
	conn.wr.call = conn.wr.writeAll
	return conn
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
	n, errno, err := c.rd.run(b, c.rc.Read)
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

// readOnce is the read callback: one read(2), or false to wait in the
// poller when there is nothing to read yet.
func (op *rawOp) readOnce(fd uintptr) bool {
	for {
		op.n, op.errno = rawRead(int(fd), op.b)
		switch op.errno {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait in the poller
		}
		return true
	}
}

func (c *Conn) Write(b []byte) (int, error) {
	written, errno, err := c.wr.run(b, c.rc.Write)
	switch {
	case err != nil:
		return written, c.opError("write", err)
	case errno != 0:
		return written, c.opError("write", os.NewSyscallError("write", errno))
	}
	return written, nil
}

// writeAll is the write callback: write(2) until all of b is written, or
// false to wait in the poller until the socket takes more.
func (op *rawOp) writeAll(fd uintptr) bool {
	for op.n < len(op.b) {
		chunk := op.b[op.n:]
		if len(chunk) > maxRW {
			chunk = chunk[:maxRW]
		}
		n, errno := rawWrite(int(fd), chunk)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			return false // wait in the poller until writable
		case errno != 0:
			op.errno = errno
			return true
		}
		op.n += n
	}
	return true
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
