//go:build linux

package sockio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// rawPair returns a loopback connection read and written raw (client) and
// its other end as net.Conn (server).
func rawPair(t *testing.T) (*Conn, *net.TCPConn) {
	t.Helper()
	c, s := pair(t)
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw := New(c, rc)
	if raw == nil {
		t.Fatal("New = nil on Linux")
	}
	return raw, s
}

// TestConnAsNetConn checks that a raw connection reads and writes, and
// fails, the way net.Conn does: callers (fasthttp, the upstream
// transport) tell the end of a stream, a deadline and a reset apart by
// those errors.
func TestConnAsNetConn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		run   func(t *testing.T, c *Conn, s *net.TCPConn) error
		check func(error) bool
		want  string
	}{
		{"read what the peer wrote", func(t *testing.T, c *Conn, s *net.TCPConn) error {
			go s.Write([]byte("hello"))
			b := make([]byte, 5)
			if _, err := io.ReadFull(c, b); err != nil {
				return err
			}
			if string(b) != "hello" {
				t.Fatalf("read %q", b)
			}
			return nil
		}, func(err error) bool { return err == nil }, "no error"},
		{"zero-length read", func(t *testing.T, c *Conn, _ *net.TCPConn) error {
			n, err := c.Read(nil)
			if n != 0 {
				t.Fatalf("n = %d", n)
			}
			return err
		}, func(err error) bool { return err == nil }, "no error, at once"},
		{"end of stream", func(t *testing.T, c *Conn, s *net.TCPConn) error {
			s.Close()
			_, err := c.Read(make([]byte, 8))
			return err
		}, func(err error) bool { return err == io.EOF }, "io.EOF itself"},
		{"read deadline", func(t *testing.T, c *Conn, _ *net.TCPConn) error {
			c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			_, err := c.Read(make([]byte, 8))
			return err
		}, func(err error) bool {
			var ne net.Error
			return errors.Is(err, os.ErrDeadlineExceeded) && errors.As(err, &ne) && ne.Timeout()
		}, "os.ErrDeadlineExceeded, a timeout"},
		{"peer reset", func(t *testing.T, c *Conn, s *net.TCPConn) error {
			s.SetLinger(0)
			s.Close()
			time.Sleep(20 * time.Millisecond)
			_, err := c.Read(make([]byte, 8))
			return err
		}, func(err error) bool {
			var oe *net.OpError
			return errors.Is(err, syscall.ECONNRESET) && errors.As(err, &oe) && oe.Op == "read"
		}, "ECONNRESET in a *net.OpError"},
		{"closed here", func(t *testing.T, c *Conn, _ *net.TCPConn) error {
			c.Close()
			_, err := c.Write([]byte("x"))
			return err
		}, func(err error) bool { return errors.Is(err, net.ErrClosed) }, "net.ErrClosed"},
		{"write deadline with the peer not reading", func(t *testing.T, c *Conn, _ *net.TCPConn) error {
			c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			big := make([]byte, 64<<20) // more than both socket buffers hold
			n, err := c.Write(big)
			if n <= 0 || n >= len(big) {
				t.Fatalf("wrote %d of %d before the deadline", n, len(big))
			}
			return err
		}, func(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }, "os.ErrDeadlineExceeded after a partial write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := rawPair(t)
			if err := tc.run(t, c, s); !tc.check(err) {
				t.Fatalf("err = %v (%T), want %s", err, err, tc.want)
			}
		})
	}
}

// TestConnWritesAllAcrossWaits writes more than the socket buffers hold:
// the write waits in the poller whenever the socket is full (EAGAIN) and
// goes on from where it was, so the reader gets every byte in order.
func TestConnWritesAllAcrossWaits(t *testing.T) {
	c, s := rawPair(t)
	want := make([]byte, 16<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(s)
		got <- b
	}()
	n, err := c.Write(want)
	if err != nil || n != len(want) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(want))
	}
	c.Close()
	select {
	case b := <-got:
		if !bytes.Equal(b, want) {
			t.Fatalf("the reader got %d bytes, not the %d written in order", len(b), len(want))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader did not finish")
	}
}
