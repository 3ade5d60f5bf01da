// Package activity lists an account's generation records and totals them
// per day, fast on stores with millions of records: the records are keyed
// by id, so every listing would otherwise read them all. Index (passed to
// the ledger as billing.Options.Index) writes, in the settlement's own
// transaction, one time-ordered entry per record, entries per key and per
// model, and adds the record to its account's daily totals.
package activity

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/store"
)

var (
	// account 0 created(8, big endian ns) id → model 0 provider 0 status 0 key hash
	bucketByTime = []byte("activity_by_time")
	// account 0 key hash 0 created id → ""
	bucketByKey = []byte("activity_by_key")
	// account 0 model 0 created id → ""
	bucketByModel = []byte("activity_by_model")
	// account 0 date 0 model 0 key hash → totals (4 × 8 bytes)
	bucketDaily = []byte("activity_daily")
	// account 0 date 0 http_referer 0 app_title → totals: the day's
	// totals per app, as its attribution headers named it (GET /activity
	// group_by=app). Counted from 2026-11-29 (issue 32): older records
	// are in bucketDaily only.
	bucketDailyApp = []byte("activity_daily_app")
	bucketMeta     = []byte("activity_meta")
	// backfilled marks a store whose records written before the indexes
	// existed have been indexed.
	keyBackfilled = []byte("backfilled_v1")
)

const sep = 0

// Open creates the index buckets and indexes every record written before
// they existed (once per store, in batches, idempotent if interrupted). Run
// it before the ledger opens, so nothing settles meanwhile.
func Open(db store.DB) error {
	done := false
	if err := db.Update(func(tx store.Tx) error {
		for _, b := range [][]byte{bucketByTime, bucketByKey, bucketByModel, bucketDaily, bucketDailyApp, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		done = tx.Bucket(bucketMeta).Get(keyBackfilled) != nil
		return nil
	}); err != nil || done {
		return err
	}
	after := ""
	for {
		n := 0
		err := db.Update(func(tx store.Tx) error {
			var ierr error
			last, err := billing.ForEachGenerationIn(tx, after, func(g *billing.Generation) bool {
				n++
				// An interrupted backfill starts again from the first
				// record: those it indexed then are skipped.
				ierr = indexUnlessIndexed(tx, g)
				return ierr == nil && n < 10000
			})
			after = last
			if err != nil {
				return err
			}
			if ierr != nil {
				return ierr
			}
			if n == 0 {
				return tx.Bucket(bucketMeta).Put(keyBackfilled, []byte{1})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("activity: indexing existing generations: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
}

// indexFill is how full the index buckets' pages are packed when they
// split. An account's entries are appended in time order (their keys end
// in the record's time), so a split page is never written into again:
// bbolt's default of half full left every index page half empty, twice
// the pages to write per group commit.
const indexFill = 0.9

// Index adds g to its account's indexes and daily totals. The ledger calls
// it once per record, in the transaction that writes the record
// (billing.IndexFunc), so it does not look for an earlier indexing.
func Index(tx store.Tx, g *billing.Generation) error {
	byTime, err := tx.CreateBucketIfNotExists(bucketByTime)
	if err != nil {
		return err
	}
	byTime.SetFillPercent(indexFill)
	k := indexKeys(g)
	es := k.entries()
	if err := byTime.Put(es[0].key, k.timeValue); err != nil {
		return err
	}
	for _, e := range es[1:] {
		b, err := tx.CreateBucketIfNotExists(e.bucket)
		if err != nil {
			return err
		}
		b.SetFillPercent(indexFill)
		if err := b.Put(e.key, nil); err != nil {
			return err
		}
	}
	// The day's totals of a key and model: a group commit's settlements
	// mostly add to the same one, which the group then holds and writes
	// once (billing.UpdateRecord).
	add := func(t *totals) {
		t.Requests++
		t.PromptTokens += g.Usage.PromptTokens
		t.CompletionTokens += g.Usage.CompletionTokens
		t.Cost += g.Charged
	}
	if err := billing.UpdateRecord(tx, bucketDaily, k.daily, add); err != nil {
		return err
	}
	return billing.UpdateRecord(tx, bucketDailyApp, k.dailyApp, add)
}

// indexUnlessIndexed is Index for a record that may be indexed already.
func indexUnlessIndexed(tx store.Tx, g *billing.Generation) error {
	if b := tx.Bucket(bucketByTime); b != nil && b.Get(indexKeys(g).byTime) != nil {
		return nil
	}
	return Index(tx, g)
}

// Reads appends what Index reads (billing.Options.IndexReads), so a
// shared store fetches it with the rest of a group's reads.
func Reads(g *billing.Generation, dst []store.Ref) []store.Ref {
	k := indexKeys(g)
	return append(dst, store.Ref{Bucket: bucketDaily, Key: k.daily}, store.Ref{Bucket: bucketDailyApp, Key: k.dailyApp})
}

// keySet is what Index writes for a record: its keys in the time, key
// and model indexes, the time index's value, and its keys in the daily
// totals. All are cut from one array: bbolt keeps a key it is given until
// the transaction commits, so they cannot share a reused buffer, but one
// allocation per record can hold them all (built key by key, with the
// date formatted twice, they were ~0.9 µs and 8 allocations of the
// store's writer per settlement).
type keySet struct {
	byTime, byKey, byModel, timeValue, daily, dailyApp []byte
}

// indexKeys are g's keys:
//
//	byTime    account 0 created(8, big endian ns) id
//	byKey     account 0 key hash 0 created id
//	byModel   account 0 model 0 created id
//	timeValue model 0 provider 0 status 0 key hash
//	daily     account 0 date 0 model 0 key hash
//	dailyApp  account 0 date 0 http_referer 0 app_title
//
// The attribution values hold no 0 byte: they are cleaned of control
// characters when recorded (host/server/attribution.go); ids, models and
// key hashes have none.
func indexKeys(g *billing.Generation) keySet {
	var d [len(time.DateOnly)]byte
	date := g.CreatedAt.UTC().AppendFormat(d[:0], time.DateOnly)
	var created [8]byte
	binary.BigEndian.PutUint64(created[:], uint64(g.CreatedAt.UnixNano()))
	acct, at := len(g.AccountID)+1, len(created)+len(g.ID)
	b := make([]byte, 0, 3*(acct+at)+len(g.KeyHash)+1+len(g.Model)+1+
		len(g.Model)+1+len(g.Provider)+1+len(g.Status)+1+len(g.KeyHash)+
		2*(acct+len(date)+1)+len(g.Model)+1+len(g.KeyHash)+len(g.Referer)+1+len(g.Title))
	// cut is what was appended since the last cut, capped there so that a
	// later append cannot reach into it; b is sized for all six keys, one
	// allocation (TestIndexKeysAsBefore counts it).
	mark := 0
	cut := func() []byte {
		key := b[mark:len(b):len(b)]
		mark = len(b)
		return key
	}
	var k keySet
	b = append(append(b, g.AccountID...), sep)
	b = append(append(b, created[:]...), g.ID...)
	k.byTime = cut()
	b = append(append(b, g.AccountID...), sep)
	b = append(append(b, g.KeyHash...), sep)
	b = append(append(b, created[:]...), g.ID...)
	k.byKey = cut()
	b = append(append(b, g.AccountID...), sep)
	b = append(append(b, g.Model...), sep)
	b = append(append(b, created[:]...), g.ID...)
	k.byModel = cut()
	b = append(append(b, g.Model...), sep)
	b = append(append(b, g.Provider...), sep)
	b = append(append(b, g.Status...), sep)
	b = append(b, g.KeyHash...)
	k.timeValue = cut()
	b = append(append(b, g.AccountID...), sep)
	b = append(append(b, date...), sep)
	b = append(append(b, g.Model...), sep)
	b = append(b, g.KeyHash...)
	k.daily = cut()
	b = append(append(b, g.AccountID...), sep)
	b = append(append(b, date...), sep)
	b = append(append(b, g.Referer...), sep)
	b = append(b, g.Title...)
	k.dailyApp = cut()
	return k
}

// entry is one index entry of a record.
type entry struct{ bucket, key []byte }

// entries are the record's entries in the time, key and model indexes (in
// that order): what Index writes besides the daily totals, and Unindex
// removes.
func (k keySet) entries() [3]entry {
	return [3]entry{{bucketByTime, k.byTime}, {bucketByKey, k.byKey}, {bucketByModel, k.byModel}}
}

// join is parts separated by 0 bytes (ids, models and key hashes have none),
// in one allocation of the exact size (it runs for every settled request).
func join(parts ...string) []byte {
	n := len(parts) - 1
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, max(n, 0))
	for i, p := range parts {
		if i > 0 {
			b = append(b, sep)
		}
		b = append(b, p...)
	}
	return b
}

type totals struct {
	Requests, PromptTokens, CompletionTokens int64
	Cost                                     billing.Nanos
}

func (t *totals) decode(v []byte) {
	if len(v) < 32 {
		return
	}
	t.Requests = int64(binary.BigEndian.Uint64(v))
	t.PromptTokens = int64(binary.BigEndian.Uint64(v[8:]))
	t.CompletionTokens = int64(binary.BigEndian.Uint64(v[16:]))
	t.Cost = billing.Nanos(binary.BigEndian.Uint64(v[24:]))
}

// DecodeRecord and AppendRecord make totals a billing.Record.
func (t *totals) DecodeRecord(v []byte) error { t.decode(v); return nil }

func (t *totals) AppendRecord(b []byte) []byte {
	for _, x := range [...]int64{t.Requests, t.PromptTokens, t.CompletionTokens, int64(t.Cost)} {
		b = binary.BigEndian.AppendUint64(b, uint64(x))
	}
	return b
}

// Filter narrows a listing; zero fields match everything. From is
// inclusive, To exclusive (by the record's created_at).
type Filter struct {
	Key, Model, Provider, Status string
	From, To                     time.Time
}

// ErrBadCursor is a cursor this package did not make.
var ErrBadCursor = errors.New("cursor: not one this API returned; pass next_cursor as is")

// Page is one page of a listing, newest first. Next is the cursor of the
// page after it, "" when there is none.
type Page struct {
	Data []*billing.Generation
	Next string

	lastSuffix []byte // created+id of the last record in Data
}

// List returns up to limit records of account matching f, newest first,
// starting after cursor ("" = from the newest). It walks the key or model
// index when the filter names one, so a narrow filter reads only its own
// entries; the other fields are checked on the index entry before any
// record is read.
func List(db store.DB, account string, f Filter, cursor string, limit int) (*Page, error) {
	var after []byte
	if cursor != "" {
		c, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || len(c) <= 8 {
			return nil, ErrBadCursor
		}
		after = c
	}
	page := &Page{Data: []*billing.Generation{}}
	err := db.View(func(tx store.Tx) error {
		byTime := tx.Bucket(bucketByTime)
		if byTime == nil {
			return nil
		}
		b, prefix := byTime, join(account, "")
		switch {
		case f.Key != "":
			b, prefix = tx.Bucket(bucketByKey), join(account, f.Key, "")
		case f.Model != "":
			b, prefix = tx.Bucket(bucketByModel), join(account, f.Model, "")
		}
		// The walk starts below the first key it may return: the cursor's
		// entry, or the end of the time range.
		upper := append(append([]byte(nil), prefix...), 0xff)
		if !f.To.IsZero() {
			upper = append(append([]byte(nil), prefix...), binary.BigEndian.AppendUint64(nil, uint64(f.To.UnixNano()))...)
		}
		if after != nil {
			if a := append(append([]byte(nil), prefix...), after...); bytes.Compare(a, upper) < 0 {
				upper = a
			}
		}
		c := b.Cursor()
		k, _ := c.Seek(upper)
		if k == nil || bytes.Compare(k, upper) >= 0 {
			k, _ = c.Prev()
		}
		var fromNs uint64
		if !f.From.IsZero() {
			fromNs = uint64(f.From.UnixNano())
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
			suffix := k[len(prefix):]
			if len(suffix) <= 8 {
				continue
			}
			if binary.BigEndian.Uint64(suffix) < fromNs {
				break
			}
			entry := byTime.Get(join(account, string(suffix)))
			if entry == nil || !f.matches(entry) {
				continue
			}
			if len(page.Data) == limit { // one more matches: there is a next page
				page.Next = base64.RawURLEncoding.EncodeToString(page.lastSuffix)
				break
			}
			g, err := billing.GenerationIn(tx, suffix[8:])
			if err != nil {
				return err
			}
			if g == nil {
				continue
			}
			page.Data = append(page.Data, g)
			page.lastSuffix = append(page.lastSuffix[:0], suffix...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// matches checks the fields of an index entry (model 0 provider 0 status
// 0 key hash) against f.
func (f Filter) matches(entry []byte) bool {
	fields := strings.SplitN(string(entry), "\x00", 4)
	if len(fields) != 4 {
		return false
	}
	for i, want := range []string{f.Model, f.Provider, f.Status, f.Key} {
		if want != "" && fields[i] != want {
			return false
		}
	}
	return true
}

// Row is one line of the activity totals: a day and a model and/or a key.
type Row struct {
	Date  string `json:"date"`
	Model string `json:"model"`
	Key   string `json:"key"`
	// HTTPReferer and AppTitle are the app of a row grouped by app (its
	// attribution headers; both "" for requests that sent none).
	HTTPReferer      string `json:"http_referer,omitempty"`
	AppTitle         string `json:"app_title,omitempty"`
	Requests         int64  `json:"requests"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	Cost             string `json:"cost"`
	cost             billing.Nanos
}

// GroupBy says which of model and key a row of Activity is per.
type GroupBy int

const (
	ByModelAndKey GroupBy = iota // a row per day, model and key
	ByModel                      // a row per day and model, keys summed
	ByKey                        // a row per day and key, models summed
	ByApp                        // a row per day and app (HTTP-Referer, title), models and keys summed
)

// Activity totals account's records per UTC day (of created_at) from from
// to to inclusive (dates "YYYY-MM-DD"), ordered by date, then model, then
// key. It reads the daily totals only, never a record.
func Activity(db store.DB, account, from, to string, by GroupBy) ([]Row, error) {
	if by == ByApp {
		return appActivity(db, account, from, to)
	}
	rows := map[[3]string]*Row{}
	err := eachDay(db, bucketDaily, account, from, to, func(parts [3]string, t totals) {
		date, model, key := parts[0], parts[1], parts[2]
		switch by {
		case ByModel:
			key = ""
		case ByKey:
			model = ""
		}
		id := [3]string{date, model, key}
		r := rows[id]
		if r == nil {
			r = &Row{Date: date, Model: model, Key: key}
			rows[id] = r
		}
		r.Requests += t.Requests
		r.PromptTokens += t.PromptTokens
		r.CompletionTokens += t.CompletionTokens
		r.cost += t.Cost
	})
	if err != nil {
		return nil, err
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		r.Cost = r.cost.USD()
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Date != b.Date {
			return a.Date < b.Date
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		return a.Key < b.Key
	})
	return out, nil
}

// appActivity is Activity per day and app, from the totals per app,
// ordered by date, then referer, then title.
func appActivity(db store.DB, account, from, to string) ([]Row, error) {
	out := []Row{}
	err := eachDay(db, bucketDailyApp, account, from, to, func(parts [3]string, t totals) {
		out = append(out, Row{Date: parts[0], HTTPReferer: parts[1], AppTitle: parts[2], Requests: t.Requests,
			PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens, Cost: t.Cost.USD(), cost: t.Cost})
	})
	return out, err // in key order: date, referer, title
}

// eachDay calls fn, in key order, with the three parts after the account
// (the date first) and the totals of every record of bucket for account
// dated from through to.
func eachDay(db store.DB, bucket []byte, account, from, to string, fn func(parts [3]string, t totals)) error {
	return db.View(func(tx store.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		prefix := join(account, "")
		c := b.Cursor()
		for k, v := c.Seek(join(account, from)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			parts := strings.SplitN(string(k[len(prefix):]), "\x00", 3)
			if len(parts) != 3 {
				continue
			}
			if parts[0] > to {
				break
			}
			var t totals
			t.decode(v)
			fn([3]string(parts), t)
		}
		return nil
	})
}
