package billing

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/switchyard/switchyard/host/store"
)

// tempBolt is a fresh bbolt store, closed when the test ends.
func tempBolt(t *testing.T) *store.Bolt {
	t.Helper()
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Inside a group commit, the account and key records settlements update are
// held in memory, and whoever opens their bucket in the same group reads
// what the settlements before it wrote; the end of the group writes the
// rest. A plain transaction reads and writes at once, as before.
func TestGroupWriteBack(t *testing.T) {
	db := tempBolt(t)
	err := db.Update(func(tx store.Tx) error {
		for _, b := range [][]byte{bucketAccounts, bucketKeys} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return updateAccount(tx, "acct", func(r *accountRec) { r.Balance, r.Credits = 1000, 1000 })
	})
	if err != nil {
		t.Fatal(err)
	}
	charge := func(tx store.Tx, n Nanos) error {
		if err := updateAccount(tx, "acct", func(r *accountRec) { r.Balance -= n; r.Usage += n }); err != nil {
			return err
		}
		return updateKeyUsage(tx, "kh", "acct", func(u *keyUsage) { u.Total += n })
	}
	read := func(tx store.Tx) (accountRec, keyUsage) {
		var r accountRec
		var u keyUsage
		if v := tx.Bucket(bucketAccounts).Get([]byte("acct")); v != nil {
			if err := decodeAccount(v, &r); err != nil {
				t.Fatal(err)
			}
		}
		if v := tx.Bucket(bucketKeys).Get([]byte("kh")); v != nil {
			if err := decodeKeyUsage(v, &u); err != nil {
				t.Fatal(err)
			}
		}
		return r, u
	}
	err = db.Update(func(raw store.Tx) error {
		g := &groupTx{Tx: raw}
		for range 3 {
			if err := charge(g, 10); err != nil {
				return err
			}
		}
		if v := raw.Bucket(bucketAccounts).Get([]byte("acct")); v == nil {
			t.Fatal("the account record is gone")
		} else if r := (accountRec{}); decodeAccount(v, &r) != nil || r.Balance != 1000 {
			t.Fatalf("held charges were written before anyone opened the bucket: %+v", r)
		}
		// Someone in the group opens the buckets: the three charges are there.
		r, u := read(g)
		if r.Balance != 970 || r.Usage != 30 || u.Total != 30 || u.Account != "acct" {
			t.Fatalf("after 3 held charges: account %+v, key %+v", r, u)
		}
		// They may change the records directly; the next charge starts from that.
		if err := g.Bucket(bucketAccounts).Put([]byte("acct"), (&accountRec{Balance: 500, Credits: 1000, Usage: 30}).appendJSON(nil)); err != nil {
			return err
		}
		if err := charge(g, 5); err != nil {
			return err
		}
		return g.writeBack()
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.View(func(tx store.Tx) error {
		r, u := read(tx)
		if r.Balance != 495 || r.Usage != 35 || u.Total != 35 {
			t.Fatalf("committed: account %+v, key %+v", r, u)
		}
		return nil
	})
	// A plain transaction writes at once.
	_ = db.Update(func(tx store.Tx) error {
		if err := charge(tx, 1); err != nil {
			t.Fatal(err)
		}
		if r, u := read(tx); r.Balance != 494 || u.Total != 36 {
			t.Fatalf("plain transaction: account %+v, key %+v", r, u)
		}
		return nil
	})
}

// counter is a Record for TestUpdateRecord.
type counter struct{ n int }

func (c *counter) DecodeRecord(v []byte) error {
	c.n = 0
	for _, d := range v {
		c.n = c.n*10 + int(d-'0')
	}
	return nil
}

func (c *counter) AppendRecord(b []byte) []byte { return strconv.AppendInt(b, int64(c.n), 10) }

// Another package's records (UpdateRecord) are held like the account and
// key records: written once at the end of the group, or before anyone in
// the group opens their bucket, which then reads every update before it.
func TestUpdateRecord(t *testing.T) {
	db := tempBolt(t)
	bucket, key := []byte("daily"), []byte("k")
	add := func(tx store.Tx, n int) {
		t.Helper()
		if err := UpdateRecord(tx, bucket, key, func(c *counter) { c.n += n }); err != nil {
			t.Fatal(err)
		}
	}
	stored := func(tx store.Tx) string {
		b := tx.Bucket(bucket)
		if b == nil {
			return "<no bucket>"
		}
		return string(b.Get(key))
	}
	err := db.Update(func(raw store.Tx) error {
		g := &groupTx{Tx: raw}
		add(g, 1) // creates the bucket
		add(g, 2)
		if v := stored(raw); v != "" {
			t.Fatalf("held updates were written before anyone opened the bucket: %q", v)
		}
		if v := stored(g); v != "3" { // opening it writes them
			t.Fatalf("after two held updates the bucket has %q", v)
		}
		if err := g.Bucket(bucket).Put(key, []byte("10")); err != nil {
			return err
		}
		add(g, 4) // starts from what was put
		return g.writeBack()
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx store.Tx) error {
		if v := stored(tx); v != "14" {
			t.Fatalf("committed %q, want 14", v)
		}
		add(tx, 1) // a plain transaction writes at once
		if v := stored(tx); v != "15" {
			t.Fatalf("plain transaction: %q", v)
		}
		return nil
	})
}

// The index runs once per record: a settlement committed again (a replay)
// finds its record and indexes nothing.
func TestIndexOncePerRecord(t *testing.T) {
	calls := map[string]int{}
	e, k := newEnv(t, NanosPerUSD, nil, "", Options{Index: func(_ store.Tx, g *Generation) error {
		calls[g.ID]++
		return nil
	}})
	r, aerr := e.l.Reserve(k, testReq("gen-once"))
	if aerr != nil {
		t.Fatal(aerr)
	}
	g, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 10, CompletionTokens: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := e.l.db.Update(func(tx store.Tx) error { return e.l.commit(tx, g, nil, "") }); err != nil {
		t.Fatal(err)
	}
	if calls["gen-once"] != 1 {
		t.Fatalf("indexed %d times, want once", calls["gen-once"])
	}
}
