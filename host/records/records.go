// Package records keeps account-scoped records in the gateway's store
// (bbolt or PostgreSQL, through host/store), indexed by when they were
// stored so that a retention period can delete the old ones reading only
// what it deletes. Stored Responses API responses (host/responses/stored)
// and generation content (host/content) are two tables of it.
//
// A record is keyed by its account and id: a key of another account never
// finds it. Its value is JSON with a "stored" member (unix nanoseconds):
// that is where Put finds the index entry of the value it replaces.
package records

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/switchyard/switchyard/host/store"
	"github.com/tidwall/gjson"
)

// MaxID bounds a record's id: a longer one is never stored, so Get does
// not look it up.
const MaxID = 256

// Table is one kind of record: its values in Bucket (account 0 id →
// value), and its time index in ByTime (stored as 8 bytes of big-endian
// unix nanoseconds, then the value's key → empty).
type Table struct {
	Bucket, ByTime []byte
}

// Key is the key of the account's record id in t.Bucket.
func Key(account, id string) []byte { return []byte(account + "\x00" + id) }

// TimeKey is the ByTime entry of the record with key k stored at stored.
func TimeKey(stored int64, k []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(k)), uint64(stored)), k...)
}

// StoredAt is the "stored" time of an encoded value (0 when it has none).
func StoredAt(v []byte) int64 { return gjson.GetBytes(v, "stored").Int() }

// Put stores v, a value whose "stored" member is stored, as the account's
// record id, replacing (and unindexing) the one stored before.
func (t Table) Put(db store.DB, account, id string, stored int64, v []byte) error {
	return db.Update(func(tx store.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(t.Bucket)
		if err != nil {
			return err
		}
		idx, err := tx.CreateBucketIfNotExists(t.ByTime)
		if err != nil {
			return err
		}
		k := Key(account, id)
		if old := bk.Get(k); old != nil {
			if err := idx.Delete(TimeKey(StoredAt(old), k)); err != nil {
				return err
			}
		}
		if err := idx.Put(TimeKey(stored, k), nil); err != nil {
			return err
		}
		return bk.Put(k, v)
	})
}

// Get is the account's record id read in tx, nil when it has none. The
// value is valid only during tx.
func (t Table) Get(tx store.Tx, account, id string) []byte {
	if id == "" || len(id) > MaxID {
		return nil
	}
	bk := tx.Bucket(t.Bucket)
	if bk == nil {
		return nil
	}
	return bk.Get(Key(account, id))
}

// Delete removes the account's record id; found reports it existed.
func (t Table) Delete(db store.DB, account, id string) (found bool, err error) {
	err = db.Update(func(tx store.Tx) error {
		found = false // a store may run the function again
		bk := tx.Bucket(t.Bucket)
		if bk == nil {
			return nil
		}
		k := Key(account, id)
		v := bk.Get(k)
		if v == nil {
			return nil
		}
		found = true
		if idx := tx.Bucket(t.ByTime); idx != nil {
			if err := idx.Delete(TimeKey(StoredAt(v), k)); err != nil {
				return err
			}
		}
		return bk.Delete(k)
	})
	return found, err
}

// Prune deletes the records stored before before, at most batch (> 0) per
// transaction, and returns how many it deleted.
func (t Table) Prune(db store.DB, before time.Time, batch int) (int, error) {
	limit := TimeKey(before.UnixNano(), nil)
	total := 0
	for {
		n := 0
		err := db.Update(func(tx store.Tx) error {
			n = 0 // a store may run the function again
			idx, bk := tx.Bucket(t.ByTime), tx.Bucket(t.Bucket)
			if idx == nil || bk == nil {
				return nil
			}
			var keys [][]byte
			c := idx.Cursor()
			for k, _ := c.First(); k != nil && len(keys) < batch && bytes.Compare(k, limit) < 0; k, _ = c.Next() {
				keys = append(keys, bytes.Clone(k))
			}
			// Deleted after the walk: a write may move a cursor.
			for _, k := range keys {
				if err := idx.Delete(k); err != nil {
					return err
				}
				if len(k) > 8 {
					if err := bk.Delete(k[8:]); err != nil {
						return err
					}
				}
			}
			n = len(keys)
			return nil
		})
		total += n
		if err != nil || n < batch {
			return total, err
		}
	}
}
