// Package stored keeps Responses API responses (store: true, OpenAI's
// default) per account in the gateway's store (bbolt or PostgreSQL, through
// host/store), for GET/DELETE /responses/{id}, its input_items and
// previous_response_id. A record is keyed by its account and id: another
// account's key never finds it.
//
// A record holds its own turn only — the input items of its request and
// the response — and the id of the response before it: a conversation of
// n turns costs n records, not n², and its history is read by following
// the links (at most MaxChain of them).
package stored

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchyard/switchyard/host/records"
	"github.com/switchyard/switchyard/host/store"
	"github.com/tidwall/gjson"
)

var (
	// table holds the records (account 0 id → Record as JSON) and their
	// time index, so Prune reads only what it deletes.
	table = records.Table{Bucket: []byte("responses"), ByTime: []byte("responses_by_time")}
	// meta holds markers of one-time work on the records (Backfill).
	meta         = []byte("responses_meta")
	backfillDone = []byte("backfilled_by_time")
)

// MaxChain bounds how many responses a previous_response_id chain may
// span: each is one read.
const MaxChain = 256

// ErrChainTooLong is History's answer to a chain longer than MaxChain.
var ErrChainTooLong = errors.New("the previous_response_id chain is longer than the gateway keeps")

// Record is one stored response.
type Record struct {
	// Previous is the previous_response_id it continued ("" none).
	Previous string `json:"previous,omitempty"`
	// Input are its request's input items, each with an id.
	Input []json.RawMessage `json:"input"`
	// Response is the response object as answered.
	Response json.RawMessage `json:"response"`
	// Stored is when Put stored it (unix nanoseconds): its time index key.
	// 0 for a record stored before 2026-11-29 until Backfill indexes it.
	Stored int64 `json:"stored,omitempty"`
}

// Store reads and writes records in db.
type Store struct{ DB store.DB }

// Put stores rec as the account's response id, at now (rec.Stored).
func (s Store) Put(account, id string, rec *Record) error {
	if rec.Stored == 0 {
		rec.Stored = time.Now().UnixNano()
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return table.Put(s.DB, account, id, rec.Stored, b)
}

// Prune deletes the records stored before before, at most batch (> 0) per
// transaction, and returns how many it deleted. A response a later one
// continues goes too: that one's history then ends there, as when it is
// deleted by id.
func (s Store) Prune(before time.Time, batch int) (int, error) {
	return table.Prune(s.DB, before, batch)
}

// Backfill indexes the records stored before the time index existed
// (Stored 0), so Prune finds them too: each by its response's created_at
// (Unix seconds, in every Responses object), or now when it has none — a
// record is then kept one retention period longer, never deleted early.
// It reads at most batch records per transaction and returns how many it
// indexed. Once it has gone through the records it leaves a marker, so a
// later start does not read them again; on a cluster two instances may
// both run it, and indexing a record twice writes the same entry.
func (s Store) Backfill(now time.Time, batch int) (int, error) {
	done := false
	_ = s.DB.View(func(tx store.Tx) error {
		if m := tx.Bucket(meta); m != nil && m.Get(backfillDone) != nil {
			done = true
		}
		return nil
	})
	if done {
		return 0, nil
	}
	total := 0
	var after []byte // the last key read
	for {
		var read, n int
		var last []byte
		err := s.DB.Update(func(tx store.Tx) error {
			read, last = 0, nil // a store may run the function again
			bk := tx.Bucket(table.Bucket)
			if bk == nil {
				return nil
			}
			idx, err := tx.CreateBucketIfNotExists(table.ByTime)
			if err != nil {
				return err
			}
			var keys, vals [][]byte
			c := bk.Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && read < batch; k, v = c.Next() {
				read++
				last = append(last[:0], k...)
				if records.StoredAt(v) == 0 {
					keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(v))
				}
			}
			// Written after the walk: a write may move a cursor.
			for i, k := range keys {
				at := now.UnixNano()
				if sec := gjson.GetBytes(vals[i], "response.created_at").Int(); sec > 0 {
					at = time.Unix(sec, 0).UnixNano()
				}
				nv, err := withStored(vals[i], at)
				if err != nil {
					return err
				}
				if err := idx.Put(records.TimeKey(at, k), nil); err != nil {
					return err
				}
				if err := bk.Put(k, nv); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		total += n
		if err != nil {
			return total, err
		}
		if read < batch {
			break
		}
		after = last
	}
	return total, s.DB.Update(func(tx store.Tx) error {
		m, err := tx.CreateBucketIfNotExists(meta)
		if err != nil {
			return err
		}
		return m.Put(backfillDone, []byte(now.UTC().Format(time.RFC3339)))
	})
}

// withStored is an encoded record with its Stored set to at.
func withStored(v []byte, at int64) ([]byte, error) {
	var rec Record
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("responses: a stored record does not decode: %w", err)
	}
	rec.Stored = at
	return json.Marshal(&rec)
}

// Get is the account's response id, nil when it has none by that id.
func (s Store) Get(account, id string) (*Record, error) {
	var rec *Record
	err := s.DB.View(func(tx store.Tx) error {
		var err error
		rec, err = get(tx, account, id)
		return err
	})
	return rec, err
}

func get(tx store.Tx, account, id string) (*Record, error) {
	v := table.Get(tx, account, id)
	if v == nil {
		return nil, nil
	}
	var rec Record
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("stored response %s: %w", id, err)
	}
	return &rec, nil
}

// Delete removes the account's response id; found reports it existed.
func (s Store) Delete(account, id string) (found bool, err error) {
	return table.Delete(s.DB, account, id)
}

// History is the conversation up to and including the account's response
// id, as input items oldest first: each turn's input, then its output.
// found is false when the account has no response id. A response deleted
// from the middle of a chain ends the history there.
func (s Store) History(account, id string) (items []json.RawMessage, found bool, err error) {
	var turns [][]json.RawMessage
	err = s.DB.View(func(tx store.Tx) error {
		for i, next := 0, id; next != ""; i++ {
			if i == MaxChain {
				return ErrChainTooLong
			}
			rec, err := get(tx, account, next)
			if err != nil {
				return err
			}
			if rec == nil {
				break
			}
			found = found || i == 0
			turn := append([]json.RawMessage(nil), rec.Input...)
			gjson.GetBytes(rec.Response, "output").ForEach(func(_, o gjson.Result) bool {
				turn = append(turn, json.RawMessage(o.Raw))
				return true
			})
			turns = append(turns, turn)
			next = rec.Previous
		}
		return nil
	})
	for i := len(turns) - 1; i >= 0; i-- {
		items = append(items, turns[i]...)
	}
	return items, found, err
}
