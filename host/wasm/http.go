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
	return HTTPLimits{CallsPerRequest: 16, MaxResponseBytes: 4 << 20, Timeout: 10 * time.Second}
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	d := DefaultHTTPLimits()
	orDefault(&l.CallsPerRequest, d.CallsPerRequest)
	orDefault(&l.MaxResponseBytes, d.MaxResponseBytes)
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
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
	defer waitedSince(ctx, time.Now()) // the network: not module time
	var code int64
	in.pending, code = e.httpCall(ctx, in.owner, m, ptr, n)
	return code
}

// httpCall makes the outbound call the frame at ptr asks for and returns
// the response frame and its size, or a message and a negative code.
func (e *Engine) httpCall(ctx context.Context, mod *Module, m api.Module, ptr, n uint32) ([]byte, int64) {
	var secrets []usedSecret
	fail := func(code int64, format string, args ...any) ([]byte, int64) {
		// A message may quote the URL (the client's errors do): never
		// with a secret in it.
		return abi.AppendFieldString(nil, scrub(fmt.Sprintf(format, args...), secrets)), code
	}
	if !mod.Manifest.GrantsHostFunction(abi.HostHTTPRequest) {
		return fail(abi.HTTPDenied, "http is not granted")
	}
	frame, ok := m.Memory().Read(ptr, n)
	if !ok {
		return fail(abi.HTTPFailed, "request outside module memory")
	}
	fields, err := abi.Fields(nil, frame)
	if err != nil || len(fields) < 2 {
		return fail(abi.HTTPFailed, "malformed request frame")
	}
	lim := e.cfg.HTTP.withDefaults()
	env := envOf(ctx)
	budget := env.HTTPCalls
	if budget <= 0 {
		budget = lim.CallsPerRequest
	}
	if !spend(&env.httpUsed, budget) {
		return fail(abi.HTTPBudget, "this request's budget of %d http calls is spent", budget)
	}
	method, rawURL := string(fields[0]), string(fields[1])
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return fail(abi.HTTPDenied, "url %q is not an http(s) URL", rawURL)
	}
	if !mod.Manifest.GrantsDomain(u.Hostname()) {
		return fail(abi.HTTPDenied, "domain %s is not granted to this module", u.Hostname())
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !isPublic(ip) && !e.cfg.AllowPrivateNetworks && !(lim.mayReachPrivate(mod) && lim.privateHost(hostPort(u))) {
		return fail(abi.HTTPDenied, "%v: %s", errNotPublic, ip)
	}
	// Secrets go in only now that the destination is known to be granted,
	// and only into the query and header values.
	if u.RawQuery, secrets, err = e.substituteSecrets(mod, u.RawQuery, true, secrets); err != nil {
		return fail(abi.HTTPDenied, "%v", err)
	}
	var body io.Reader
	if len(fields) > 3 {
		body = bytes.NewReader(fields[3])
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fail(abi.HTTPFailed, "%v", err)
	}
	if len(fields) > 2 {
		for _, line := range strings.Split(string(fields[2]), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) != "" {
				if v, secrets, err = e.substituteSecrets(mod, strings.TrimSpace(v), false, secrets); err != nil {
					return fail(abi.HTTPDenied, "%v", err)
				}
				req.Header.Add(strings.TrimSpace(k), v)
			}
		}
	}
	resp, err := e.httpClient(mod).Do(req)
	if err != nil {
		if errors.Is(err, errNotPublic) {
			return fail(abi.HTTPDenied, "%s resolves to an address that is not public", u.Hostname())
		}
		return fail(abi.HTTPFailed, "request failed: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, lim.MaxResponseBytes+1))
	if err != nil {
		return fail(abi.HTTPFailed, "reading the response: %v", err)
	}
	if int64(len(b)) > lim.MaxResponseBytes {
		return fail(abi.HTTPFailed, "response larger than %d bytes", lim.MaxResponseBytes)
	}
	var hdr strings.Builder
	for k, vs := range resp.Header {
		for _, v := range vs {
			hdr.WriteString(k + ": " + v + "\n")
		}
	}
	// A server that echoes the request (or a hostile one on a granted
	// domain) must not hand the secret to the module.
	if len(secrets) > 0 {
		b = scrubBytes(b, secrets)
	}
	out := abi.AppendFieldString(nil, strconv.Itoa(resp.StatusCode))
	out = abi.AppendFieldString(out, scrub(hdr.String(), secrets))
	out = abi.AppendField(out, b)
	return out, int64(len(out))
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
