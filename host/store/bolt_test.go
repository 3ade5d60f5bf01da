package store_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/store/storetest"
)

func openBolt(t testing.TB) store.DB {
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestBoltContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.DB { return openBolt(t) })
}

// CreateBucketIfNotExists looks an existing bucket up without allocating,
// and otherwise behaves as bbolt's: it creates a missing one, refuses in a
// read-only transaction (existing or not) and over a plain value.
func TestBoltCreateBucketIfNotExists(t *testing.T) {
	db := openBolt(t)
	err := db.Update(func(tx store.Tx) error {
		top, err := tx.CreateBucketIfNotExists([]byte("top"))
		if err != nil {
			return err
		}
		if err := top.Put([]byte("k"), []byte("v")); err != nil {
			return err
		}
		if _, err := top.CreateBucketIfNotExists([]byte("nested")); err != nil {
			return err
		}
		if _, err := top.CreateBucketIfNotExists([]byte("k")); err == nil {
			t.Error("a bucket was made over a plain value")
		}
		again, err := tx.CreateBucketIfNotExists([]byte("top"))
		if err != nil || string(again.Get([]byte("k"))) != "v" {
			t.Errorf("existing bucket: %v, %q", err, again.Get([]byte("k")))
		}
		name, nested := []byte("top"), []byte("nested")
		if n := testing.AllocsPerRun(100, func() {
			b, _ := tx.CreateBucketIfNotExists(name)
			_, _ = b.CreateBucketIfNotExists(nested)
		}); n != 0 {
			t.Errorf("looking up existing buckets allocated %v times", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.View(func(tx store.Tx) error {
		if _, err := tx.CreateBucketIfNotExists([]byte("top")); !errors.Is(err, store.ErrTxNotWritable) {
			t.Errorf("read-only, existing: %v", err)
		}
		if _, err := tx.Bucket([]byte("top")).CreateBucketIfNotExists([]byte("nested")); !errors.Is(err, store.ErrTxNotWritable) {
			t.Errorf("read-only, nested existing: %v", err)
		}
		if _, err := tx.CreateBucketIfNotExists([]byte("new")); !errors.Is(err, store.ErrTxNotWritable) {
			t.Errorf("read-only, missing: %v", err)
		}
		return nil
	})
}
