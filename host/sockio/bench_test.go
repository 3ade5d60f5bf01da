//go:build linux

package sockio

import (
	"io"
	"net"
	"testing"
)

// BenchmarkPingPong sends 512 bytes and reads 512 back over loopback,
// through net.Conn and through Conn: the system calls are the same, the
// runtime's bookkeeping around them is not.
func BenchmarkPingPong(b *testing.B) {
	for _, raw := range []bool{false, true} {
		name := "net.Conn"
		if raw {
			name = "sockio.Conn"
		}
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				s, err := ln.Accept()
				if err != nil {
					return
				}
				defer s.Close()
				buf := make([]byte, 512)
				for {
					if _, err := io.ReadFull(s, buf); err != nil {
						return
					}
					if _, err := s.Write(buf); err != nil {
						return
					}
				}
			}()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			var c net.Conn = nc
			if raw {
				rc, _ := nc.(*net.TCPConn).SyscallConn()
				c = New(nc, rc)
			}
			buf := make([]byte, 512)
			b.SetBytes(1024)
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
