//go:build !wasip1

package cache_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/kv"
	"github.com/switchyard/switchyard/host/store"
	"github.com/tidwall/gjson"
)

// entries1M is the answers one account holds in BenchmarkResponseCacheAt1M
// (SWITCHYARD_BENCH_1M_N sets another number, for a quick run).
var entries1M = func() int {
	if n, err := strconv.Atoi(os.Getenv("SWITCHYARD_BENCH_1M_N")); err == nil && n > 1 {
		return n
	}
	return 1_000_000
}()

// BenchmarkResponseCacheAt1M is an exact hit and miss, then a semantic hit
// and miss, through the gateway on loopback when the account holds a
// million answers (account "1m"), beside an account holding one ("small")
// (the kv and vector bounds raised in its configuration: the defaults cap
// an account at 1,000 answers and 10,000 vectors). The answers are
// written to the store directly, 10,000 a transaction, in the kv store's
// layout (host/kv: bucket module_kv / scope / "d", an 8-byte expiry before
// the value, the scope's usage under "u"): a million requests would take
// hours. Each is 512 bytes (a 1 KB answer would make a 1 GB store for no
// change in what is measured, a B+tree lookup of one key). The vectors
// are written the same way in the vector index's layout (host/vecindex:
// bucket vector_index / partition, expiry, creation, tag, float32s), a
// million of the semantic question's tag (every one a candidate of its
// search), random 256-dimension vectors; the last transaction publishes
// the store's resync, so the index reloads from the store as it does at a
// start, and builds the tag's HNSW graph in the background (minutes at a
// million): the semantic rows are measured once it is installed. It runs
// with SWITCHYARD_BENCH_1M=1 (make bench-1m); SWITCHYARD_BENCH_1M_N sets
// another size for a quick run.
func BenchmarkResponseCacheAt1M(b *testing.B) {
	if os.Getenv("SWITCHYARD_BENCH_1M") == "" {
		b.Skip("SWITCHYARD_BENCH_1M=1 runs it (make bench-1m)")
	}
	emb, err := startEmbedFake()
	if err != nil {
		b.Fatal(err)
	}
	defer emb.srv.Close()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, Mutate: func(c *config.Config) {
		addEmbedProvider(c, emb.srv.URL)
		c.Modules.KV.MaxKeys = entries1M + 10_000
		c.Modules.KV.MaxBytes = 4 << 30
		c.Modules.Vectors.MaxPerPartition = entries1M + 10_000
		c.Modules.Vectors.MaxTotal = 2*entries1M + 20_000
		c.TenantModules.CPUMsPerMinute = 600_000
	}})
	if err != nil {
		b.Fatalf("%v (run make wasm)", err)
	}
	defer g.Close()
	// Account "small" holds only the entry it hits: the same minutes'
	// figure without the million (the machine's load moves).
	for _, acct := range []struct {
		name string
		n    int
	}{{"small", 1}, {"1m", entries1M}} {
		id, key := newAccountB(b, g, acct.name)
		ask := func(b *testing.B, body, want string) {
			b.Helper()
			resp, out, err := g.Request("POST", "/chat/completions", body, "Authorization", "Bearer "+key, "X-Service-Metadata", "enabled")
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Cache") != want {
				b.Fatalf("%v %d X-Cache %q, want %q: %s", err, resp.StatusCode, resp.Header.Get("X-Cache"), want, gjson.GetBytes(out, "error").Raw)
			}
		}
		ask(b, question, "MISS") // the entry the benchmark hits
		if acct.n > 1 {
			start := time.Now()
			sc := kv.Scope{Module: "response-cache", Account: id}
			seedKV(b, g, sc, acct.n-1)
			keys, bytes, err := g.GW.KV().Usage(sc)
			if err != nil || keys < int64(acct.n) {
				b.Fatalf("the scope holds %d keys (%v), want %d", keys, err, acct.n)
			}
			b.Logf("seeded %d answers (%d MB) in %s", keys, bytes>>20, time.Since(start).Round(time.Second))
		}
		// cpu-µs/op: the process's CPU a request (the gateway runs in
		// it), steadier than the wall time on a loaded machine.
		measure := func(b *testing.B, f func(i int)) {
			cpu0 := cpuTime()
			for i := range b.N {
				f(i)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		}
		b.Run(acct.name+"/exact-hit", func(b *testing.B) {
			measure(b, func(int) { ask(b, question, "HIT") })
		})
		b.Run(acct.name+"/exact-miss", func(b *testing.B) {
			measure(b, func(i int) {
				ask(b, strings.Replace(question, "France", fmt.Sprintf("country %s %d-%d", acct.name, b.N, i), 1), "MISS")
			})
		})

		// Semantic mode: the entry hit, stored by a request (a day's
		// ttl: a million-node graph's build may take the better part
		// of an hour on a loaded machine), then the account's other
		// vectors, of the same tag.
		ttl := `"ttl":86400`
		ask(b, semantic(asked, ttl), "MISS")
		if acct.n > 1 {
			start := time.Now()
			seedVectors(b, g, sc1M(id), acct.n-1)
			seeded := time.Since(start)
			g.GW.Vectors().WaitBuilds()
			if got := g.GW.Vectors().Len(); got < acct.n {
				b.Fatalf("the index holds %d vectors, want at least %d", got, acct.n)
			}
			b.Logf("seeded %d vectors in %s; the graph was built in %s", acct.n-1, seeded.Round(time.Second), (time.Since(start) - seeded).Round(time.Second))
		}
		b.Run(acct.name+"/semantic-hit", func(b *testing.B) {
			measure(b, func(int) { ask(b, semantic(paraphrase, ttl), "HIT") })
		})
		b.Run(acct.name+"/semantic-miss", func(b *testing.B) {
			measure(b, func(int) {
				w := letters(int(fresh.Add(1)))
				ask(b, semantic(fmt.Sprintf("Tell me about %sa %sb %sc", w, w, w), ttl), "MISS")
			})
		})
	}
}

func sc1M(account string) kv.Scope { return kv.Scope{Module: "response-cache", Account: account} }

// seedVectors writes n random 256-dimension unit vectors into the account
// partition ("a") of sc, of the tag of the one vector already there (the
// semantic question's: the plugin's digest of the request as it went
// upstream), 10,000 a transaction, in the vector index's layout; the last
// transaction publishes the store's resync, so the index reloads (and
// queues the tag's graph build) when it commits.
func seedVectors(b *testing.B, g *gatewaytest.Gateway, sc kv.Scope, n int) {
	tag := vectorTag(b, g, sc)
	pk := []byte(sc.Owner + "\x00" + sc.Module + "\x00" + sc.Account + "\x00a")
	r := rand.New(rand.NewPCG(3, uint64(n)))
	now := time.Now()
	head := binary.BigEndian.AppendUint64(nil, uint64(now.Add(24*time.Hour).UnixNano()))
	head = binary.BigEndian.AppendUint64(head, uint64(now.UnixNano()))
	head = binary.BigEndian.AppendUint16(head, uint16(len(tag)))
	head = append(head, tag...)
	v := make([]float32, embedDims)
	for done := 0; done < n; {
		err := g.GW.DB.Update(func(tx store.Tx) error {
			part := tx.Bucket([]byte("vector_index")).Bucket(pk)
			if part == nil {
				return fmt.Errorf("no vector partition %q", pk)
			}
			for i := 0; i < 10_000 && done < n; i++ {
				var ss float64
				for j := range v {
					v[j] = float32(r.NormFloat64())
					ss += float64(v[j]) * float64(v[j])
				}
				val := append([]byte(nil), head...)
				for _, x := range v {
					val = binary.LittleEndian.AppendUint32(val, math.Float32bits(x/float32(math.Sqrt(ss))))
				}
				if err := part.Put([]byte(fmt.Sprintf("seed-%07d", done)), val); err != nil {
					return err
				}
				done++
			}
			if done == n {
				return tx.Notify("vector_index", store.Resync)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// seedKV writes n answers into sc's kv scope in the kv store's layout,
// 10,000 a transaction, and adds them to the scope's usage.
func seedKV(b *testing.B, g *gatewaytest.Gateway, sc kv.Scope, n int) {
	scopeName := []byte(sc.Owner + "\x00" + sc.Module + "\x00" + sc.Account)
	val := make([]byte, 8+512)
	binary.BigEndian.PutUint64(val, uint64(time.Now().Add(time.Hour).UnixNano()))
	copy(val[8:], strings.Repeat("x", 512))
	for done := 0; done < n; {
		err := g.GW.DB.Update(func(tx store.Tx) error {
			scope, err := tx.Bucket([]byte("module_kv")).CreateBucketIfNotExists(scopeName)
			if err != nil {
				return err
			}
			data, err := scope.CreateBucketIfNotExists([]byte("d"))
			if err != nil {
				return err
			}
			var keys, size int64
			if u := scope.Get([]byte("u")); len(u) == 16 {
				keys, size = int64(binary.BigEndian.Uint64(u)), int64(binary.BigEndian.Uint64(u[8:]))
			}
			for i := 0; i < 10_000 && done < n; i++ {
				k := []byte(fmt.Sprintf("a:seed-%07d", done))
				if err := data.Put(k, val); err != nil {
					return err
				}
				keys++
				size += int64(len(k) + len(val) - 8)
				done++
			}
			var u [16]byte
			binary.BigEndian.PutUint64(u[:], uint64(keys))
			binary.BigEndian.PutUint64(u[8:], uint64(size))
			return scope.Put([]byte("u"), u[:])
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
