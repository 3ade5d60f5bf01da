// Package upstream is the transport of the gateway's calls to providers.
//
// Plain-HTTP/1.1 upstreams (a local vLLM, Ollama or llama.cpp server, a
// provider behind a sidecar) are served on the calling goroutine: the
// request is written and the response read by the goroutine that asked for
// it, over a pool of keep-alive connections. net/http's Transport hands
// every request to a writer goroutine and every response back from a reader
// goroutine, two per connection: measured against the same upstream, a
// sequential request cost ~100 µs through it and ~50 µs without the
// hand-offs, and an open stream kept two more goroutines and their buffers.
// The wire format is still net/http's own: an ordinary request is written
// by writeFast byte for byte as Request.Write writes it (anything unusual is
// written by Request.Write itself), and http.ReadResponse parses the
// response and frames its body (Content-Length, chunked with trailers, or
// close-delimited).
//
// Everything else — TLS upstreams (HTTP/2 when offered), requests the
// environment's proxy settings send through a proxy — goes to Fallback, a
// net/http Transport.
//
// Cancellation is the request's context: when it ends, the connection's
// deadline is set in the past, which ends a blocked write or read; that
// connection is then closed, never reused. A call watches its context only
// once it has run for Grace: most calls end sooner, and the watch
// (context.AfterFunc) cost five allocations and its bookkeeping on every
// one. Until then the connection's deadline is the grace's end, and the
// read or write it ends starts the watch and goes on. A context's deadline
// and a call's attempt deadline (RoundTripWithin) are the connection's
// deadline too, so they need no timer of their own.
package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/host/sockio"
	"golang.org/x/net/http/httpguts"
)

// Defaults of the zero Transport fields.
const (
	DefaultIdleTimeout    = 90 * time.Second
	DefaultMaxIdlePerHost = 256
	// DefaultMaxHeaderBytes bounds a response's status line and headers,
	// as net/http's Transport does: an upstream that sends headers forever
	// fails the call instead of filling memory.
	DefaultMaxHeaderBytes = 1 << 20
)

// ErrAttemptTimeout is a call's failure past its attempt deadline
// (RoundTripWithin).
var ErrAttemptTimeout = errors.New("upstream: no response within the attempt's time limit")

// Grace is how long a call runs before it watches its context (see the
// package comment): a context that ends sooner ends the call when the
// grace does, at the latest.
const Grace = 50 * time.Millisecond

// Transport is an http.RoundTripper (see the package comment). Its fields
// are set before the first request.
type Transport struct {
	// Fallback serves https and proxied requests.
	Fallback http.RoundTripper
	// Proxy is the proxy policy Fallback applies (http.ProxyFromEnvironment):
	// a plain-HTTP request it gives a proxy goes to Fallback. Nil: none.
	Proxy func(*http.Request) (*url.URL, error)
	// Dialer dials new connections (nil: 10 s timeout, 30 s keep-alive).
	Dialer *net.Dialer
	// IdleTimeout closes a connection idle this long; MaxIdlePerHost
	// bounds the idle connections kept per host; MaxHeaderBytes bounds a
	// response's head.
	IdleTimeout    time.Duration
	MaxIdlePerHost int
	MaxHeaderBytes int

	mu     sync.Mutex
	idle   map[string][]*conn // per host:port, most recently used last
	reaper *time.Timer
	closed bool
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.serves(req) {
		if t.Fallback == nil {
			return nil, fmt.Errorf("upstream: no transport for %s requests", req.URL.Scheme)
		}
		return t.Fallback.RoundTrip(req)
	}
	return t.roundTrip(req, time.Time{})
}

// RoundTripWithin is RoundTrip bounded by an attempt deadline, which holds
// until the response has been read to its end or EndAttempt is called on
// it (a stream's relay calls it once the head is in), and fails the call
// with ErrAttemptTimeout. served is false for a request this transport
// hands to Fallback (https, proxied): nothing was done, and the caller
// sends it its own way.
func (t *Transport) RoundTripWithin(req *http.Request, attempt time.Time) (resp *http.Response, served bool, err error) {
	if !t.serves(req) {
		return nil, false, nil
	}
	resp, err = t.roundTrip(req, attempt)
	return resp, true, err
}

// EndAttempt lifts the attempt deadline of a response RoundTripWithin
// returned; for any other response it does nothing.
func EndAttempt(resp *http.Response) {
	if b, ok := resp.Body.(*body); ok {
		b.endAttempt()
	}
}

func (t *Transport) roundTrip(req *http.Request, deadline time.Time) (*http.Response, error) {
	if err := validHeader(req.Header); err != nil {
		closeBody(req)
		return nil, err
	}
	key := hostPort(req.URL)
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		c, reused, err := t.get(ctx, key, attempt > 0)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := c.roundTrip(req, deadline)
		if err == nil {
			return resp, nil
		}
		// A pooled connection the server closed is dropped when it leaves
		// the pool (get). One that fails anyway is sent once more, on a
		// fresh connection — never on another pooled one: after an
		// upstream restarts, all of them are stale — but only when the
		// upstream cannot have received the request, so it cannot be run
		// (and charged for) twice: nothing of it reached the socket, or it
		// is replayable (a GET, or an Idempotency-Key) and the connection
		// closed before a byte of the response (net/http's rule). A fresh
		// connection's failure, or one after the response began, is the
		// caller's.
		if !reused || attempt > 0 || ctx.Err() != nil ||
			!(c.reqBytes() == 0 || c.respBytes() == 0 && closedIdle(err) && replayable(req)) {
			return nil, err
		}
		if req, err = rewind(req); err != nil {
			return nil, err
		}
	}
}

// replayable reports whether req may be sent twice: its method is
// idempotent, or it carries an idempotency key (net/http's rule).
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, a := req.Header["Idempotency-Key"]
	_, b := req.Header["X-Idempotency-Key"]
	return a || b
}

// validHeader refuses what net/http's Transport refuses: a header name
// that is not a token, or a value with a control character (a CR or LF
// would end the header early and smuggle a line of the module's choosing
// into the request).
func validHeader(h http.Header) error {
	for k, vs := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("upstream: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("upstream: invalid header field value for %q", k)
			}
		}
	}
	return nil
}

// serves reports whether req is this transport's own (plain HTTP, no
// proxy) rather than Fallback's.
// Serves reports whether RoundTripWithin sends req itself rather than
// handing it to Fallback. What it sends, it has written, body and all,
// before it returns (net/http's transport may still be reading a body
// when its RoundTrip has returned).
func (t *Transport) Serves(req *http.Request) bool { return t.serves(req) }

func (t *Transport) serves(req *http.Request) bool {
	return req.URL.Scheme == "http" && !t.proxied(req)
}

// proxied reports whether the proxy policy sends req through a proxy.
func (t *Transport) proxied(req *http.Request) bool {
	if t.Proxy == nil {
		return false
	}
	u, err := t.Proxy(req)
	return err != nil || u != nil // an error is Fallback's to report
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// closedIdle reports whether err is what a write to, or a first read from,
// a connection the peer has closed returns.
func closedIdle(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// rewind returns req with a fresh copy of its body, for a second send.
func rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("upstream: connection closed by the server and the request body cannot be sent again")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r2 := req.Clone(req.Context())
	r2.Body = body
	return r2, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// get returns an idle connection to key, or dials one (always, when
// fresh). An idle connection the server has closed (or reset, or sent
// bytes on that nobody asked for) is dropped, not used: an upstream that
// restarted closed every one of them, and a request written to one would
// be lost.
func (t *Transport) get(ctx context.Context, key string, fresh bool) (*conn, bool, error) {
	for !fresh {
		now := time.Now()
		t.mu.Lock()
		list := t.idle[key]
		if len(list) == 0 {
			t.mu.Unlock()
			break
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[key] = list[:len(list)-1]
		t.mu.Unlock()
		if now.Sub(c.idleSince) < t.idleTimeout() && c.br.Buffered() == 0 && !peerClosed(c) {
			return c, true, nil
		}
		_ = c.Conn.Close()
	}
	d := t.Dialer
	if d == nil {
		d = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	}
	nc, err := d.DialContext(ctx, "tcp", key)
	if err != nil {
		return nil, false, err
	}
	c := &conn{Conn: nc, t: t, key: key}
	if sc, ok := nc.(syscall.Conn); ok {
		c.rc, c.rcErr = sc.SyscallConn()
		if raw := sockio.New(nc, c.rc); raw != nil && c.rcErr == nil {
			// Reads and writes with raw system calls (host/sockio says
			// why); everything else is nc's.
			c.Conn = raw
		}
	}
	c.lim = limitReader{r: (*connReader)(c), n: -1}
	c.br = bufio.NewReaderSize(&c.lim, 4<<10)
	return c, false, nil
}

// put returns a connection whose last response was read to its end.
func (t *Transport) put(c *conn) {
	c.idleSince = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || len(t.idle[c.key]) >= t.maxIdle() {
		_ = c.Conn.Close()
		return
	}
	if t.idle == nil {
		t.idle = map[string][]*conn{}
	}
	t.idle[c.key] = append(t.idle[c.key], c)
	if t.reaper == nil {
		t.reaper = time.AfterFunc(t.idleTimeout(), t.reap)
	}
}

// reap closes the connections idle past the timeout; it re-arms itself
// while any are left.
func (t *Transport) reap() {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	left := 0
	for key, list := range t.idle {
		kept := list[:0]
		for _, c := range list {
			if now.Sub(c.idleSince) >= t.idleTimeout() {
				_ = c.Conn.Close()
			} else {
				kept = append(kept, c)
			}
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(t.idle, key)
		} else {
			t.idle[key] = kept
		}
		left += len(kept)
	}
	if left > 0 && !t.closed {
		t.reaper.Reset(t.idleTimeout())
	} else {
		t.reaper = nil
	}
}

// CloseIdleConnections closes the idle connections, this transport's and
// Fallback's.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	for key, list := range t.idle {
		for _, c := range list {
			_ = c.Conn.Close()
		}
		delete(t.idle, key)
	}
	t.mu.Unlock()
	if f, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleTimeout > 0 {
		return t.IdleTimeout
	}
	return DefaultIdleTimeout
}

func (t *Transport) maxIdle() int {
	if t.MaxIdlePerHost > 0 {
		return t.MaxIdlePerHost
	}
	return DefaultMaxIdlePerHost
}

func (t *Transport) maxHeader() int64 {
	if t.MaxHeaderBytes > 0 {
		return int64(t.MaxHeaderBytes)
	}
	return DefaultMaxHeaderBytes
}

// conn is one keep-alive connection; it serves one request at a time.
type conn struct {
	net.Conn
	t         *Transport
	key       string
	br        *bufio.Reader
	lim       limitReader
	wrote     int64 // bytes of the current request written (reqBytes)
	idleSince time.Time

	// The current call's bounds (see the package comment). mu guards them:
	// the context's AfterFunc runs in a goroutine of its own.
	mu       sync.Mutex
	ctx      context.Context
	attempt  time.Time   // zero: none, or ended (EndAttempt)
	graceEnd time.Time   // zero: the context is watched, or cannot end
	stop     func() bool // the watch's, once it runs
	aborted  bool        // the context ended: the deadline stays in the past

	// The socket's raw connection, for peerClosed, made once at the dial
	// rather than at each reuse: nil with a nil rcErr when the connection
	// is not a socket, nil with rcErr when the socket has none.
	rc    syscall.RawConn
	rcErr error
}

// aLongTimeAgo is a deadline that has passed: setting it ends a blocked
// read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

var errHeaderTooLarge = errors.New("upstream: response headers exceed the limit")

// roundTrip writes req and reads the response's head; the body is read
// through the returned response. On an error the connection is closed.
func (c *conn) roundTrip(req *http.Request, attempt time.Time) (*http.Response, error) {
	c.begin(req.Context(), attempt)
	fail := func(err error) (*http.Response, error) {
		c.unwatch()
		_ = c.Conn.Close()
		if ctx := req.Context(); ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// The deadline that ended the call is the cancellation, not
			// the cause.
			return nil, fmt.Errorf("upstream: %w (%v)", ctx.Err(), err)
		}
		return nil, err
	}
	c.lim.read, c.wrote = 0, 0
	if err := c.writeRequest(req); err != nil {
		return fail(err)
	}
	c.lim.n = c.t.maxHeader()
	var resp *http.Response
	var err error
	for range 5 { // informational responses (1xx) come before the real one
		if resp, err = http.ReadResponse(c.br, req); err != nil {
			if c.lim.n == 0 {
				err = errHeaderTooLarge
			}
			return fail(err)
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		c.lim.n = c.t.maxHeader()
	}
	if resp.StatusCode < 200 {
		return fail(fmt.Errorf("upstream: too many informational responses (last %d)", resp.StatusCode))
	}
	c.lim.n = -1
	b := &body{rc: resp.Body, c: c, reusable: !resp.Close && !req.Close}
	if resp.Body == http.NoBody {
		b.finish(true) // nothing to read: the connection is free now
	}
	resp.Body = b
	return resp, nil
}

// begin sets the bounds of a call on ctx: the connection's deadline is the
// earliest of the grace's end, the attempt's and the context's.
func (c *conn) begin(ctx context.Context, attempt time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx, c.attempt, c.graceEnd, c.stop, c.aborted = ctx, attempt, time.Time{}, nil, false
	switch {
	case ctx.Err() != nil:
		c.aborted = true
	case ctx.Done() != nil:
		c.graceEnd = time.Now().Add(Grace)
	}
	_ = c.Conn.SetDeadline(c.deadline())
}

// deadline is the connection's deadline for the call now (mu held).
func (c *conn) deadline() time.Time {
	if c.aborted {
		return aLongTimeAgo
	}
	d := c.attempt
	if t := c.graceEnd; !t.IsZero() && (d.IsZero() || t.Before(d)) {
		d = t
	}
	if t, ok := c.ctx.Deadline(); ok && (d.IsZero() || t.Before(d)) {
		d = t
	}
	return d
}

// abort is the watch's: the context ended.
func (c *conn) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aborted = true
	_ = c.Conn.SetDeadline(aLongTimeAgo)
}

// unwatch ends the call's watch and reports whether the connection may be
// reused: false once the context has ended it.
func (c *conn) unwatch() bool {
	c.mu.Lock()
	stop := c.stop
	c.stop = nil
	aborted := c.aborted
	c.mu.Unlock()
	// stop is false when the watch has run or is running: the deadline
	// is then in the past.
	return !aborted && (stop == nil || stop())
}

// endAttempt lifts the attempt deadline.
func (c *conn) endAttempt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.attempt.IsZero() {
		c.attempt = time.Time{}
		_ = c.Conn.SetDeadline(c.deadline())
	}
}

// expired is called when a read or write of the call failed on the
// connection's deadline. The grace's end starts the watch, and the call
// goes on (retry); any other deadline that has passed is the call's end,
// and err the error to return.
func (c *conn) expired(failure error) (retry bool, err error) {
	c.mu.Lock()
	now := time.Now()
	ctxEnd, hasEnd := c.ctx.Deadline()
	switch {
	case c.aborted:
		c.mu.Unlock()
		return false, failure // roundTrip and body name the context's error
	case hasEnd && !now.Before(ctxEnd) && (c.attempt.IsZero() || !ctxEnd.After(c.attempt)):
		c.mu.Unlock()
		// The context's own timer fires at the same moment: its error is
		// the cause.
		<-c.ctx.Done()
		return false, fmt.Errorf("upstream: %w (%v)", c.ctx.Err(), failure)
	case !c.attempt.IsZero() && !now.Before(c.attempt):
		c.mu.Unlock()
		return false, ErrAttemptTimeout
	}
	if !c.graceEnd.IsZero() && !now.Before(c.graceEnd) {
		c.graceEnd = time.Time{}
		c.stop = context.AfterFunc(c.ctx, c.abort)
	}
	// A watch that ran since is seen by deadline (aborted).
	_ = c.Conn.SetDeadline(c.deadline())
	c.mu.Unlock()
	return true, nil
}

// connReader and connWriter read and write the connection within the
// call's bounds (expired).
type (
	connReader conn
	connWriter conn
)

func (r *connReader) Read(p []byte) (int, error) {
	c := (*conn)(r)
	for {
		n, err := c.Conn.Read(p)
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if n > 0 {
			return n, nil // the next read meets the deadline again
		}
		if retry, err := c.expired(err); !retry {
			return 0, err
		}
	}
}

func (w *connWriter) Write(p []byte) (int, error) {
	c := (*conn)(w)
	written := 0
	for {
		n, err := c.Conn.Write(p[written:])
		written += n
		c.wrote += int64(n)
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return written, err
		}
		if retry, err := c.expired(err); !retry {
			return written, err
		}
	}
}

// writers buffer the writing of requests. A connection borrows one only
// while it writes: a stream's connection is then read for minutes, and
// an idle one waits, without holding a write buffer.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}

func (c *conn) writeRequest(req *http.Request) error {
	bw := writers.Get().(*bufio.Writer)
	bw.Reset((*connWriter)(c))
	done, err := writeFast(bw, req)
	if !done {
		err = req.Write(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil) // no reference to the connection stays in the pool
	writers.Put(bw)
	return err
}

// reqBytes is how much of the current request reached the socket.
func (c *conn) reqBytes() int64 { return c.wrote }

// respBytes is how much of a response this connection has read for the
// current request.
func (c *conn) respBytes() int64 { return c.lim.read }

// limitReader counts what it reads and, while n >= 0, allows at most n
// more bytes (the response head's bound).
type limitReader struct {
	r    io.Reader
	n    int64 // -1: no bound
	read int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n == 0 {
		return 0, errHeaderTooLarge
	}
	if l.n > 0 && int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	if l.n > 0 {
		l.n -= int64(n)
	}
	return n, err
}

// body is a response body. Read to its end, it gives the connection back
// to the pool; closed before that, it closes the connection (the rest of
// the response would still be on it). Close may come from another
// goroutine than Read (a client leaving mid-stream): closing the
// connection is what ends a Read blocked on it.
type body struct {
	rc       io.ReadCloser
	c        *conn
	reusable bool

	mu   sync.Mutex
	done bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
	}
	return n, err
}

// Buffered is how much of the response the connection has read from the
// network and the body not yet returned: a relay reads on without waiting
// while it is not zero.
func (b *body) Buffered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return 0
	}
	return b.c.br.Buffered()
}

// Close does not close rc: net/http's body would read the rest of the
// response to discard it. The connection is closed instead (or was
// already given back after the end).
func (b *body) Close() error {
	b.finish(false)
	return nil
}

// endAttempt is EndAttempt's; after the end the connection is no longer
// the body's.
func (b *body) endAttempt() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.c.endAttempt()
	}
}

func (b *body) finish(atEOF bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	// A connection whose context ended has its deadline in the past and
	// is not reused.
	if reusable := b.c.unwatch(); atEOF && reusable && b.reusable {
		b.c.ctx = nil // unwatched: nobody else looks; an idle connection holds no request
		_ = b.c.Conn.SetDeadline(time.Time{})
		b.c.t.put(b.c)
		return
	}
	_ = b.c.Conn.Close()
}
