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
	"sync/atomic"
	"syscall"
	"time"
)

// ErrClientGone is the cause of a context ended because its client left
// (the server's stream pump cancels with it).
var ErrClientGone = errors.New("the client closed the connection")

// Gone reports whether ctx ended because its client went away. Under a
// watch still in its grace period it looks at the connection now (one
// non-blocking peek), and ends the watched context if the client is gone:
// a request's decisions (charge as cancelled, no fallback) are the same
// whether the watch had started or not.
func Gone(ctx context.Context) bool {
	if errors.Is(context.Cause(ctx), ErrClientGone) {
		return true
	}
	w, ok := ctx.Value(watchKey{}).(*watch)
	return ok && (w.gone.Load() || w.check())
}

// Grace is how long Watch waits before it watches. Most answers come
// sooner: a watch costs a goroutine, a poller registration and two
// deadline changes (≈2% of the gateway's CPU per fast request, measured),
// and what it saves — upstream work the client no longer waits for —
// matters for the long calls. A client that leaves during the grace is
// noticed when it ends, or sooner by Gone.
const Grace = 50 * time.Millisecond

// Stopper ends a watch.
type Stopper interface {
	// Stop ends the watch (idempotent; it does not end the context). It
	// must be called before the handler returns: the connection then
	// belongs to the server again.
	Stop()
}

// Watch returns ctx, watched: cancel — which must end ctx, and is the
// cancel of the context the request has already (its deadline's: a second
// cancelable context per request cost four allocations and a timer's
// worth of bookkeeping) — is called when the client closes or resets conn
// (noticed from Grace on; Gone notices it at once), and Gone then says so.
// A connection that cannot be watched (not a socket, or a platform without
// MSG_PEEK) gets ctx back unchanged.
func Watch(ctx context.Context, cancel context.CancelFunc, conn net.Conn) (context.Context, Stopper) {
	return WatchAfter(ctx, cancel, conn, Grace)
}

// WatchAfter is Watch with a grace period of its own.
func WatchAfter(ctx context.Context, cancel context.CancelFunc, conn net.Conn, grace time.Duration) (context.Context, Stopper) {
	rc := rawConn(conn)
	if rc == nil || !supported {
		return ctx, unwatched{}
	}
	w := &watch{Context: ctx, cancel: cancel, conn: conn, rc: rc}
	w.timer = time.AfterFunc(grace, w.start)
	return w, w
}

// unwatched is the Stopper of a connection Watch could not watch.
type unwatched struct{}

func (unwatched) Stop() {}

type watchKey struct{}

// watch is a watched context: the cancelable context, and the state of
// the watch over its connection.
type watch struct {
	context.Context
	cancel context.CancelFunc
	gone   atomic.Bool // the client left; cancel was called
	conn   net.Conn
	rc     syscall.RawConn
	timer  *time.Timer

	mu    sync.Mutex
	state int           // graceful, watching or stopped
	done  chan struct{} // closed when the watching peek returns
}

const (
	graceful = iota // the timer has not started the watch
	watching
	stopped
)

func (w *watch) Value(key any) any {
	if key == (watchKey{}) {
		return w
	}
	return w.Context.Value(key)
}

func (w *watch) stateIs(s int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state == s
}

// start is the timer's: it watches in the timer's goroutine.
func (w *watch) start() {
	w.mu.Lock()
	if w.state != graceful {
		w.mu.Unlock()
		return
	}
	w.state = watching
	w.done = make(chan struct{})
	w.mu.Unlock()
	defer close(w.done)
	if peekGone(w.rc) {
		w.end()
	}
}

// check is Gone's look at the connection while the watch is in its grace
// (a running watch decides by itself; a stopped one, the handler has
// returned).
func (w *watch) check() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != graceful || !peekGoneNow(w.rc) {
		return false
	}
	w.end()
	return true
}

// end records that the client left and ends the context.
func (w *watch) end() {
	w.gone.Store(true)
	w.cancel()
}

// Stop ends the watch (Stopper).
func (w *watch) Stop() {
	w.mu.Lock()
	state := w.state
	w.state = stopped
	w.mu.Unlock()
	switch state {
	case graceful:
		w.timer.Stop() // start, if the timer fired, finds the watch stopped
	case watching:
		// A deadline in the past wakes the waiting peek; the next request's
		// deadlines are set by the server as it starts reading it.
		_ = w.conn.SetReadDeadline(time.Unix(1, 0))
		<-w.done
		_ = w.conn.SetReadDeadline(time.Time{})
	}
}

// rawConn finds the socket under conn's wrappers (each wrapper that embeds
// a net.Conn exposes it as NetConn, as crypto/tls does).
func rawConn(conn net.Conn) syscall.RawConn {
	for range 8 {
		if sc, ok := conn.(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				return rc
			}
		}
		w, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		conn = w.NetConn()
	}
	return nil
}
