package wasm

import (
	"errors"
	"net"
	"net/netip"
	"testing"
)

// TestSSRFGuardRanges: the guard refuses every special-purpose block of
// IANA's registries that is not globally reachable, and the transition
// prefixes that reach IPv4 through a translator or relay (NAT64, 6to4,
// Teredo), both as a URL's literal (isPublic) and where the dialer checks
// the address it connects to (publicOnly); public addresses pass.
func TestSSRFGuardRanges(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		// IPv4
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.0.0.1", false},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"169.254.169.254", false},
		{"172.16.0.1", false},
		{"192.0.0.1", false},
		{"192.0.2.1", false},
		{"192.88.99.1", false},
		{"192.168.1.1", false},
		{"198.18.0.1", false},
		{"198.19.255.1", false},
		{"198.51.100.1", false},
		{"203.0.113.1", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"100.63.255.255", true},
		{"198.20.0.1", true},
		{"223.255.255.254", true},
		// IPv6
		{"::", false},
		{"::1", false},
		{"::127.0.0.1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:255.255.255.255", false},
		{"64:ff9b::7f00:1", false},     // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", false},  // NAT64 of 169.254.169.254
		{"64:ff9b::808:808", false},    // NAT64 of a public address: refused too
		{"64:ff9b:1::a00:1", false},    // local-use NAT64
		{"100::1", false},              // discard-only
		{"2001:0:4136:e378::1", false}, // Teredo
		{"2001:2::1", false},           // benchmarking
		{"2001:db8::1", false},
		{"2002:7f00:1::1", false}, // 6to4 of 127.0.0.1
		{"2002:808:808::1", false},
		{"3fff::1", false},
		{"5f00::1", false}, // SRv6 SIDs: outside global unicast
		{"fc00::1", false},
		{"fd00:ec2::254", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fec0::1", false},
		{"ff02::1", false},
		{"ff05::2", false},
		{"2606:4700:4700::1111", true},
		{"2a00:1450:4001:80b::200e", true},
		{"::ffff:8.8.8.8", true},
	} {
		ip := netip.MustParseAddr(tc.addr)
		if got := isPublic(ip); got != tc.public {
			t.Errorf("isPublic(%s) = %v, want %v", tc.addr, got, tc.public)
		}
		err := publicOnly("tcp", net.JoinHostPort(ip.WithZone("").String(), "443"), nil)
		if tc.public && err != nil {
			t.Errorf("the dialer refuses %s: %v", tc.addr, err)
		}
		if !tc.public && !errors.Is(err, errNotPublic) {
			t.Errorf("the dialer lets %s through: %v", tc.addr, err)
		}
	}
}
