//go:build !wasip1

package cache_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/kv"
	"github.com/switchyard/switchyard/host/store"
	"github.com/tidwall/gjson"
)

// fillSize is the entries per account of BenchmarkResponseCacheAt10k
// (SWITCHYARD_BENCH_FILL sets another, for a quick run).
var fillSize = func() int {
	if n, err := strconv.Atoi(os.Getenv("SWITCHYARD_BENCH_FILL")); err == nil && n > 0 {
		return n
	}
	return 10_000
}()

// BenchmarkResponseCacheAt10k is BenchmarkResponseCache with 10,000
// entries in the account: the kv store holds 10k answers and the vector
// index 10k vectors of the benchmark question's tag (the worst case for
// the search: every one is a candidate). The limits are configuration
// (modules.kv.max_keys, max_bytes; modules.vectors.max_per_partition,
// ann_threshold; tenant_modules.cpu_ms_per_minute), not the defaults,
// which cap an account at 1,000 answers.
// Account "flat" holds 10,000 entries, under ann_threshold (11,000) with
// the misses' new ones: its semantic lookups scan exactly; account "hnsw"
// holds 11,000, so its tag is searched through the HNSW graph. The fill goes to the stores
// directly (20k requests through the gateway would take minutes): random
// 256-dimension vectors (the fake embedder's size) and 1 KB answers under
// keys no request asks for.
func BenchmarkResponseCacheAt10k(b *testing.B) {
	emb, err := startEmbedFake()
	if err != nil {
		b.Fatal(err)
	}
	defer emb.srv.Close()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, Mutate: func(c *config.Config) {
		addEmbedProvider(c, emb.srv.URL)
		c.Modules.KV.MaxKeys = 3 * fillSize
		c.Modules.KV.MaxBytes = 256 << 20
		c.Modules.Vectors.MaxPerPartition = 3 * fillSize
		// Over the misses' new entries, so the flat account stays
		// under it (the put that reaches it would queue a background
		// build, and its searches would change from scan to graph
		// within the benchmark).
		c.Modules.Vectors.ANNThreshold = fillSize + 1000
		// An account's plugins get 15 s of module time a minute by
		// default, and a lookup's time includes its vector search:
		// exact scans of 10k vectors on this loaded machine spend it
		// within the benchmark's minute (a 429 then).
		c.TenantModules.CPUMsPerMinute = 600_000
	}})
	if err != nil {
		b.Fatalf("%v (run make wasm)", err)
	}
	defer g.Close()
	for _, acct := range []struct {
		name string
		n    int
	}{{"flat", fillSize}, {"hnsw", fillSize + 1000}} {
		id, key := newAccountB(b, g, acct.name)
		ask := func(b *testing.B, body, want string) {
			b.Helper()
			resp, out, err := g.Request("POST", "/chat/completions", body, "Authorization", "Bearer "+key, "X-Service-Metadata", "enabled")
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Cache") != want {
				b.Fatalf("%v %d X-Cache %q, want %q: %s\n%s", err, resp.StatusCode, resp.Header.Get("X-Cache"), want, gjson.GetBytes(out, "error").Raw, gjson.GetBytes(out, "service_metadata").Raw)
			}
		}
		// The entries the benchmark hits, stored by requests.
		ask(b, question, "MISS")
		ask(b, semantic(asked), "MISS")
		sc := kv.Scope{Module: "response-cache", Account: id}
		fill(b, g, sc, acct.n-1)
		// The hnsw account's graph is built in the background: its
		// searches scan exactly until it is installed.
		g.GW.Vectors().WaitBuilds()
		if got := g.GW.Vectors().Len(); got < acct.n {
			b.Fatalf("index holds %d entries, want at least %d", got, acct.n)
		}
		b.Run(acct.name+"/exact-hit", func(b *testing.B) {
			for range b.N {
				ask(b, question, "HIT")
			}
		})
		b.Run(acct.name+"/semantic-hit", func(b *testing.B) {
			for range b.N {
				ask(b, semantic(paraphrase), "HIT")
			}
		})
		b.Run(acct.name+"/exact-miss", func(b *testing.B) {
			for i := range b.N {
				ask(b, strings.Replace(question, "France", fmt.Sprintf("country %s %d-%d", acct.name, b.N, i), 1), "MISS")
			}
		})
		b.Run(acct.name+"/semantic-miss", func(b *testing.B) {
			for range b.N {
				w := letters(int(fresh.Add(1)))
				ask(b, semantic(fmt.Sprintf("Tell me about %sa %sb %sc", w, w, w)), "MISS")
			}
		})
	}
}

func newAccountB(b *testing.B, g *gatewaytest.Gateway, name string) (string, string) {
	acct, err := g.Keys.CreateAccount(name)
	if err != nil {
		b.Fatal(err)
	}
	key, _, err := g.Keys.CreateKey(acct.ID, name, "", false)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := g.Ledger.TopUp(acct.ID, 1e12, "bench"); err != nil {
		b.Fatal(err)
	}
	return acct.ID, key
}

// vectorTag is the tag of the vectors in sc's account partition ("a"),
// read from the store (the plugin's digest of the request as it went
// upstream); the partition's vectors are all of one tag here.
func vectorTag(b *testing.B, g *gatewaytest.Gateway, sc kv.Scope) string {
	tag := ""
	pk := sc.Owner + "\x00" + sc.Module + "\x00" + sc.Account + "\x00a"
	err := g.GW.DB.View(func(tx store.Tx) error {
		bk := tx.Bucket([]byte("vector_index")).Bucket([]byte(pk))
		if bk == nil {
			return fmt.Errorf("no vector partition %q", pk)
		}
		return bk.ForEach(func(_, v []byte) error {
			// encode: expiry, creation (8 bytes each), tag length (2), tag.
			tag = string(v[18 : 18+binary.BigEndian.Uint16(v[16:])])
			return nil
		})
	})
	if err != nil || tag == "" {
		b.Fatalf("the benchmark question's tag: %v", err)
	}
	return tag
}

// fill adds n answers to the account's kv scope and n vectors to its
// account partition ("a"), of the tag of the vector already there (the
// benchmark question's, read from the store: the tag is the plugin's
// digest of the request as it went upstream).
func fill(b *testing.B, g *gatewaytest.Gateway, sc kv.Scope, n int) {
	tag := vectorTag(b, g, sc)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	answer := []byte(strings.Repeat("x", 1024))
	v := make([]float32, embedDims)
	for i := range n {
		id := fmt.Sprintf("fill-%d", i)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		if _, err := g.GW.Vectors().Put(sc, "a", id, tag, v, time.Hour); err != nil {
			b.Fatal(err)
		}
		if err := g.GW.KV().Put(sc, "a:"+id, answer, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}
