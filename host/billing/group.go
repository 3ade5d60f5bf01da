package billing

import (
	"bytes"
	"maps"
	"slices"

	"github.com/switchyard/switchyard/host/store"
)

// groupTx is the transaction of a group commit (writer.flush). The
// settlements of a group mostly charge the same account and key: rather
// than each decoding, re-encoding and writing those two records, they
// update them here in memory (updateAccount, updateKeyUsage), and each
// record is written once — at the end of the group, and before anything
// else in the group opens the accounts or keys bucket (Bucket,
// CreateBucketIfNotExists, DeleteBucket), which therefore always reads
// what the settlements before it wrote. Nothing outside the transaction
// can see the difference; a group that fails is rolled back as before and
// its operations run again each in a plain transaction, without this.
type groupTx struct {
	store.Tx
	accounts map[string]*accountRec
	keys     map[string]*keyUsage
	// others are the records of other packages' buckets that their
	// settlement work updates (UpdateRecord): bucket → key → record.
	others map[string]map[string]Record
	err    error // a write-back that failed: the group fails with it
}

func (g *groupTx) Bucket(name []byte) store.Bucket {
	g.writeBackFor(name)
	return g.Tx.Bucket(name)
}

func (g *groupTx) CreateBucketIfNotExists(name []byte) (store.Bucket, error) {
	if err := g.writeBackFor(name); err != nil {
		return nil, err
	}
	return g.Tx.CreateBucketIfNotExists(name)
}

func (g *groupTx) DeleteBucket(name []byte) error {
	if err := g.writeBackFor(name); err != nil {
		return err
	}
	return g.Tx.DeleteBucket(name)
}

// Prefetch passes on to the store's transaction (store.Prefetcher): the
// values it fetches are read through Bucket, so after a write-back.
func (g *groupTx) Prefetch(refs []store.Ref) { store.Prefetch(g.Tx, refs) }

// writeBackFor writes the records held for bucket name, if any, and
// forgets them: whoever opens the bucket may change them.
func (g *groupTx) writeBackFor(name []byte) error {
	switch {
	case len(g.accounts) > 0 && bytes.Equal(name, bucketAccounts):
		g.writeAccounts()
	case len(g.keys) > 0 && bytes.Equal(name, bucketKeys):
		g.writeKeys()
	case len(g.others[string(name)]) > 0:
		g.writeOthers(string(name))
	}
	return g.err
}

// writeBack writes every record held; the group's commit follows.
func (g *groupTx) writeBack() error {
	g.writeAccounts()
	g.writeKeys()
	for _, name := range slices.Sorted(maps.Keys(g.others)) {
		g.writeOthers(name)
	}
	return g.err
}

func (g *groupTx) writeOthers(bucket string) {
	writeHeld(g, []byte(bucket), g.others[bucket], func(r Record) []byte { return r.AppendRecord(make([]byte, 0, 64)) })
}

func (g *groupTx) writeAccounts() {
	writeHeld(g, bucketAccounts, g.accounts, func(r *accountRec) []byte { return r.appendJSON(make([]byte, 0, 64)) })
}

func (g *groupTx) writeKeys() {
	writeHeld(g, bucketKeys, g.keys, func(u *keyUsage) []byte { return u.appendJSON(make([]byte, 0, 192)) })
}

// writeHeld writes the records held for bucket, in key order (a group's
// writes do not depend on map order), and forgets them.
func writeHeld[V any](g *groupTx, bucket []byte, held map[string]V, encode func(V) []byte) {
	if len(held) == 0 {
		return
	}
	b := g.Tx.Bucket(bucket)
	for _, k := range slices.Sorted(maps.Keys(held)) {
		if err := b.Put([]byte(k), encode(held[k])); err != nil && g.err == nil {
			g.err = err
		}
	}
	clear(held)
}

// account is the account record id as the group has made it so far.
func (g *groupTx) account(id string) (*accountRec, error) {
	return held(g, bucketAccounts, &g.accounts, id, accountRec{}, decodeAccount)
}

// keyUsage is the usage record of key hash (of account) as the group has
// made it so far.
func (g *groupTx) keyUsage(hash, account string) (*keyUsage, error) {
	return held(g, bucketKeys, &g.keys, hash, keyUsage{Account: account}, decodeKeyUsage)
}

// held returns the record key of bucket from the group's memory, or reads
// it (zero when absent) and keeps it there.
func held[R any](g *groupTx, bucket []byte, m *map[string]*R, key string, zero R, decode func([]byte, *R) error) (*R, error) {
	if r := (*m)[key]; r != nil {
		return r, nil
	}
	r := &zero
	if v := g.Tx.Bucket(bucket).Get([]byte(key)); v != nil {
		if err := decode(v, r); err != nil {
			return nil, err
		}
	}
	if *m == nil {
		*m = map[string]*R{}
	}
	(*m)[key] = r
	return r, nil
}

// updateAccount applies fn to account id's record: in the group's memory
// inside a group commit, read and written at once otherwise.
func updateAccount(tx store.Tx, id string, fn func(*accountRec)) error {
	if g, ok := tx.(*groupTx); ok {
		r, err := g.account(id)
		if err != nil {
			return err
		}
		fn(r)
		return nil
	}
	b := tx.Bucket(bucketAccounts)
	var r accountRec
	if v := b.Get([]byte(id)); v != nil {
		if err := decodeAccount(v, &r); err != nil {
			return err
		}
	}
	fn(&r)
	return b.Put([]byte(id), r.appendJSON(make([]byte, 0, 64)))
}

// updateKeyUsage is updateAccount for the usage record of key hash, which
// belongs to account.
func updateKeyUsage(tx store.Tx, hash, account string, fn func(*keyUsage)) error {
	if g, ok := tx.(*groupTx); ok {
		u, err := g.keyUsage(hash, account)
		if err != nil {
			return err
		}
		fn(u)
		return nil
	}
	kb := tx.Bucket(bucketKeys)
	u := keyUsage{Account: account}
	if v := kb.Get([]byte(hash)); v != nil {
		if err := decodeKeyUsage(v, &u); err != nil {
			return err
		}
	}
	fn(&u)
	return kb.Put([]byte(hash), u.appendJSON(make([]byte, 0, 192)))
}

// Record is a record of another package's bucket that its settlement work
// (Options.Index) updates with UpdateRecord.
type Record interface {
	// DecodeRecord reads the stored value v into the record.
	DecodeRecord(v []byte) error
	// AppendRecord appends the value to store.
	AppendRecord(b []byte) []byte
}

// UpdateRecord applies fn to the record key of bucket (a zero R when there
// is none; the bucket is created when missing). Inside a group commit the
// record is held in the group's memory like the account and key records:
// read once, written once at the end of the group or before anything else
// in the group opens bucket. Otherwise it is read and written at once.
func UpdateRecord[R any, P interface {
	*R
	Record
}](tx store.Tx, bucket, key []byte, fn func(P)) error {
	g, grouped := tx.(*groupTx)
	if grouped {
		if r, ok := g.others[string(bucket)][string(key)]; ok {
			fn(r.(P))
			return nil
		}
		tx = g.Tx // read past the write-back: nothing of bucket is held
	}
	b, err := tx.CreateBucketIfNotExists(bucket)
	if err != nil {
		return err
	}
	r := P(new(R))
	if v := b.Get(key); v != nil {
		if err := r.DecodeRecord(v); err != nil {
			return err
		}
	}
	fn(r)
	if !grouped {
		return b.Put(key, r.AppendRecord(make([]byte, 0, 64)))
	}
	if g.others == nil {
		g.others = map[string]map[string]Record{}
	}
	m := g.others[string(bucket)]
	if m == nil {
		m = map[string]Record{}
		g.others[string(bucket)] = m
	}
	m[string(key)] = r
	return nil
}
