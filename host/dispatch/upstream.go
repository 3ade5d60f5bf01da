package dispatch

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/redact"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/switchyard/switchyard/host/upstream"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/switchyard/switchyard/host/wire"
)

// Call is one attempt in flight: the adapter version it started with
// (pinned until Close) and the upstream response.
type Call struct {
	Endpoint *catalog.Endpoint
	Module   *wasm.Module
	Resp     *http.Response
	// SentBody is the translated upstream body, kept for debug echo only
	// (Job.EchoSent).
	SentBody []byte
	Started  time.Time
	// Ctx is the adapter context of this attempt, for the response hooks.
	// Ctx.Native names the API of a native attempt (Job.Native).
	Ctx wire.AdapterCtx
	// nativeBody is a native attempt's answer as the provider sent it
	// (readTranslated).
	nativeBody []byte
	// ctxJSON is Ctx as the hooks take it, made once by send: a stream
	// runs the stream-event hook once per event, with the same context
	// every time. Nothing changes Ctx after send.
	ctxJSON []byte

	d *Dispatcher
	// sent reports the request went out to the upstream: from then on the
	// provider may bill it, even if we cancel the call.
	sent     bool
	release  func()
	cancel   context.CancelFunc
	timer    *time.Timer
	timedOut atomic.Bool
}

// Native reports an attempt that sent the client's own request (Job.Native):
// its answer, JSON or stream, is the provider's own API's.
func (u *Call) Native() bool { return u != nil && u.Ctx.Native != "" }

// Close ends the attempt: the upstream connection and the module pin.
func (u *Call) Close() {
	if u.timer != nil {
		u.timer.Stop()
	}
	if u.Resp != nil {
		_ = u.Resp.Body.Close()
	}
	if u.cancel != nil {
		u.cancel()
	}
	if u.release != nil {
		u.release()
		u.release = nil
	}
}

// HeadersReceived ends the attempt's time limit: from here the request
// deadline bounds the call.
func (u *Call) HeadersReceived() {
	if u.timer != nil {
		u.timer.Stop()
	} else if u.Resp != nil {
		upstream.EndAttempt(u.Resp)
	}
}

// Hook runs one of the adapter's response hooks on this attempt.
func (u *Call) Hook(ctx context.Context, hook abi.Hook, fields ...[]byte) (*wasm.Output, error) {
	cj := u.ctxJSON
	if cj == nil { // a Call not made by send (tests)
		cj = u.Ctx.JSON()
	}
	return u.Module.Call(ctx, hook, append([][]byte{cj}, fields...)...)
}

// send runs the adapter's request hook and calls the upstream. On success
// the caller owns the returned call and must close it; on a failure after
// the request went out the call is returned closed, to date the attempt
// and say it was sent.
func (d *Dispatcher) send(ctx context.Context, ep *catalog.Endpoint, hook abi.Hook, body []byte, actx wire.AdapterCtx, keepSent bool, native *Native) (*Call, *apierr.Error) {
	mod, release := d.Modules.Acquire(ep.Provider.Adapter)
	if mod == nil {
		return nil, &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
			Message: fmt.Sprintf("provider %s: its adapter module %q is not loaded", ep.Provider.Slug, ep.Provider.Adapter)}
	}
	if native != nil && hook == abi.HookChatRequest && slices.Contains(mod.Manifest.Capabilities, native.Capability) {
		// The adapter (the version pinned for this attempt) speaks the
		// client's API: the client's body goes, not its chat translation.
		body, actx.Native, actx.Beta = native.Body, native.API, native.Beta
	}
	u := &Call{Endpoint: ep, Module: mod, Ctx: actx, ctxJSON: actx.JSON(), d: d, release: release, Started: time.Now()}
	// The translation is borrowed from the adapter's buffers (a native
	// hook's) until the request is written: send returns only after that,
	// or copies the body when the transport may read it later.
	out, err := mod.CallBorrowed(ctx, hook, u.ctxJSON, body)
	defer out.Release()
	if err != nil {
		u.Close()
		e := apierr.From(err)
		e.Retryable = true // another provider's adapter may do better
		return nil, e
	}
	method, path, headers, ubody := interned(out.Field(0)), interned(out.Field(1)), out.Field(2), out.Field(3)
	if method == "" || !strings.HasPrefix(path, "/") {
		u.Close()
		return nil, &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
			Message: fmt.Sprintf("module %s returned an invalid upstream request (method %q, path %q)", mod.ID, method, path)}
	}
	key, auth := ep.Provider.APIKey, ep.Provider.Auth
	if auth != nil {
		// The scheme owns the credential: the adapter's key placeholder,
		// in the URL or a header, carries nothing.
		key = ""
	}
	target := upstreamURL(ep.Provider, path, key)
	req, rerr := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(ubody))
	inline := rerr == nil && d.writesInline(req)
	if rerr == nil && out.Lent() && !inline {
		ubody = bytes.Clone(ubody)
		req, rerr = http.NewRequestWithContext(ctx, method, target, bytes.NewReader(ubody))
	}
	if rerr != nil {
		u.Close()
		return nil, &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
			Message: fmt.Sprintf("provider %s: invalid upstream URL from module %s", ep.Provider.Slug, mod.ID)}
	}
	setHeaders(req.Header, headers, key)
	telemetry.From(ctx).Inject(ctx, req.Header) // W3C trace context of this attempt's span
	if auth != nil {
		// Last: a signature covers the request exactly as it is sent.
		if err := auth.Authorize(req, ubody); err != nil {
			u.Close()
			e := apierr.From(err)
			e.Retryable = true // another provider's credentials may work
			return nil, e
		}
	}
	if keepSent {
		u.SentBody = bytes.Clone(ubody) // read after send returns
	}
	u.sent = true
	resp, derr := d.do(u, req, inline)
	if derr != nil {
		e := u.TransportError(ctx, derr)
		u.Close()
		return u, e
	}
	// The response refers to its request — the headers with the
	// provider's key, and the sent body — for as long as it is read,
	// minutes for a long stream, which needs none of it.
	resp.Request = nil
	u.Resp = resp
	if resp.StatusCode/100 != 2 {
		e := u.upstreamError(ctx)
		u.Close()
		return u, e
	}
	return u, nil
}

// upstreamURL is the URL of an adapter's request path on provider p: key
// (its API key, "" under an auth scheme) in place of the adapter's key
// placeholder, and the provider's base query added.
func upstreamURL(p *catalog.Provider, path, key string) string {
	if strings.Contains(path, abi.APIKeyPlaceholder) {
		path = strings.ReplaceAll(path, abi.APIKeyPlaceholder, url.QueryEscape(key))
	}
	target := p.BaseURL + path
	if q := p.BaseQuery; q != "" {
		if strings.Contains(path, "?") {
			target += "&" + q
		} else {
			target += "?" + q
		}
	}
	return target
}

// setHeaders sets the header lines an adapter returned ("Name: value",
// one a line) on h, key in place of the key placeholder. Without a key
// (a keyless local server, or an auth scheme's credential) a line that
// carries the placeholder is not sent at all.
func setHeaders(h http.Header, lines []byte, key string) {
	// Every header's value in one array: Header.Set makes a slice for
	// each (four or five a request). Each entry is capped at its one
	// value, so a later Add to it copies instead of overwriting the next.
	vals := make([]string, 0, bytes.Count(lines, []byte{'\n'})+1)
	for rest := string(lines); rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		name, value, ok := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if !ok || strings.TrimSpace(name) == "" {
			continue
		}
		value = strings.TrimSpace(value)
		if strings.Contains(value, abi.APIKeyPlaceholder) {
			if key == "" {
				continue
			}
			value = strings.ReplaceAll(value, abi.APIKeyPlaceholder, key)
		}
		vals = append(vals, value)
		n := len(vals)
		h[textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))] = vals[n-1 : n : n]
	}
}

// writesInline reports whether the gateway's own transport sends req
// (do, told so) and so writes all of its body before it returns;
// net/http's may still be reading it from another goroutine. One
// predicate for both, so that a body lent to the write is never handed to
// a transport that reads it later.
func (d *Dispatcher) writesInline(req *http.Request) bool {
	t, ok := d.Direct.(*upstream.Transport)
	return ok && req.URL.User == nil && t.Serves(req)
}

// do sends u's request through Direct when it can (see Dispatcher),
// through Client otherwise; a failure is the *url.Error Client.Do would
// return. The attempt's time limit runs from here: the gateway's own
// transport keeps it as the connection's deadline; for any other, it is
// a timer that cancels a context of the attempt's own. inline is
// writesInline(req).
func (d *Dispatcher) do(u *Call, req *http.Request, inline bool) (*http.Response, error) {
	direct := d.Direct != nil && req.URL.User == nil
	if inline {
		t := d.Direct.(*upstream.Transport)
		resp, served, err := t.RoundTripWithin(req, time.Now().Add(d.AttemptTimeout))
		if served {
			if err != nil {
				return nil, urlError(req, err)
			}
			return resp, nil
		}
	}
	cctx, cancel := context.WithCancel(req.Context())
	u.cancel = cancel
	u.timer = time.AfterFunc(d.AttemptTimeout, func() {
		u.timedOut.Store(true)
		cancel()
	})
	req = req.WithContext(cctx)
	if !direct {
		return d.Client.Do(req)
	}
	resp, err := d.Direct.RoundTrip(req)
	if err != nil {
		return nil, urlError(req, err)
	}
	return resp, nil
}

func urlError(req *http.Request, err error) error {
	op := req.Method[:1] + strings.ToLower(req.Method[1:])
	return &url.Error{Op: op, URL: req.URL.String(), Err: err}
}

// TransportError classifies a failure to get (or read) a response.
func (u *Call) TransportError(ctx context.Context, err error) *apierr.Error {
	slug := u.Endpoint.Provider.Slug
	// The transport sets its connection's deadline from the context's, so
	// a read can time out a moment before the context's own timer marks it
	// done: that failure is the deadline's (whose cause names a plugin's
	// limit when the deadline was a module call's), not the provider's.
	// The timer fires at once: the wait is microseconds.
	if dl, ok := ctx.Deadline(); ok && ctx.Err() == nil && !time.Now().Before(dl) {
		<-ctx.Done()
	}
	switch {
	case u.timedOut.Load() || errors.Is(err, upstream.ErrAttemptTimeout):
		return &apierr.Error{Status: apierr.StatusEdgeTimeout, Retryable: true,
			Message: fmt.Sprintf("provider %s did not respond within %s", slug, u.d.AttemptTimeout)}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return DeadlineError(ctx, u.d.RequestTimeout)
	case ctx.Err() != nil:
		return apierr.ClientClosed()
	}
	// The client learns what went wrong, not where: the dial error names the
	// upstream's address (often an internal one). The whole error is the
	// cause, which goes to the log only.
	return &apierr.Error{Status: http.StatusBadGateway, Retryable: true, Cause: err,
		Message: fmt.Sprintf("could not reach provider %s: %s", slug, reachFailure(err))}
}

// reachFailure names the kind of a transport failure in words that carry
// no address, host name or port.
func reachFailure(err error) string {
	var dns *net.DNSError
	var nerr net.Error
	var cert *tls.CertificateVerificationError
	var rec tls.RecordHeaderError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	case errors.As(err, &dns):
		return "its host name could not be resolved"
	case errors.As(err, &cert), errors.As(err, &rec):
		return "TLS handshake failed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before the response was complete"
	case errors.As(err, &nerr) && nerr.Timeout():
		return "timed out"
	}
	return "connection failed"
}

// upstreamError turns a non-2xx upstream response into the gateway's error,
// through the adapter's error hook.
func (u *Call) upstreamError(ctx context.Context) *apierr.Error {
	body, _ := io.ReadAll(io.LimitReader(u.Resp.Body, 1<<20))
	status := u.Resp.StatusCode
	out, err := u.Hook(ctx, abi.HookError, []byte(strconv.Itoa(status)), body)
	code, msg := http.StatusBadGateway, fmt.Sprintf("upstream returned status %d", status)
	if err == nil {
		if c, cerr := strconv.Atoi(string(out.Field(0))); cerr == nil && c >= 400 && c <= 599 {
			code = c
		}
		if m := string(out.Field(1)); m != "" {
			msg = m
		}
	}
	e := &apierr.Error{
		Status:    code,
		Message:   u.Scrub("provider " + u.Endpoint.Provider.Slug + ": " + msg),
		Metadata:  map[string]any{"provider_name": u.Endpoint.Provider.Slug, "upstream_status": status},
		Retryable: retryable(code),
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable || status == apierr.StatusOverloaded {
		e.RetryAfter = retryAfter(u.Resp.Header, time.Now())
	}
	return e
}

// maxRetryAfter bounds what an upstream's Retry-After can make the gateway
// say or do: a day is longer than any real rate-limit window.
const maxRetryAfter = 24 * time.Hour

// retryAfter reads a response's Retry-After (RFC 9110: delay seconds or an
// HTTP date), or OpenAI's retry-after-ms; 0 when absent, unparseable or
// already past.
func retryAfter(h http.Header, now time.Time) time.Duration {
	var d time.Duration
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		d = time.Duration(ms * float64(time.Millisecond))
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs > 0 {
			d = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
		} else if at, err := http.ParseTime(v); err == nil && at.After(now) {
			d = at.Sub(now)
		}
	}
	return min(d, maxRetryAfter)
}

func retryable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, apierr.StatusEdgeTimeout, apierr.StatusOverloaded:
		return true
	}
	return status >= 500
}

// scrub removes the provider's secret from text that may reach a client or
// a log: upstream messages sometimes quote the credential they rejected.
func (u *Call) Scrub(text string) string {
	p := u.Endpoint.Provider
	if p.Auth != nil {
		text = p.Auth.Scrub(text)
	}
	return redact.Secret(text, p.APIKey)
}

// interned is string(b) for the methods and paths adapters return: a few
// per provider and model, made into strings on every call otherwise. The
// table is copied on write (reads take no lock) and stops growing at
// maxInterned entries, against a module that makes up a path per call.
func interned(b []byte) string {
	p := internTable.Load()
	t := *p
	if s, ok := t[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(t) < maxInterned && len(b) <= 256 {
		next := make(map[string]string, len(t)+1)
		maps.Copy(next, t)
		next[s] = s
		internTable.CompareAndSwap(p, &next) // lost to another writer: it is added next time
	}
	return s
}

const maxInterned = 256

var internTable = func() *atomic.Pointer[map[string]string] {
	var p atomic.Pointer[map[string]string]
	p.Store(&map[string]string{"POST": "POST", "GET": "GET"})
	return &p
}()

// DeadlineError is the error of work whose context's deadline ran out: the
// request's (408, naming timeouts.request), or — when the deadline was a
// module call's (a plugin's chat sub-request) — the module's own error,
// which names the module and its time limit (context.Cause).
func DeadlineError(ctx context.Context, request time.Duration) *apierr.Error {
	var e *apierr.Error
	if errors.As(context.Cause(ctx), &e) {
		out := *e
		return &out
	}
	return &apierr.Error{Status: http.StatusRequestTimeout,
		Message: fmt.Sprintf("request exceeded the gateway's time limit of %s", request)}
}
