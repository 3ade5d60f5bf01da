// Package content keeps the prompt and completion of an account's
// generations, when the account (or the operator, for every account) has
// turned that on, for OpenRouter's GET /generation/content. Nothing is
// stored by default: prompts are the tenant's data.
//
// A record is keyed by its account and generation id in the gateway's
// store (bbolt or PostgreSQL, through host/store): a key of another
// account never finds it. It holds the request's messages as the client
// sent them (or the prompt of a legacy completion), the answer's text and
// reasoning, and the failure when the request failed after it was
// charged — never a header, so never a key or a provider secret. Records
// are bounded in size (Input, Collector) and pruned after
// retention.content (Prune).
package content

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchyard/switchyard/host/store"
	"github.com/tidwall/gjson"
)

var (
	// account 0 generation id → Record (JSON)
	bucket = []byte("generation_content")
	// stored (8 bytes, big-endian unix nanoseconds) account 0 id → "":
	// Prune reads only what it deletes.
	byTime = []byte("generation_content_by_time")
)

// Record is one generation's stored content.
type Record struct {
	// Input is OpenRouter's input object: {"messages": [...]} as the
	// client sent them, or {"prompt": "..."} for POST /completions.
	Input json.RawMessage `json:"input"`
	// Completion and Reasoning are the answer's text and reasoning (the
	// first choice's); nil when it had none.
	Completion *string `json:"completion"`
	Reasoning  *string `json:"reasoning"`
	// Error is the failure the client was answered with, nil on success.
	Error *Failure `json:"error,omitempty"`
	// Truncated: the content was larger than the bound and was cut
	// (oldest messages dropped, text cut short).
	Truncated bool `json:"truncated,omitempty"`
	// Stored is when it was stored (unix nanoseconds): its byTime key.
	Stored int64 `json:"stored"`
}

// Failure is the error a generation's client was answered with.
type Failure struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// Store reads and writes records in DB.
type Store struct{ DB store.DB }

func key(account, id string) []byte { return []byte(account + "\x00" + id) }

func timeKey(stored int64, k []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(k)), uint64(stored)), k...)
}

// Put stores rec as the account's generation id (rec.Stored: now when 0).
func (s Store) Put(account, id string, rec *Record) error {
	if rec.Stored == 0 {
		rec.Stored = time.Now().UnixNano()
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.DB.Update(func(tx store.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		idx, err := tx.CreateBucketIfNotExists(byTime)
		if err != nil {
			return err
		}
		k := key(account, id)
		if old := bk.Get(k); old != nil { // stored again: its old index entry goes
			if err := idx.Delete(timeKey(gjson.GetBytes(old, "stored").Int(), k)); err != nil {
				return err
			}
		}
		if err := idx.Put(timeKey(rec.Stored, k), nil); err != nil {
			return err
		}
		return bk.Put(k, b)
	})
}

// Get is the account's content of generation id; nil when it has none.
func (s Store) Get(account, id string) (*Record, error) {
	if id == "" || len(id) > 256 {
		return nil, nil
	}
	var rec *Record
	err := s.DB.View(func(tx store.Tx) error {
		bk := tx.Bucket(bucket)
		if bk == nil {
			return nil
		}
		v := bk.Get(key(account, id))
		if v == nil {
			return nil
		}
		rec = new(Record)
		if err := json.Unmarshal(v, rec); err != nil {
			return fmt.Errorf("content of %s: %w", id, err)
		}
		return nil
	})
	return rec, err
}

// Prune deletes the records stored before before, at most batch (> 0) per
// transaction, and returns how many it deleted.
func (s Store) Prune(before time.Time, batch int) (int, error) {
	limit := timeKey(before.UnixNano(), nil)
	total := 0
	for {
		n := 0
		err := s.DB.Update(func(tx store.Tx) error {
			n = 0 // a store may run the function again
			idx, bk := tx.Bucket(byTime), tx.Bucket(bucket)
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
				if err := bk.Delete(k[8:]); err != nil {
					return err
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
