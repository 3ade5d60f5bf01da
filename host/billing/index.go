package billing

import (
	"encoding/json"
	"time"

	"github.com/switchyard/switchyard/host/store"
)

// IndexFunc writes what is derived from a generation record (host/activity's
// indexes and daily totals) in the transaction that writes the record, so
// an index never names a record that is not there nor misses one that is.
// It runs once per record, in the transaction that first writes it: a
// settlement replayed (a group that failed runs again one operation at a
// time) or repeated finds its record written and indexes nothing again.
type IndexFunc func(tx store.Tx, g *Generation) error

// commit is the settlement transaction plus the index; rec is g already
// encoded (appendGeneration), or nil to encode it here.
func (l *Ledger) commit(tx store.Tx, g *Generation, rec []byte, leaseOwner string) error {
	written, err := commitSettlement(tx, g, rec, leaseOwner)
	if err != nil || !written || l.opts.Index == nil {
		return err
	}
	return l.opts.Index(tx, g)
}

// commitReads appends what commit reads for g (see writer.go, op.reads).
func (l *Ledger) commitReads(g *Generation, owner string) func([]store.Ref) []store.Ref {
	return func(dst []store.Ref) []store.Ref {
		dst = append(dst,
			store.Ref{Bucket: bucketGenerations, Key: []byte(g.ID)},
			store.Ref{Bucket: bucketAccounts, Key: []byte(g.AccountID)},
			store.Ref{Bucket: bucketKeys, Key: []byte(g.KeyHash)})
		if owner != "" {
			dst = append(dst,
				store.Ref{Bucket: bucketLeases, Key: leaseKey('a', g.AccountID, owner)},
				store.Ref{Bucket: bucketLeases, Key: leaseKey('k', g.KeyHash, owner)})
		}
		if l.opts.IndexReads != nil {
			dst = l.opts.IndexReads(g, dst)
		}
		return dst
	}
}

// GenerationIn reads the record id in tx; nil when there is none.
func GenerationIn(tx store.Tx, id []byte) (*Generation, error) {
	b := tx.Bucket(bucketGenerations)
	if b == nil {
		return nil, nil
	}
	v := b.Get(id)
	if v == nil {
		return nil, nil
	}
	g := new(Generation)
	return g, json.Unmarshal(v, g)
}

// ForEachGenerationIn calls fn for every record in tx, in id order, from
// the first id after `after` ("" = from the start) until fn returns false.
// It returns the id of the last record seen.
func ForEachGenerationIn(tx store.Tx, after string, fn func(*Generation) bool) (string, error) {
	b := tx.Bucket(bucketGenerations)
	if b == nil {
		return "", nil
	}
	c := b.Cursor()
	k, v := c.First()
	if after != "" {
		k, v = c.Seek([]byte(after))
		if k != nil && string(k) == after {
			k, v = c.Next()
		}
	}
	last := after
	for ; k != nil; k, v = c.Next() {
		g := new(Generation)
		if err := json.Unmarshal(v, g); err != nil {
			return last, err
		}
		last = string(k)
		if !fn(g) {
			break
		}
	}
	return last, nil
}

// PutGenerationIn writes a settled record as is, moving no money: for
// imports and the activity benchmarks, which need a large store fast.
func PutGenerationIn(tx store.Tx, g *Generation) error {
	b, err := tx.CreateBucketIfNotExists(bucketGenerations)
	if err != nil {
		return err
	}
	v, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return b.Put([]byte(g.ID), v)
}

// DB is the store the ledger writes, for the readers of what Index derives.
func (l *Ledger) DB() store.DB { return l.db }

// ObserveCommits makes the ledger's writer report each group commit: how
// many operations it carried and how long it took, fsync included.
func (l *Ledger) ObserveCommits(fn func(ops int, d time.Duration)) { l.w.observe.Store(&fn) }

// WriterQueue is the number of operations waiting for the next commit.
func (l *Ledger) WriterQueue() int {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return len(l.w.queue)
}
