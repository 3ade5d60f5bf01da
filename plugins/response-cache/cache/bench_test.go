//go:build !wasip1

package cache_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// fresh numbers the semantic misses' questions across runs.
var fresh atomic.Int64

// letters spells i in base 26 letters (the fake embedder drops digits).
func letters(i int) string {
	s := ""
	for {
		s = string(rune('a'+i%26)) + s
		i /= 26
		if i == 0 {
			return s + "x"
		}
	}
}

// BenchmarkResponseCache is the cost of a request through the gateway on
// loopback with the response cache: a hit (answered from the kv store, no
// upstream call) against a miss (looked up, sent to the fake upstream,
// stored) and against the same request without the cache. The upstream is
// the in-process demo fake, which answers at once: a real model's seconds
// are what a hit saves on top of this. make bench runs it.
func BenchmarkResponseCache(b *testing.B) {
	emb, err := startEmbedFake()
	if err != nil {
		b.Fatal(err)
	}
	defer emb.srv.Close()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, Mutate: func(c *config.Config) { addEmbedProvider(c, emb.srv.URL) }})
	if err != nil {
		b.Fatalf("%v (run make wasm)", err)
	}
	defer g.Close()
	run := func(b *testing.B, body func(i int) string, want string) {
		for i := 0; i < b.N; i++ {
			q := body(i)
			resp, out, err := g.Request("POST", "/chat/completions", q, "X-Service-Metadata", "enabled")
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Cache") != want {
				b.Fatalf("%v %d X-Cache %q: %s\n%s", err, resp.StatusCode, resp.Header.Get("X-Cache"), gjson.GetBytes(out, "service_metadata").Raw, q)
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
	// Semantic mode: a paraphrase of a stored question (an embedding
	// sub-request to the loopback fake, a vector search, the hit), and a
	// new question each time (embedding, search, upstream, store and
	// index).
	if resp, _, err := g.Request("POST", "/chat/completions", semantic(asked)); err != nil || resp.StatusCode != 200 {
		b.Fatalf("warm-up: %v", err)
	}
	b.Run("semantic-hit", func(b *testing.B) {
		run(b, func(int) string { return semantic(paraphrase) }, "HIT")
	})
	b.Run("semantic-miss", func(b *testing.B) {
		// Three new words each time, which the fake embeds on hashed
		// dimensions: two questions share at most a dimension or two by
		// collision (similarity <= 0.67), never all three.
		run(b, func(int) string {
			w := letters(int(fresh.Add(1)))
			return semantic(fmt.Sprintf("Tell me about %sa %sb %sc", w, w, w))
		}, "MISS")
	})
	b.Run("no-cache", func(b *testing.B) {
		run(b, func(int) string {
			return strings.Replace(question, `{"id":"response-cache"}`, `{"id":"response-cache","enabled":false}`, 1)
		}, "")
	})
}
