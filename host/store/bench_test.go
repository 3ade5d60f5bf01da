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
