package wasm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/wasm"
)

// TestHTTPGuardRefusesTransitionPrefixes: a module granted every domain
// asks the http host function for NAT64, 6to4 and Teredo addresses that
// lead to loopback, and for the limited broadcast address: each call is
// refused as not public, before anything is dialled.
func TestHTTPGuardRefusesTransitionPrefixes(t *testing.T) {
	e, _ := hostEngine(t, nil, func(c *wasm.Config) { c.HTTP = wasm.HTTPLimits{Timeout: 2 * time.Second} })
	mod := loadKit(t, e, `{"host_functions":["log","http","chat","count_tokens","kv","embed","vector"],"http_domains":["*"]}`)
	for _, u := range []string{
		"http://[64:ff9b::7f00:1]:8080/",                      // NAT64 of 127.0.0.1
		"http://[64:ff9b:1::7f00:1]:8080/",                    // local-use NAT64
		"http://[2002:7f00:1::1]:8080/",                       // 6to4 of 127.0.0.1
		"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:8080/", // Teredo
		"http://255.255.255.255:8080/",
		"http://[::ffff:255.255.255.255]:8080/",
		"http://240.0.0.1:8080/",
	} {
		t.Run(u, func(t *testing.T) {
			out := kitCall(t, mod, context.Background(), "http_repeat", nil, "url", u, "times", "1")
			wantHostCode(t, out, abi.HTTPDenied)
			if msg := string(out[len(out)-1]); !strings.Contains(msg, "not public") {
				t.Fatalf("message %q", msg)
			}
		})
	}
}
