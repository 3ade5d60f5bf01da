package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// TopLevel lists the names of the top-level buckets, in order. The
// contract has no iteration over top-level buckets (no caller needs one);
// copying a whole store does.
func TopLevel(tx Tx) ([][]byte, error) {
	var names [][]byte
	switch t := tx.(type) {
	case *boltTx:
		err := t.tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, clone(name))
			return nil
		})
		return names, err
	case *pgTx:
		c := (&pgBucket{t, 0}).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				names = append(names, clone(k))
			}
		}
		return names, t.err
	}
	return nil, fmt.Errorf("store: TopLevel of a %T", tx)
}

// CopyStats counts what Copy wrote.
type CopyStats struct {
	Buckets, Keys int
}

// Copy copies every bucket of src, nested ones included, into dst, batch
// pairs per dst transaction, reading src in one View (one snapshot). It
// goes through the store contract only, so it copies either way between
// bbolt and PostgreSQL. Keys already in dst are overwritten; keys only in
// dst stay.
func Copy(dst, src DB, batch int) (CopyStats, error) {
	if batch <= 0 {
		batch = 5000
	}
	w := &copier{dst: dst, batch: batch}
	err := src.View(func(tx Tx) error {
		names, err := TopLevel(tx)
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := w.walk([][]byte{name}, tx.Bucket(name)); err != nil {
				return err
			}
		}
		return w.flush()
	})
	return w.stats, err
}

// copier buffers the pairs of one dst transaction; a pair with a nil key
// creates its (possibly empty) bucket.
type copier struct {
	dst     DB
	batch   int
	pending []copyItem
	stats   CopyStats
}

type copyItem struct {
	path [][]byte
	k, v []byte
}

func (w *copier) walk(path [][]byte, b Bucket) error {
	if b == nil {
		return fmt.Errorf("store: copy: bucket %q vanished", path)
	}
	w.stats.Buckets++
	if err := w.add(copyItem{path: path}); err != nil {
		return err
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			sub := append(append([][]byte{}, path...), clone(k))
			if err := w.walk(sub, b.Bucket(k)); err != nil {
				return err
			}
			continue
		}
		w.stats.Keys++
		if err := w.add(copyItem{path, clone(k), clone(v)}); err != nil {
			return err
		}
	}
	return nil
}

func (w *copier) add(it copyItem) error {
	w.pending = append(w.pending, it)
	if len(w.pending) >= w.batch {
		return w.flush()
	}
	return nil
}

func (w *copier) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	err := w.dst.Update(func(tx Tx) error {
		var cur Bucket
		var curPath [][]byte
		for _, it := range w.pending {
			if cur == nil || !samePath(curPath, it.path) {
				b, err := tx.CreateBucketIfNotExists(it.path[0])
				for _, name := range it.path[1:] {
					if err != nil {
						break
					}
					b, err = b.CreateBucketIfNotExists(name)
				}
				if err != nil {
					return fmt.Errorf("store: copy: bucket %q: %w", it.path, err)
				}
				cur, curPath = b, it.path
			}
			if it.k == nil {
				continue
			}
			if err := cur.Put(it.k, it.v); err != nil {
				return fmt.Errorf("store: copy: %q/%q: %w", it.path, it.k, err)
			}
		}
		return nil
	})
	w.pending = w.pending[:0]
	return err
}

func samePath(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
