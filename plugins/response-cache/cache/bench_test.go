//go:build !wasip1

package cache_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// BenchmarkResponseCache is the cost of a request through the gateway on
// loopback with the response cache: a hit (answered from the kv store, no
// upstream call) against a miss (looked up, sent to the fake upstream,
// stored) and against the same request without the cache. The upstream is
// the in-process demo fake, which answers at once: a real model's seconds
// are what a hit saves on top of this. make bench runs it.
func BenchmarkResponseCache(b *testing.B) {
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		b.Fatalf("%v (run make wasm)", err)
	}
	defer g.Close()
	run := func(b *testing.B, body func(i int) string, want string) {
		for i := 0; i < b.N; i++ {
			resp, _, err := g.Request("POST", "/chat/completions", body(i))
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Cache") != want {
				b.Fatalf("%v %v X-Cache %q", err, resp, resp.Header.Get("X-Cache"))
			}
		}
	}
	if resp, _, err := g.Request("POST", "/chat/completions", question); err != nil || resp.StatusCode != 200 {
		b.Fatalf("warm-up: %v", err)
	}
	b.Run("hit", func(b *testing.B) {
		run(b, func(int) string { return question }, "HIT")
	})
	b.Run("miss", func(b *testing.B) {
		// A fresh question each time; the kv store's quota (1000 entries)
		// is reached past 1000 iterations, and each miss then evicts one.
		run(b, func(i int) string {
			return strings.Replace(question, "France", fmt.Sprintf("country %d-%d", b.N, i), 1)
		}, "MISS")
	})
	b.Run("no-cache", func(b *testing.B) {
		run(b, func(int) string {
			return strings.Replace(question, `{"id":"response-cache"}`, `{"id":"response-cache","enabled":false}`, 1)
		}, "")
	})
}
