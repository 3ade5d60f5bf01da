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
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchyard/switchyard/host/records"
	"github.com/switchyard/switchyard/host/store"
)

// table holds the records (account 0 generation id → Record as JSON) and
// their time index, so Prune reads only what it deletes.
var table = records.Table{Bucket: []byte("generation_content"), ByTime: []byte("generation_content_by_time")}

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
	// Stored is when it was stored (unix nanoseconds): its time index key.
	Stored int64 `json:"stored"`
}

// Failure is the error a generation's client was answered with.
type Failure struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// Store reads and writes records in DB.
type Store struct{ DB store.DB }

// Put stores rec as the account's generation id (rec.Stored: now when 0).
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

// Get is the account's content of generation id; nil when it has none.
func (s Store) Get(account, id string) (*Record, error) {
	var rec *Record
	err := s.DB.View(func(tx store.Tx) error {
		v := table.Get(tx, account, id)
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
	return table.Prune(s.DB, before, batch)
}
