package netguard

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// A server that answers 413 after reading only the headers, while the
// client is still uploading, must not make the client lose the answer.
// With a plain close the kernel resets the connection (unread data) and
// the client's read fails; with the Lingerer it reads the 413 every time.
func TestLingeringCloseDeliversEarlyAnswer(t *testing.T) {
	l := NewLingerer(LingerConfig{Timeout: 2 * time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				br := bufio.NewReader(c)
				for { // headers only
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				_, _ = io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: application/json\r\nContent-Length: 40\r\nConnection: close\r\n\r\n{\"error\":{\"code\":413,\"message\":\"big\"}}\n")
				_ = l.Close(c, nil)
			}(c)
		}
	}()
	body := bytes.Repeat([]byte("x"), 11<<20)
	for i := range 5 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 11534336\r\n\r\n")
		// Like most HTTP/1.1 clients, send the whole body before reading
		// the answer; the write may fail once the server is done.
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = c.Write(body)
		resp, err := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(resp), "HTTP/1.1 413") || !strings.Contains(string(resp), `"code":413`) {
			t.Fatalf("round %d: client read %q, %v", i, resp, err)
		}
	}
}

// A client that closes its side on our FIN releases the connection at once
// (done runs), long before the lingering timeout.
func TestLingererClosesWhenClientCloses(t *testing.T) {
	l := NewLingerer(LingerConfig{Timeout: time.Minute})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			_, _ = io.ReadAll(c) // until our FIN
			c.Close()
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	_ = l.Close(c, func() { close(closed) })
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the connection lingered although the client had closed")
	}
}
