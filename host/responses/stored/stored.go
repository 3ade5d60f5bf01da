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
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchyard/switchyard/host/store"
	"github.com/tidwall/gjson"
)

var bucket = []byte("responses")

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
}

// Store reads and writes records in db.
type Store struct{ DB store.DB }

func key(account, id string) []byte { return []byte(account + "\x00" + id) }

// Put stores rec as the account's response id.
func (s Store) Put(account, id string, rec *Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.DB.Update(func(tx store.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		return bk.Put(key(account, id), b)
	})
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
	bk := tx.Bucket(bucket)
	if bk == nil || id == "" || len(id) > 256 {
		return nil, nil
	}
	v := bk.Get(key(account, id))
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
	err = s.DB.Update(func(tx store.Tx) error {
		bk := tx.Bucket(bucket)
		if bk == nil || bk.Get(key(account, id)) == nil {
			return nil
		}
		found = true
		return bk.Delete(key(account, id))
	})
	return found, err
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
