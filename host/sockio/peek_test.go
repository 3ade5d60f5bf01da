//go:build unix

package sockio

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// pair returns both ends of a loopback TCP connection.
func pair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func peekConn(t *testing.T, c *net.TCPConn) State {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var st State
	var b [1]byte
	if err := rc.Control(func(fd uintptr) { st = Peek(int(fd), b[:]) }); err != nil {
		t.Fatal(err)
	}
	return st
}

// eventually peeks until want or a second has passed: what the peer does
// reaches this end asynchronously.
func eventually(t *testing.T, c *net.TCPConn, want State) State {
	t.Helper()
	var st State
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if st = peekConn(t, c); st == want {
			break
		}
	}
	return st
}

func TestPeek(t *testing.T) {
	names := map[State]string{Empty: "empty", Closed: "closed", Data: "data"}
	for _, tc := range []struct {
		name string
		peer func(t *testing.T, s *net.TCPConn)
		want State
	}{
		{"open and quiet", func(*testing.T, *net.TCPConn) {}, Empty},
		{"bytes waiting", func(t *testing.T, s *net.TCPConn) {
			if _, err := s.Write([]byte("GET")); err != nil {
				t.Fatal(err)
			}
		}, Data},
		{"peer closed", func(_ *testing.T, s *net.TCPConn) { s.Close() }, Closed},
		{"peer reset", func(_ *testing.T, s *net.TCPConn) { s.SetLinger(0); s.Close() }, Closed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := pair(t)
			tc.peer(t, s)
			if got := eventually(t, c, tc.want); got != tc.want {
				t.Fatalf("Peek = %s, want %s", names[got], names[tc.want])
			}
			if tc.want == Data {
				// A peek consumes nothing: the bytes are still there to read.
				b := make([]byte, 3)
				c.SetReadDeadline(time.Now().Add(time.Second))
				if _, err := io.ReadFull(c, b); err != nil || string(b) != "GET" {
					t.Fatalf("read after peek = %q, %v; want the peeked bytes", b, err)
				}
			}
		})
	}
}

func TestPeekNotASocket(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	if got := Peek(p[0], make([]byte, 1)); got != Closed {
		t.Fatalf("Peek(pipe) = %d, want Closed (a descriptor that cannot be peeked is not to be trusted)", got)
	}
}
