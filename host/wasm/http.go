package wasm

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/tetratelabs/wazero/api"
)

// Outbound calls from modules. The host makes them (modules have no
// sockets), only to the domains the manifest grants, and never to a
// loopback, private, link-local (cloud metadata) or otherwise non-public
// address: the check runs on the address actually dialled, so DNS rebinding
// does not get around it. Redirects are not followed.

// HTTPLimits bound the http_request host function. Zero fields take the
// defaults of DefaultHTTPLimits.
type HTTPLimits struct {
	// CallsPerRequest is the default budget of http_request calls of one
	// request, across all its module calls (CallEnv.HTTPCalls overrides
	// it). Past it a call answers HostBudget.
	CallsPerRequest int
	// MaxResponseBytes caps a response body; a larger one fails the call.
	MaxResponseBytes int64
	// Timeout bounds one call, from dialling to the end of the body.
	Timeout time.Duration
	// MinBytesPerSecond fails a body that arrives slower than this on
	// average, from a second after the response's headers; negative: no
	// floor.
	MinBytesPerSecond int64
	// PrivateHosts are "host:port" (or "host", any port) destinations the
	// operator lets modules reach although they are loopback or private
	// (an intranet page, a test server). The module still needs the host
	// in grants.http_domains; every other destination stays public-only.
	PrivateHosts []string
	// PrivateHostAccounts are the accounts whose own modules may reach
	// PrivateHosts too; by default only the operator's (gateway-wide)
	// modules may: a tenant granting itself http_domains ["*"] must not
	// reach the operator's intranet.
	PrivateHostAccounts []string
	// RootCAs, when set, are the certificate authorities https calls
	// trust (the operator's extra CAs on top of the system's); nil: the
	// system's.
	RootCAs *x509.CertPool
}

// DefaultHTTPLimits are the limits the operator did not set.
func DefaultHTTPLimits() HTTPLimits {
	return HTTPLimits{CallsPerRequest: 16, MaxResponseBytes: 4 << 20, Timeout: 10 * time.Second, MinBytesPerSecond: 1024}
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	d := DefaultHTTPLimits()
	orDefault(&l.CallsPerRequest, d.CallsPerRequest)
	orDefault(&l.MaxResponseBytes, d.MaxResponseBytes)
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	if l.MinBytesPerSecond == 0 {
		l.MinBytesPerSecond = d.MinBytesPerSecond // negative: no floor
	}
	return l
}

// privateHost reports whether the operator granted hostport ("host:port",
// the address a request dials) although it is not public.
func (l HTTPLimits) privateHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	for _, p := range l.PrivateHosts {
		p = strings.ToLower(p)
		if p == strings.ToLower(hostport) || p == strings.ToLower(host) {
			return true
		}
	}
	return false
}

var errNotPublic = errors.New("destination address is not public")

// publicOnly refuses to connect to any address that is not a public
// unicast one.
func publicOnly(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if !isPublic(ip) {
		return fmt.Errorf("%w: %s", errNotPublic, ip)
	}
	return nil
}

// nonPublic are the special-purpose blocks of IANA's registries (RFC 6890
// and its updates) that are not globally reachable, beyond what netip's
// predicates cover, and the transition prefixes that reach any IPv4
// address — private and loopback ones included — through a translator or
// a relay: NAT64, 6to4, Teredo. An IPv4-mapped IPv6 address (::ffff:0:0/96)
// is judged as the IPv4 address it maps.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and 255.255.255.255 (limited broadcast)
	// IPv6 outside global unicast (2000::/3) is refused whole (isPublic);
	// these are named for the reader and the tests.
	netip.MustParsePrefix("::/96"),          // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64, well-known prefix
	netip.MustParsePrefix("64:ff9b:1::/48"), // NAT64, local use
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
	netip.MustParsePrefix("fd00:ec2::/32"),  // cloud metadata over IPv6
	// Inside 2000::/3.
	netip.MustParsePrefix("2001::/23"),     // IETF protocol assignments: Teredo (2001::/32), benchmarking, ORCHID
	netip.MustParsePrefix("2001:db8::/32"), // documentation
	netip.MustParsePrefix("2002::/16"),     // 6to4
	netip.MustParsePrefix("3fff::/20"),     // documentation
}

// globalUnicast6 holds every globally reachable IPv6 unicast address.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

func isPublic(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || (ip.Is6() && !globalUnicast6.Contains(ip)) {
		return false
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// mayReachPrivate reports whether mod may reach the operator's private
// hosts: the operator's own modules, and those of accounts the operator
// names.
func (l HTTPLimits) mayReachPrivate(mod *Module) bool {
	return mod.account == "" || slices.Contains(l.PrivateHostAccounts, mod.account)
}

// httpClient is the client mod's calls use. There are two, built once:
// one whose dialer lets the operator's private hosts through, for modules
// that may reach them, and one that guards every address, for the rest.
// Two transports (not one dialer asking per call) so a pooled connection
// to a private host is never handed to a module that may not reach it.
func (e *Engine) httpClient(mod *Module) *http.Client {
	e.httpOnce.Do(func() {
		lim := e.cfg.HTTP.withDefaults()
		e.privateClient = e.newHTTPClient(lim, true)
		e.client = e.newHTTPClient(lim, false)
	})
	if e.cfg.HTTP.mayReachPrivate(mod) {
		return e.privateClient
	}
	return e.client
}

func (e *Engine) newHTTPClient(lim HTTPLimits, private bool) *http.Client {
	open := &net.Dialer{Timeout: 5 * time.Second}
	guarded := &net.Dialer{Timeout: 5 * time.Second}
	if !e.cfg.AllowPrivateNetworks {
		guarded.Control = publicOnly
	}
	// addr is the URL's host and port, before resolution: the
	// operator's private hosts are granted by name.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if private && lim.privateHost(addr) {
			return open.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
	var tlsConf *tls.Config
	if lim.RootCAs != nil {
		tlsConf = &tls.Config{RootCAs: lim.RootCAs}
	}
	return &http.Client{
		Timeout: lim.Timeout,
		Transport: &http.Transport{
			DialContext:         dial,
			MaxIdleConnsPerHost: 16,
			TLSHandshakeTimeout: 5 * time.Second,
			TLSClientConfig:     tlsConf,
			Proxy:               nil, // a proxy would dial on the module's behalf, past the check
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// hostHTTPRequest implements http_request for the calling instance.
func (e *Engine) hostHTTPRequest(ctx context.Context, m api.Module, ptr, n uint32) int64 {
	in := e.instanceOf(m)
	if in == nil {
		return abi.HTTPFailed
	}
	defer waitedSince(ctx, clockOf(ctx)) // the network: not module time
	frame, ok := m.Memory().Read(ptr, n)
	var code int64
	in.pending, code = e.httpCall(ctx, in.owner, frame, ok)
	return code
}

// httpCall makes the outbound call the request frame asks for (inMemory
// false: the guest pointed outside its memory) and returns the response
// frame and its size, or a message and a negative code. Native modules
// (hostHTTPRequest) and Extism ones (extismHostFunc) share it.
func (e *Engine) httpCall(ctx context.Context, mod *Module, frame []byte, inMemory bool) ([]byte, int64) {
	o := outbound{e: e, mod: mod}
	out, herr := o.call(ctx, frame, inMemory)
	if herr != nil {
		// A message may quote the URL (the client's errors do): never
		// with a secret in it.
		return abi.AppendFieldString(nil, scrub(herr.msg, o.secrets)), herr.code
	}
	return out, int64(len(out))
}

// outbound is one http_request of module mod: the limits it runs under and
// the operator secrets substituted into it so far (scrubbed from what the
// module reads back).
type outbound struct {
	e       *Engine
	mod     *Module
	lim     HTTPLimits
	secrets []usedSecret
}

// httpErr is a refused or failed http_request: the negative code the guest
// gets and the message (secrets not yet scrubbed).
type httpErr struct {
	code int64
	msg  string
}

func refuse(code int64, format string, args ...any) *httpErr {
	return &httpErr{code: code, msg: fmt.Sprintf(format, args...)}
}

// call checks the request frame, makes the call and returns the response
// frame.
func (o *outbound) call(ctx context.Context, frame []byte, inMemory bool) ([]byte, *httpErr) {
	fields, herr := o.frame(frame, inMemory)
	if herr != nil {
		return nil, herr
	}
	o.lim = o.e.cfg.HTTP.withDefaults()
	env := envOf(ctx)
	budget := env.HTTPCalls
	if budget < 0 {
		return nil, refuse(abi.HTTPDenied, "no http calls in this call (a publish-time check)")
	}
	if budget == 0 {
		budget = o.lim.CallsPerRequest
	}
	if !spend(&env.httpUsed, budget) {
		return nil, refuse(abi.HTTPBudget, "this request's budget of %d http calls is spent", budget)
	}
	u, herr := o.target(string(fields[1]))
	if herr != nil {
		return nil, herr
	}
	var body io.Reader
	if len(fields) > 3 {
		body = bytes.NewReader(fields[3])
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, o.lim.Timeout)
	defer cancelTimeout()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, string(fields[0]), u.String(), body)
	if err != nil {
		return nil, refuse(abi.HTTPFailed, "%v", err)
	}
	if len(fields) > 2 {
		if herr := o.headers(req, fields[2]); herr != nil {
			return nil, herr
		}
	}
	return o.do(ctx, req, u.Hostname(), cancel)
}

// frame splits the request frame (method, URL, headers, body) of a module
// granted http.
func (o *outbound) frame(frame []byte, inMemory bool) ([][]byte, *httpErr) {
	if !o.mod.Manifest.GrantsHostFunction(abi.HostHTTPRequest) {
		return nil, refuse(abi.HTTPDenied, "http is not granted")
	}
	if !inMemory {
		return nil, refuse(abi.HTTPFailed, "request outside module memory")
	}
	fields, err := abi.Fields(nil, frame)
	if err != nil || len(fields) < 2 {
		return nil, refuse(abi.HTTPFailed, "malformed request frame")
	}
	return fields, nil
}

// target parses rawURL and checks that the module may call it: http(s),
// a granted domain, and not a private address by IP unless allowed. The
// secrets go into its query only then.
func (o *outbound) target(rawURL string) (*url.URL, *httpErr) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, refuse(abi.HTTPDenied, "url %q is not an http(s) URL", rawURL)
	}
	if !o.mod.Manifest.GrantsDomain(u.Hostname()) {
		return nil, refuse(abi.HTTPDenied, "domain %s is not granted to this module", u.Hostname())
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !isPublic(ip) && !o.e.cfg.AllowPrivateNetworks && !(o.lim.mayReachPrivate(o.mod) && o.lim.privateHost(hostPort(u))) {
		return nil, refuse(abi.HTTPDenied, "%v: %s", errNotPublic, ip)
	}
	// Secrets go in only now that the destination is known to be granted,
	// and only into the query and header values.
	if u.RawQuery, o.secrets, err = o.e.substituteSecrets(o.mod, u.RawQuery, true, o.secrets); err != nil {
		return nil, refuse(abi.HTTPDenied, "%v", err)
	}
	return u, nil
}

// headers adds the frame's header lines ("Name: value") to req, with the
// secrets substituted into the values.
func (o *outbound) headers(req *http.Request, lines []byte) *httpErr {
	for _, line := range strings.Split(string(lines), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) != "" {
			var err error
			if v, o.secrets, err = o.e.substituteSecrets(o.mod, strings.TrimSpace(v), false, o.secrets); err != nil {
				return refuse(abi.HTTPDenied, "%v", err)
			}
			req.Header.Add(strings.TrimSpace(k), v)
		}
	}
	return nil
}

// do sends req (to host) and reads the response within the limits: its
// size, and the rate floor (cancel ends a body that falls behind it).
func (o *outbound) do(ctx context.Context, req *http.Request, host string, cancel context.CancelCauseFunc) ([]byte, *httpErr) {
	resp, err := o.e.httpClient(o.mod).Do(req)
	if err != nil {
		if errors.Is(err, errNotPublic) {
			return nil, refuse(abi.HTTPDenied, "%s resolves to an address that is not public", host)
		}
		return nil, refuse(abi.HTTPFailed, "request failed: %v", err)
	}
	defer resp.Body.Close()
	var src io.Reader = resp.Body
	if o.lim.MinBytesPerSecond > 0 {
		g := newRateGuard(float64(o.lim.MinBytesPerSecond), cancel)
		defer g.stop()
		src = g.reader(resp.Body)
	}
	b, err := io.ReadAll(io.LimitReader(src, o.lim.MaxResponseBytes+1))
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errTooSlow) {
			err = cause
		}
		return nil, refuse(abi.HTTPFailed, "reading the response: %v", err)
	}
	if int64(len(b)) > o.lim.MaxResponseBytes {
		return nil, refuse(abi.HTTPFailed, "response larger than %d bytes", o.lim.MaxResponseBytes)
	}
	return o.response(resp, b), nil
}

// response is the frame the module reads: status, header lines, body.
func (o *outbound) response(resp *http.Response, b []byte) []byte {
	var hdr strings.Builder
	for k, vs := range resp.Header {
		for _, v := range vs {
			hdr.WriteString(k + ": " + v + "\n")
		}
	}
	// A server that echoes the request (or a hostile one on a granted
	// domain) must not hand the secret to the module.
	if len(o.secrets) > 0 {
		b = scrubBytes(b, o.secrets)
	}
	out := abi.AppendFieldString(nil, strconv.Itoa(resp.StatusCode))
	out = abi.AppendFieldString(out, scrub(hdr.String(), o.secrets))
	return abi.AppendField(out, b)
}

// hostPort is u's host and port, the port defaulted from the scheme.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// hostHTTPResponse copies the pending response into the guest.
func (e *Engine) hostHTTPResponse(_ context.Context, m api.Module, ptr, limit uint32) uint32 {
	in := e.instanceOf(m)
	if in == nil {
		return 0
	}
	n := uint32(len(in.pending))
	c := min(n, limit)
	if c > 0 && !m.Memory().Write(ptr, in.pending[:c]) {
		return 0
	}
	return n
}

// errTooSlow ends a response whose body arrives slower than the floor.
var errTooSlow = errors.New("the response arrived slower than the gateway's floor (modules.http.min_bytes_per_second)")

// rateGuard cancels a response's context when its body falls behind min
// bytes a second on average, counted from a second after its headers: a
// timer set for the moment the bytes read so far stop covering the
// average, so a body that stalls is caught as well as one that trickles.
type rateGuard struct {
	start  time.Time
	min    float64
	n      atomic.Int64
	cancel context.CancelCauseFunc
	t      *time.Timer
}

const rateGrace = time.Second

func newRateGuard(min float64, cancel context.CancelCauseFunc) *rateGuard {
	g := &rateGuard{start: time.Now().Add(rateGrace), min: min, cancel: cancel}
	g.t = time.AfterFunc(rateGrace, g.check)
	return g
}

func (g *rateGuard) check() {
	covered := g.start.Add(time.Duration(float64(g.n.Load()) / g.min * float64(time.Second)))
	if wait := time.Until(covered); wait > 0 {
		g.t.Reset(max(wait, 50*time.Millisecond))
		return
	}
	g.cancel(errTooSlow)
}

func (g *rateGuard) stop() { g.t.Stop() }

func (g *rateGuard) reader(r io.Reader) io.Reader { return rateReader{r, g} }

type rateReader struct {
	r io.Reader
	g *rateGuard
}

func (r rateReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.g.n.Add(int64(n))
	return n, err
}
