package hangup

import (
	"context"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// pair is a loopback TCP connection: the server side and the client side.
func pair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return wrapped{server}, client
}

// watched is WatchAfter on a context of its own, as a handler's request
// context with its cancel.
func watched(conn net.Conn, grace time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	w, stop := WatchAfter(ctx, cancel, conn, grace)
	return w, stop.Stop
}

// wrapped plays a listener's wrapper (netguard's) that embeds the conn.
type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }

func TestWatch(t *testing.T) {
	cases := []struct {
		name     string
		client   func(c net.Conn)
		wantGone bool
	}{
		{"client closes", func(c net.Conn) { c.Close() }, true},
		{"client resets", func(c net.Conn) { c.(*net.TCPConn).SetLinger(0); c.Close() }, true},
		{"client pipelines its next request", func(c net.Conn) { c.Write([]byte("GET / HTTP/1.1\r\n")) }, false},
		{"client waits", func(net.Conn) {}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			server, client := pair(t)
			ctx, stop := watched(server, Grace)
			tc.client(client)
			if tc.wantGone {
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("the watch did not notice the client leave")
				}
				if !Gone(ctx) {
					t.Fatalf("the context ended (%v) but Gone says the client is there", ctx.Err())
				}
				stop()
				return
			}
			stop()
			stop() // idempotent
			if ctx.Err() != nil {
				t.Fatalf("context ended (%v) while the client is there", context.Cause(ctx))
			}
			// The watch consumed nothing and left no deadline behind: what
			// the client sent next is still there for the server.
			client.Write([]byte("x"))
			got := make([]byte, 64)
			server.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := server.Read(got)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if want := map[bool]string{true: "GET / HTTP/1.1\r\n", false: "x"}[tc.name != "client waits"]; string(got[:n]) != want && string(got[:n]) != want+"x" {
				t.Fatalf("server read %q after the watch, want %q", got[:n], want)
			}
		})
	}
}

func TestWatchUnwatchable(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	parent := context.Background()
	ctx, stop := Watch(parent, func() {}, a)
	stop.Stop()
	if ctx != parent {
		t.Fatal("a connection without a socket should get its parent context back")
	}
}

// TestGoneDuringGrace: before the watch has started, Gone looks at the
// connection itself, so a request that ends within the grace decides as
// if it had been watched — and looking consumes nothing.
func TestGoneDuringGrace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		client   func(c net.Conn)
		wantGone bool
	}{
		{"client closes", func(c net.Conn) { c.Close() }, true},
		{"client resets", func(c net.Conn) { c.(*net.TCPConn).SetLinger(0); c.Close() }, true},
		{"client pipelines its next request", func(c net.Conn) { c.Write([]byte("GET / HTTP/1.1\r\n")) }, false},
		{"client waits", func(net.Conn) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, client := pair(t)
			ctx, stop := watched(server, time.Hour)
			defer stop()
			vctx := context.WithValue(ctx, struct{}{}, 1) // Gone works through derived contexts
			tc.client(client)
			if !tc.wantGone {
				if Gone(vctx) || ctx.Err() != nil {
					t.Fatalf("gone (%v) while the client is there", context.Cause(ctx))
				}
				stop()
				if tc.name == "client pipelines its next request" {
					got := make([]byte, 64)
					server.SetReadDeadline(time.Now().Add(10 * time.Second))
					n, _ := server.Read(got)
					if string(got[:n]) != "GET / HTTP/1.1\r\n" {
						t.Fatalf("server read %q after the check: the peek consumed bytes", got[:n])
					}
				}
				return
			}
			deadline := time.Now().Add(10 * time.Second) // the FIN travels asynchronously; safety bound only
			for !Gone(vctx) {
				if time.Now().After(deadline) {
					t.Fatal("Gone never noticed the client leave during the grace")
				}
				time.Sleep(time.Millisecond)
			}
			if ctx.Err() == nil || !Gone(ctx) {
				t.Fatalf("the watched context was not ended by Gone: %v", ctx.Err())
			}
		})
	}
}

// TestStopDuringGraceLeavesTheConnectionAlone: a request that ends within
// the grace never watched: no goroutine parked on the socket, no deadline
// changed, and the next read works.
func TestStopDuringGraceLeavesTheConnectionAlone(t *testing.T) {
	server, client := pair(t)
	ctx, stop := watched(server, time.Hour)
	stop()
	stop()
	if ctx.Err() != nil {
		t.Fatal("stop cancelled the context")
	}
	if Gone(ctx) {
		t.Fatal("a stopped watch reported the client gone")
	}
	client.Write([]byte("x"))
	got := make([]byte, 8)
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := server.Read(got); err != nil || string(got[:n]) != "x" {
		t.Fatalf("read after stop = %q, %v", got[:n], err)
	}
}

// BenchmarkWatch is one fast request's deadline and watch: started and stopped within
// its grace ("grace"), or watched from the start ("immediate", the cost
// before the grace existed), on a connection whose client stays.
func BenchmarkWatch(b *testing.B) {
	for _, bc := range []struct {
		name  string
		grace time.Duration
	}{{"grace", Grace}, {"immediate", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			server, err := ln.Accept()
			if err != nil {
				b.Fatal(err)
			}
			defer server.Close()
			b.ReportAllocs()
			for b.Loop() {
				// A request's: its deadline, and the watch over it.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				ctx, stop := WatchAfter(ctx, cancel, server, bc.grace)
				if bc.grace == 0 {
					for ctx.Value(watchKey{}).(*watch).stateIs(graceful) {
						runtime.Gosched() // let the watch start, as a request's upstream call would
					}
				}
				Gone(ctx)
				stop.Stop()
				cancel()
			}
		})
	}
}

// TestStopAroundTheStart: stop called just before, at and after the moment
// the watcher starts never leaves a deadline on the connection, never
// cancels the context of a client that is there, and never hangs.
func TestStopAroundTheStart(t *testing.T) {
	server, client := pair(t)
	const grace = 20 * time.Millisecond
	for i := range 40 {
		ctx, stop := watched(server, grace)
		time.Sleep(grace - 2*time.Millisecond + time.Duration(i%5)*time.Millisecond)
		stop()
		if ctx.Err() != nil {
			t.Fatalf("round %d: context ended (%v) while the client is there", i, context.Cause(ctx))
		}
		client.Write([]byte{byte('a' + i%26)})
		got := make([]byte, 1)
		server.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(server, got); err != nil || got[0] != byte('a'+i%26) {
			t.Fatalf("round %d: read %q, %v after the watch", i, got, err)
		}
		server.SetReadDeadline(time.Time{})
	}
}
