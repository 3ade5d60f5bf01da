package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
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

const (
	maxHTTPResponse = 4 << 20
	httpTimeout     = 10 * time.Second
)

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

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("fd00:ec2::/32"), // cloud metadata over IPv6
}

func isPublic(ip netip.Addr) bool {
	ip = ip.Unmap()
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

func (e *Engine) httpClient() *http.Client {
	e.httpOnce.Do(func() {
		d := &net.Dialer{Timeout: 5 * time.Second}
		if !e.AllowPrivateNetworks {
			d.Control = publicOnly
		}
		e.client = &http.Client{
			Timeout: httpTimeout,
			Transport: &http.Transport{
				DialContext:         d.DialContext,
				MaxIdleConnsPerHost: 16,
				TLSHandshakeTimeout: 5 * time.Second,
				Proxy:               nil, // a proxy would dial on the module's behalf, past the check
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	})
	return e.client
}

// hostHTTPRequest implements http_request for the calling instance.
func (e *Engine) hostHTTPRequest(ctx context.Context, m api.Module, ptr, n uint32) int64 {
	in := e.instanceOf(m)
	if in == nil {
		return abi.HTTPFailed
	}
	fail := func(code int64, format string, args ...any) int64 {
		in.pending = abi.AppendFieldString(nil, fmt.Sprintf(format, args...))
		return code
	}
	if !in.owner.Manifest.GrantsHostFunction(abi.HostHTTPRequest) {
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
	method, rawURL := string(fields[0]), string(fields[1])
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return fail(abi.HTTPDenied, "url %q is not an http(s) URL", rawURL)
	}
	if !in.owner.Manifest.GrantsDomain(u.Hostname()) {
		return fail(abi.HTTPDenied, "domain %s is not granted to this module", u.Hostname())
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !isPublic(ip) && !e.AllowPrivateNetworks {
		return fail(abi.HTTPDenied, "%v: %s", errNotPublic, ip)
	}
	var body io.Reader
	if len(fields) > 3 {
		body = bytes.NewReader(fields[3])
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fail(abi.HTTPFailed, "%v", err)
	}
	if len(fields) > 2 {
		for _, line := range strings.Split(string(fields[2]), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) != "" {
				req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
		}
	}
	resp, err := e.httpClient().Do(req)
	if err != nil {
		if errors.Is(err, errNotPublic) {
			return fail(abi.HTTPDenied, "%s resolves to an address that is not public", u.Hostname())
		}
		return fail(abi.HTTPFailed, "request failed: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPResponse+1))
	if err != nil {
		return fail(abi.HTTPFailed, "reading the response: %v", err)
	}
	if len(b) > maxHTTPResponse {
		return fail(abi.HTTPFailed, "response larger than %d bytes", maxHTTPResponse)
	}
	var hdr strings.Builder
	for k, vs := range resp.Header {
		for _, v := range vs {
			hdr.WriteString(k + ": " + v + "\n")
		}
	}
	out := abi.AppendFieldString(nil, strconv.Itoa(resp.StatusCode))
	out = abi.AppendFieldString(out, hdr.String())
	in.pending = abi.AppendField(out, b)
	return int64(len(in.pending))
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
