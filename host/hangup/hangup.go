// Package hangup notices a client that closes its connection while the
// gateway is still working on its request.
//
// fasthttp serves a connection in the goroutine that runs the handler and
// touches the socket only between requests, so it has no per-request
// context that ends when the client leaves (RequestCtx.Done fires on server
// shutdown only; valyala/fasthttp#468, #965). net/http gets this signal from
// a concurrent one-byte background read; a read here would steal the first
// byte of a pipelined request from fasthttp's buffer, so Watch peeks
// instead: it waits in the runtime's poller until the socket is readable
// and looks with MSG_PEEK, which consumes nothing. End of stream or a reset
// means the client is gone; bytes waiting mean the client pipelined its next
// request and is still there, and the watch ends without a verdict.
package hangup

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// ErrClientGone is the cause of a watched context the client ended.
var ErrClientGone = errors.New("the client closed the connection")

// Gone reports whether ctx ended because its client went away.
func Gone(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrClientGone) }

// watchDelay is how long a request runs before its connection is watched.
// A request answered sooner — most non-streaming requests to a fast
// upstream — never pays for the watcher goroutine and its wake-ups, and a
// client that leaves is noticed at most this much later; the calls worth
// cancelling (a model thinking for seconds) outlast it by far.
const watchDelay = 20 * time.Millisecond

// Watch returns a context derived from parent that is cancelled with cause
// ErrClientGone when the client closes or resets conn, and stop, which ends
// the watch (idempotent; it does not cancel the context). stop must be
// called before the handler returns: the connection then belongs to the
// server again. A connection that cannot be watched (not a socket, or a
// platform without MSG_PEEK) gets parent back unchanged.
func Watch(parent context.Context, conn net.Conn) (context.Context, func()) {
	rc := rawConn(conn)
	if rc == nil || !supported {
		return parent, func() {}
	}
	ctx, cancel := context.WithCancelCause(parent)
	w := &watch{}
	w.timer = time.AfterFunc(watchDelay, func() {
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			return
		}
		w.done = make(chan struct{})
		w.mu.Unlock()
		defer close(w.done)
		if peekGone(rc) {
			cancel(ErrClientGone)
		}
	})
	stop := func() {
		w.timer.Stop()
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			return
		}
		w.stopped = true
		done := w.done
		w.mu.Unlock()
		if done == nil {
			return // the watch never started, and now never will
		}
		// A deadline in the past wakes the waiting peek; the next request's
		// deadlines are set by the server as it starts reading it.
		_ = conn.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = conn.SetReadDeadline(time.Time{})
	}
	return ctx, stop
}

// watch is the state Watch and its stop share. The watcher starts only if
// it takes mu before stop does, and stop waits for a started one.
type watch struct {
	timer   *time.Timer
	mu      sync.Mutex
	stopped bool
	done    chan struct{} // set when the watcher starts; closed when it ends
}

// rawConn finds the socket under conn's wrappers (each wrapper that embeds
// a net.Conn exposes it as NetConn, as crypto/tls does).
func rawConn(conn net.Conn) syscall.RawConn {
	for range 8 {
		if sc, ok := conn.(syscall.Conn); ok {
			rc, err := sc.SyscallConn()
			if err != nil {
				return nil
			}
			return rc
		}
		w, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		conn = w.NetConn()
	}
	return nil
}
