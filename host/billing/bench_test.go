package billing

import (
	"crypto/rand"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/host/store"
)

// randomID is the generation id the server made before NewID: 24 random
// base-62 characters.
func randomID() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	out := []byte("gen-")
	for _, x := range b {
		out = append(out, idAlphabet[int(x)%62])
	}
	return string(out)
}

// BenchmarkSettleIDs runs whole requests' ledger work (Reserve, Settle, 16
// in flight per CPU, AsyncSettle as the gateway's default) on a store that
// already holds 50,000 generation records, with the server's old random
// ids and with NewID's time-ordered ones. B-written/op is what bbolt
// allocates for dirty pages per request, which is what each commit writes.
func BenchmarkSettleIDs(b *testing.B) {
	for _, c := range []struct {
		name string
		id   func() string
		fill float64
	}{{"random", randomID, 0.5}, {"time-ordered", NewID, generationsFill}} {
		b.Run(c.name, func(b *testing.B) {
			e, k := newEnv(b, 1_000_000*NanosPerUSD, nil, "", Options{AsyncSettle: true})
			rec := []byte(`{"id":"gen-x","account_id":"acct","key_hash":"0123456789abcdef0123456789abcdef","model":"acme/m","provider":"p1","status":"success","usage":{"prompt_tokens":900,"completion_tokens":300},"charged":2500000}`)
			if err := e.db.Update(func(tx store.Tx) error {
				g := tx.Bucket(bucketGenerations)
				g.SetFillPercent(c.fill)
				for range 50_000 {
					if err := g.Put([]byte(c.id()), rec); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			before := pageAlloc(e.db)
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n.Add(1)
					r, aerr := e.l.Reserve(k, testReq(c.id()))
					if aerr != nil {
						b.Fatal(aerr)
					}
					if _, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 900, CompletionTokens: 300, Requests: 1}}); err != nil {
						b.Fatal(err)
					}
				}
			})
			if err := e.l.Sync(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(pageAlloc(e.db)-before)/float64(b.N), "B-written/op")
		})
	}
}

func TestNewIDIsOrderedAndUnique(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for i := range 10_000 {
		id := NewID()
		if len(id) != 28 || id[:4] != "gen-" {
			t.Fatalf("id %q: want gen- and 24 characters", id)
		}
		if id <= prev {
			t.Fatalf("id %d %q is not after %q", i, id, prev)
		}
		if seen[id] {
			t.Fatalf("id %q twice", id)
		}
		seen[id], prev = true, id
	}
}

func pageAlloc(db store.DB) int64 {
	s := db.(*store.Bolt).Bolt().Stats()
	return s.TxStats.GetPageAlloc()
}

// BenchmarkSettleModes is one request's ledger work (Reserve then Settle)
// under the three settle modes of config.Settle, with 1 request in flight
// (ns/op is the latency a lone client sees) and 16 per CPU (the group
// commits share their fsyncs): memory (acknowledged from memory), journal
// (the default: acknowledged once fsynced in the journal) and commit
// (acknowledged once the store committed it).
func BenchmarkSettleModes(b *testing.B) {
	for _, mode := range []string{"memory", "journal", "commit"} {
		for _, par := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/inflight=%d", mode, par), func(b *testing.B) {
				var opts Options
				switch mode {
				case "memory":
					opts.AsyncSettle = true
				case "journal":
					opts.AsyncSettle, opts.Journal = true, filepath.Join(b.TempDir(), "journal")
				}
				e, k := newEnv(b, 1_000_000*NanosPerUSD, nil, "", opts)
				u := Usage{PromptTokens: 900, CompletionTokens: 300, Requests: 1}
				one := func() {
					r, aerr := e.l.Reserve(k, testReq(NewID()))
					if aerr != nil {
						b.Fatal(aerr)
					}
					if _, err := r.Settle(Outcome{Usage: u}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				if par == 1 {
					for range b.N {
						one()
					}
					return
				}
				b.SetParallelism(par)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						one()
					}
				})
			})
		}
	}
}
