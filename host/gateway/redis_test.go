package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/redistest"
	"github.com/tidwall/gjson"
)

// twoInstances starts two gateways sharing one Redis. Each has its own
// store (two bbolt files); both are given the same bootstrap key, so the
// key has the same hash on both, which is what the limiter counts by.
func twoInstances(t *testing.T, providers ...string) (*gatewaytest.Gateway, *gatewaytest.Gateway, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	var gws [2]*gatewaytest.Gateway
	for i := range gws {
		g, err := gatewaytest.Start(gatewaytest.Options{Providers: providers, Quiet: true,
			Mutate: func(c *config.Config) {
				c.Redis.URL, c.Metrics.Listen = srv.URL, "127.0.0.1:0"
				// The default 250 ms per call is for production; under
				// -race on a loaded machine a script can take longer, and
				// the limiter would then (as designed) limit per instance.
				c.Redis.Timeout = config.Duration(10 * time.Second)
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.Close)
		gws[i] = g
	}
	return gws[0], gws[1], srv
}

const helloChat = `{"model":"test/chat","messages":[{"role":"user","content":"hello"}]}`

// Behind a load balancer, a key limited to N requests a minute gets N
// answers in all from two gateways, and every other request is the spec's
// 429 (with one gateway per instance it would get 2N).
func TestClusterRateLimitAcrossGateways(t *testing.T) {
	a, b, _ := twoInstances(t)
	const n = 6 // a refill takes 10 s, far longer than the requests below
	hash := keys.HashOf(gatewaytest.Key)
	for _, g := range []*gatewaytest.Gateway{a, b} {
		resp, body, err := g.Request(http.MethodPatch, "/keys/"+hash, `{"rate_limits":{"requests_per_minute":`+strconv.Itoa(n)+`}}`)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("set the key's limits: %v %d %s", err, resp.StatusCode, body)
		}
	}
	type answer struct {
		resp *http.Response
		body []byte
	}
	answers := make([]answer, 4*n)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := []*gatewaytest.Gateway{a, b}[i%2]
			resp, body, err := g.Request(http.MethodPost, "/chat/completions", helloChat)
			if err != nil {
				t.Error(err)
				return
			}
			answers[i] = answer{resp, body}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ok, refused := 0, 0
	for i, a := range answers {
		h := a.resp.Header
		switch a.resp.StatusCode {
		case 200:
			ok++
		case 429:
			refused++
			r := gjson.ParseBytes(a.body)
			if r.Get("error.code").Int() != 429 || r.Get("error.metadata.reason").Str != "rate_limited" ||
				r.Get("error.metadata.limit").Str != "key_requests_per_minute" || !r.Get("user_id").Exists() {
				t.Fatalf("answer %d: 429 envelope %s", i, a.body)
			}
			if s, err := strconv.Atoi(h.Get("Retry-After")); err != nil || s < 1 || s > 60 {
				t.Fatalf("answer %d: Retry-After %q", i, h.Get("Retry-After"))
			}
			if h.Get("X-RateLimit-Limit") != strconv.Itoa(n) || h.Get("X-RateLimit-Remaining") != "0" || h.Get("X-RateLimit-Reset") == "" {
				t.Fatalf("answer %d: X-RateLimit headers %v", i, h)
			}
		default:
			t.Fatalf("answer %d: %d %s", i, a.resp.StatusCode, a.body)
		}
	}
	if ok != n || refused != 3*n {
		t.Fatalf("%d answered and %d refused by two gateways for a key limited to %d a minute; want %d and %d", ok, refused, n, n, 3*n)
	}
}

// A session pinned on one gateway is routed to the same provider by the
// other.
func TestClusterStickySessionAcrossGateways(t *testing.T) {
	a, b, _ := twoInstances(t, "alpha", "beta")
	// Pinned to beta (the dearer, so the balancer's less likely pick) by a
	// request that asks for it.
	resp, body, err := a.Request(http.MethodPost, "/chat/completions",
		`{"model":"test/chat","session_id":"conv-1","provider":{"order":["beta"]},"messages":[{"role":"user","content":"hi"}]}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("pinning request: %v %d %s", err, resp.StatusCode, body)
	}
	if p := gjson.GetBytes(body, "provider").Str; p != "beta" {
		t.Fatalf("pinning request served by %q", p)
	}
	for i := range 10 {
		resp, body, err := b.Request(http.MethodPost, "/chat/completions",
			`{"model":"test/chat","session_id":"conv-1","messages":[{"role":"user","content":"again"}]}`)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d on the other gateway: %v %d %s", i, err, resp.StatusCode, body)
		}
		if p := gjson.GetBytes(body, "provider").Str; p != "beta" {
			t.Fatalf("request %d on the other gateway served by %q, want the session's beta", i, p)
		}
	}
}

// A redis.url that does not parse stops the start with a message that
// does not repeat the password.
func TestRedisURLRejected(t *testing.T) {
	_, err := gatewaytest.Start(gatewaytest.Options{Quiet: true,
		Mutate: func(c *config.Config) { c.Redis.URL = "redis://:hunter2@cache:notaport/0" }})
	if err == nil || !strings.Contains(err.Error(), "config: redis.url:") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v, want a redis.url error without the password", err)
	}
}

// With Redis gone the gateway keeps answering, and a key's limits hold per
// instance: never unlimited.
func TestClusterRedisDown(t *testing.T) {
	a, _, srv := twoInstances(t)
	resp, body, err := a.Request(http.MethodPatch, "/keys/"+keys.HashOf(gatewaytest.Key), `{"rate_limits":{"requests_per_minute":3}}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("set the key's limits: %v %d %s", err, resp.StatusCode, body)
	}
	srv.Stop()
	var status []int
	for range 5 {
		resp, body, err := a.Request(http.MethodPost, "/chat/completions", helloChat)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == 429 && gjson.GetBytes(body, "error.metadata.limit").Str != "key_requests_per_minute" {
			t.Fatalf("429 %s", body)
		}
		status = append(status, resp.StatusCode)
	}
	if fmt.Sprint(status) != "[200 200 200 429 429]" {
		t.Fatalf("statuses with Redis down %v, want 3 answers then 429s from the instance's own limiter", status)
	}
	// The operator sees it on /metrics.
	resp, err = http.Get(a.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(m), "\nswitchyard_ratelimit_fallback_total 5\n") {
		t.Fatalf("/metrics lacks switchyard_ratelimit_fallback_total 5:\n%s", grepLines(string(m), "switchyard_ratelimit"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
