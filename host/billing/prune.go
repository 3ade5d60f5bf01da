package billing

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/switchyard/switchyard/host/store"
	"github.com/tidwall/gjson"
)

// Retention: generation records older than a configured period are
// deleted in bounded batches (docs/cluster.md, "Generation records"). What
// they charged is first added to per-account and per-key archived totals
// in the same transaction, so the audit still holds (usage = archived +
// the records that remain) and every balance, key usage and daily total
// is untouched.
var (
	// "a/" account id or "k/" key hash → Archived
	bucketArchived = []byte("billing_archived")
	// keyPruneState → PruneState
	bucketPrune   = []byte("billing_prune")
	keyPruneState = []byte("state")
)

// PruneBatch is the most records one prune transaction deletes. Update
// transactions are serialised (on PostgreSQL across the cluster): a batch
// holds the write lock for a few milliseconds, so settlements queued
// behind it wait no longer than behind a busy group commit.
const PruneBatch = 1000

// pruneScan bounds the records one transaction looks at, kept ones
// included, so a long run of records that must stay (open holds) cannot
// make a transaction long either.
const pruneScan = 4 * PruneBatch

// Archived is what the pruned records of an account or a key charged, and
// how many they were.
type Archived struct {
	Charged Nanos `json:"charged"`
	Records int64 `json:"records"`
}

// PruneState is the prune record every instance of a cluster shares: the
// last completed round, so another instance can skip a round done
// moments ago, and so a lookup of a pruned id can say why it is missing.
type PruneState struct {
	// Before: every record created before it is gone, except those whose
	// hold was still open (they go in a later round).
	Before time.Time `json:"before"`
	// Retention is the period the round pruned by (Before = At − Retention).
	Retention time.Duration `json:"retention"`
	// At is when the last round completed, By the instance that ran it.
	At time.Time `json:"at"`
	By string    `json:"by"`
	// Pruned counts the records ever pruned.
	Pruned int64 `json:"pruned"`
}

// PruneResult says what one Prune did.
type PruneResult struct {
	Pruned  int // records deleted
	Batches int // transactions that deleted records
	Largest int // most records one of them deleted (at most the batch)
	Held    int // old records kept because their hold is still open
}

// ErrNoUnindex: a ledger that indexes its records (Options.Index) must be
// able to remove those entries before it prunes, or they would name
// records that are gone.
var ErrNoUnindex = errors.New("billing: pruning needs Options.Unindex when Options.Index is set")

// PruneOptions tune Prune; the zero value is usable.
type PruneOptions struct {
	// Batch is the most records one transaction deletes (≤ 0 or more than
	// PruneBatch: PruneBatch).
	Batch int
	// Between, when set, is called after each batch that is not the last
	// with how long its transaction took; Prune stops there (returning
	// what it did, and no error) when it returns false. The gateway's
	// pruner pauses in it, so a backlog of millions of records is deleted
	// beside the traffic rather than ahead of it.
	Between func(took time.Duration) bool
}

// Prune deletes the generation records created more than retention ago,
// at most o.Batch per transaction, oldest first. Each
// transaction also removes the records' index entries (Options.Unindex)
// and adds what they charged to their account's and key's archived
// totals. A record whose hold is still open is kept. Records are found by
// id (time-ordered, NewID), so a round reads only the range it deletes;
// a record is deleted only when its created_at is old enough too.
//
// Prune is idempotent and safe to run from several instances at once:
// the transactions are serialised and each deletes only what is still
// there. Callers bound retention (config.MinRetention): the ledger does
// not second-guess it.
func (l *Ledger) Prune(retention time.Duration, o PruneOptions) (PruneResult, error) {
	var res PruneResult
	batch := o.Batch
	if l.closed.Load() {
		return res, ErrClosed
	}
	if l.opts.Index != nil && l.opts.Unindex == nil {
		return res, ErrNoUnindex
	}
	if batch <= 0 || batch > PruneBatch {
		batch = PruneBatch
	}
	now := l.now()
	before := now.Add(-retention)
	cut := IDAt(before)
	// Nothing old enough (the usual round, minutes after the last): a
	// read, not an Update, which would take the store's write lock (on
	// PostgreSQL the whole cluster's) for nothing.
	idle := false
	if err := l.db.View(func(tx store.Tx) error {
		gens := tx.Bucket(bucketGenerations)
		if gens == nil {
			idle = true
			return nil
		}
		k, _ := gens.Cursor().First()
		idle = k == nil || string(k) >= cut
		return nil
	}); err != nil || idle {
		return res, err
	}
	after := ""
	for {
		var b pruneBatch
		began := time.Now()
		err := l.db.Update(func(tx store.Tx) error {
			var err error
			b, err = l.pruneBatch(tx, cut, before, after, batch)
			if err != nil {
				return err
			}
			return updatePruneState(tx, func(st *PruneState) {
				st.Pruned += int64(len(b.victims))
				if b.end {
					if before.After(st.Before) {
						st.Before, st.Retention = before, retention
					}
					st.At, st.By = now, l.opts.InstanceID
				}
			})
		})
		if err != nil {
			return res, err
		}
		if n := len(b.victims); n > 0 {
			res.Pruned += n
			res.Batches++
			res.Largest = max(res.Largest, n)
		}
		res.Held += b.held
		if b.end || l.closed.Load() {
			return res, nil
		}
		if o.Between != nil && !o.Between(time.Since(began)) {
			return res, nil
		}
		after = b.last
	}
}

type pruneBatch struct {
	victims []*Generation
	held    int
	last    string // the last id looked at
	end     bool   // no record below the cut after it
}

// pruneBatch deletes up to batch records with ids from after (exclusive)
// up to cut, created before before.
func (l *Ledger) pruneBatch(tx store.Tx, cut string, before time.Time, after string, batch int) (pruneBatch, error) {
	var b pruneBatch
	gens := tx.Bucket(bucketGenerations)
	if gens == nil {
		b.end = true
		return b, nil
	}
	// The holds below the cut: one range read (there are few open holds,
	// and fewer still that old) rather than a lookup per record.
	open := map[string]bool{}
	if hb := tx.Bucket(bucketHolds); hb != nil {
		hc := hb.Cursor()
		for k, _ := hc.Seek([]byte(after)); k != nil && string(k) < cut; k, _ = hc.Next() {
			open[string(k)] = true
		}
	}
	c := gens.Cursor()
	k, v := c.First()
	if after != "" {
		if k, v = c.Seek([]byte(after)); k != nil && string(k) == after {
			k, v = c.Next()
		}
	}
	for scanned := 0; ; k, v = c.Next() {
		if k == nil || string(k) >= cut {
			b.end = true
			break
		}
		if len(b.victims) == batch || scanned == pruneScan {
			break
		}
		scanned++
		b.last = string(k)
		if open[b.last] {
			b.held++
			continue
		}
		g, err := pruneFields(v)
		if err != nil {
			return b, fmt.Errorf("billing: generation %s: %w", k, err)
		}
		if g.CreatedAt.Before(before) {
			b.victims = append(b.victims, g)
		}
	}
	if len(b.victims) == 0 {
		return b, nil
	}
	if err := archive(tx, b.victims); err != nil {
		return b, err
	}
	for _, g := range b.victims {
		if err := gens.Delete([]byte(g.ID)); err != nil {
			return b, err
		}
		if l.opts.Unindex != nil {
			if err := l.opts.Unindex(tx, g); err != nil {
				return b, err
			}
		}
	}
	return b, nil
}

// pruneFields reads what pruning needs of a record (id, account, key,
// model, created_at, total_cost): a third of the cost of decoding it all,
// which is most of a batch's time on bbolt.
func pruneFields(v []byte) (*Generation, error) {
	f := gjson.GetManyBytes(v, "id", "account_id", "key_hash", "model", "created_at", "total_cost")
	g := &Generation{ID: f[0].Str, AccountID: f[1].Str, KeyHash: f[2].Str, Model: f[3].Str}
	var err error
	if g.CreatedAt, err = time.Parse(time.RFC3339Nano, f[4].Str); err != nil {
		return nil, err
	}
	if f[5].Exists() {
		if g.Charged, err = ParseUSD(f[5].Raw); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// archive adds what gs charged to their accounts' and keys' archived
// totals.
func archive(tx store.Tx, gs []*Generation) error {
	sums := map[string]*Archived{}
	add := func(k string, g *Generation) {
		s := sums[k]
		if s == nil {
			s = &Archived{}
			sums[k] = s
		}
		s.Charged += g.Charged
		s.Records++
	}
	for _, g := range gs {
		add("a/"+g.AccountID, g)
		add("k/"+g.KeyHash, g)
	}
	keys := make([]string, 0, len(sums))
	// The prune state is read next (updatePruneState): fetched with the
	// totals.
	refs := make([]store.Ref, 0, len(sums)+1)
	refs = append(refs, store.Ref{Bucket: bucketPrune, Key: keyPruneState})
	for k := range sums {
		keys = append(keys, k)
		refs = append(refs, store.Ref{Bucket: bucketArchived, Key: []byte(k)})
	}
	sort.Strings(keys)
	ab, err := tx.CreateBucketIfNotExists(bucketArchived)
	if err != nil {
		return err
	}
	store.Prefetch(tx, refs) // one round trip on PostgreSQL for all of them
	for _, k := range keys {
		var r Archived
		if v := ab.Get([]byte(k)); v != nil {
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
		}
		r.Charged += sums[k].Charged
		r.Records += sums[k].Records
		v, _ := json.Marshal(r)
		if err := ab.Put([]byte(k), v); err != nil {
			return err
		}
	}
	return nil
}

// archivedIn returns the archived totals of accounts and keys in tx.
func archivedIn(tx store.Tx) (accounts, keys map[string]Archived, err error) {
	accounts, keys = map[string]Archived{}, map[string]Archived{}
	ab := tx.Bucket(bucketArchived)
	if ab == nil {
		return accounts, keys, nil
	}
	err = ab.ForEach(func(k, v []byte) error {
		var r Archived
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		switch s := string(k); {
		case len(s) > 2 && s[:2] == "a/":
			accounts[s[2:]] = r
		case len(s) > 2 && s[:2] == "k/":
			keys[s[2:]] = r
		}
		return nil
	})
	return accounts, keys, err
}

// Archived returns the archived totals of every account and key that had
// records pruned.
func (l *Ledger) Archived() (accounts, keys map[string]Archived, err error) {
	err = l.db.View(func(tx store.Tx) error {
		accounts, keys, err = archivedIn(tx)
		return err
	})
	return accounts, keys, err
}

func updatePruneState(tx store.Tx, fn func(*PruneState)) error {
	b, err := tx.CreateBucketIfNotExists(bucketPrune)
	if err != nil {
		return err
	}
	st, err := pruneStateIn(tx)
	if err != nil {
		return err
	}
	fn(&st)
	v, _ := json.Marshal(st)
	return b.Put(keyPruneState, v)
}

// PruneState reads the last prune round's record (zero when none ran).
func (l *Ledger) PruneState() (PruneState, error) {
	var st PruneState
	err := l.db.View(func(tx store.Tx) error {
		var err error
		st, err = pruneStateIn(tx)
		return err
	})
	return st, err
}

func pruneStateIn(tx store.Tx) (PruneState, error) {
	var st PruneState
	b := tx.Bucket(bucketPrune)
	if b == nil {
		return st, nil
	}
	v := b.Get(keyPruneState)
	if v == nil {
		return st, nil
	}
	return st, json.Unmarshal(v, &st)
}

// Pruned tells whether a generation id that is not found names a record
// pruned for its age: the id carries its creation time (NewID), and a
// prune round has deleted every record created before Before. It returns
// that time and the round's state; ok is false for an id that does not
// carry a time or is younger than the last round's cut.
func (l *Ledger) Pruned(id string) (created time.Time, st PruneState, ok bool, err error) {
	created, ok = IDTime(id)
	if !ok {
		return created, st, false, nil
	}
	if st, err = l.PruneState(); err != nil {
		return created, st, false, err
	}
	return created, st, created.Before(st.Before), nil
}
