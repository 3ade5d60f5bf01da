package store_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/switchyard/switchyard/host/store"
)

// The stores side by side: what a View reading one key and an Update
// reading and writing one key (a counter) cost, on bbolt and on a local
// PostgreSQL (loopback, fsync off: the round trips and the server's work,
// not the disk).
func benchStores(b *testing.B, fn func(b *testing.B, db store.DB)) {
	b.Run("bbolt", func(b *testing.B) { fn(b, openBolt(b)) })
	b.Run("postgres", func(b *testing.B) { fn(b, openPG(b, sharedPG(b).NewDB(b))) })
}

func seed(b *testing.B, db store.DB, n int) {
	err := db.Update(func(tx store.Tx) error {
		bk, err := tx.CreateBucketIfNotExists([]byte("keys"))
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := bk.Put(fmt.Appendf(nil, "key-%06d", i), make([]byte, 200)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkGet(b *testing.B) {
	benchStores(b, func(b *testing.B, db store.DB) {
		seed(b, db, 1000)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := fmt.Appendf(nil, "key-%06d", i%1000)
			err := db.View(func(tx store.Tx) error {
				if tx.Bucket([]byte("keys")).Get(k) == nil {
					return fmt.Errorf("%s missing", k)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGetParallel(b *testing.B) {
	benchStores(b, func(b *testing.B, db store.DB) {
		seed(b, db, 1000)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				i++
				k := fmt.Appendf(nil, "key-%06d", i%1000)
				err := db.View(func(tx store.Tx) error {
					if tx.Bucket([]byte("keys")).Get(k) == nil {
						return fmt.Errorf("%s missing", k)
					}
					return nil
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func BenchmarkUpdate(b *testing.B) {
	benchStores(b, func(b *testing.B, db store.DB) {
		seed(b, db, 0)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			err := db.Update(func(tx store.Tx) error {
				bk := tx.Bucket([]byte("keys"))
				var n uint64
				if v := bk.Get([]byte("count")); v != nil {
					n = binary.BigEndian.Uint64(v)
				}
				return bk.Put([]byte("count"), binary.BigEndian.AppendUint64(nil, n+1))
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A cursor over 1000 keys: bbolt walks pages in memory, PostgreSQL fetches
// 128 rows a round trip.
func BenchmarkScan(b *testing.B) {
	benchStores(b, func(b *testing.B, db store.DB) {
		seed(b, db, 1000)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			n := 0
			err := db.View(func(tx store.Tx) error {
				c := tx.Bucket([]byte("keys")).Cursor()
				for k, _ := c.First(); k != nil; k, _ = c.Next() {
					n++
				}
				return nil
			})
			if err != nil || n != 1000 {
				b.Fatal(n, err)
			}
		}
	})
}

// One group commit shaped like billing's writer's (host/billing/writer.go):
// 16 settlements, each reading and rewriting an account, a key and two
// lease counters, deleting a hold and writing a record and four activity
// rows, with the group's reads prefetched. Its time is how long the
// cluster-wide write lock is held per group on PostgreSQL.
func BenchmarkSettlementGroup(b *testing.B) {
	benchStores(b, func(b *testing.B, db store.DB) {
		if err := db.Update(func(tx store.Tx) error {
			for _, n := range []string{"accounts", "keys", "leases", "holds", "gens", "by_time", "by_key", "by_model", "daily"} {
				if _, err := tx.CreateBucketIfNotExists([]byte(n)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		const group = 16
		shared := [][2]string{{"accounts", "acct"}, {"keys", "key"}, {"leases", "a/acct/i"}, {"leases", "k/key/i"}, {"daily", "acct/day"}}
		rec := make([]byte, 600)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			err := db.Update(func(tx store.Tx) error {
				var refs []store.Ref
				for j := range group {
					id := fmt.Appendf(nil, "gen-%09d-%02d", i, j)
					refs = append(refs, store.Ref{Bucket: []byte("gens"), Key: id}, store.Ref{Bucket: []byte("by_time"), Key: id})
					for _, s := range shared {
						refs = append(refs, store.Ref{Bucket: []byte(s[0]), Key: []byte(s[1])})
					}
				}
				store.Prefetch(tx, refs)
				for j := range group {
					id := fmt.Appendf(nil, "gen-%09d-%02d", i, j)
					if tx.Bucket([]byte("gens")).Get(id) != nil {
						continue
					}
					for _, s := range shared {
						bk := tx.Bucket([]byte(s[0]))
						var n uint64
						if v := bk.Get([]byte(s[1])); v != nil {
							n = binary.BigEndian.Uint64(v)
						}
						if err := bk.Put([]byte(s[1]), binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
							return err
						}
					}
					if err := tx.Bucket([]byte("holds")).Delete(id); err != nil {
						return err
					}
					if tx.Bucket([]byte("by_time")).Get(id) != nil {
						continue
					}
					for _, n := range []string{"gens", "by_time", "by_key", "by_model"} {
						if err := tx.Bucket([]byte(n)).Put(id, rec); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
