// Package store is the gateway's durable state: an ordered, transactional
// key-value store of named buckets, with two implementations behind one
// contract — bbolt (the embedded default: one file, one process) and
// PostgreSQL (cluster mode: many gateways share one database).
//
// Every package that persists state (keys, billing, modules, kv, activity)
// owns its own top-level buckets and sees only DB, Tx, Bucket and Cursor:
// nothing above this package knows which store it has. The contract is
// bbolt's, because bbolt was first and every caller was written to it:
//
//   - Update transactions are serialised — across processes too, for a
//     shared store — so a read-modify-write inside one never loses an update.
//   - View transactions see one consistent snapshot.
//   - Values returned by Get and cursors are valid only until the
//     transaction ends; callers copy what they keep.
//   - Keys within a bucket iterate in byte order.
//
// A store that can fail in the middle of a transaction (a network store)
// records the first failure in the transaction: Bucket still returns a
// bucket (its reads nil, its writes failing), reads after it return nil,
// writes return it, and View/Update return it — wrapped in ErrUnavailable
// when the store could not be reached — whatever fn returned, so a lost
// connection is never mistaken for a missing record (a valid key answered
// "not found" would be a 401; it must be a 503).
//
// The contract test (storetest) runs against both implementations.
package store

import (
	"errors"
)

// DB is an open store. It is safe for concurrent use.
type DB interface {
	// View runs fn in a read-only transaction.
	View(fn func(Tx) error) error
	// Update runs fn in a read-write transaction and commits it if fn
	// returns nil. Update transactions are serialised.
	Update(fn func(Tx) error) error
	// Subscribe calls fn with the payload of every notification published
	// on topic (Tx.Notify) by any process sharing the store, this one
	// included, after the publishing transaction commits. fn runs on a
	// store goroutine and must not block for long. When the store may have
	// missed notifications (its listening connection was lost and is back)
	// fn is called with Resync: reload everything the topic covers.
	// The returned function unsubscribes.
	Subscribe(topic string, fn func(payload string)) (cancel func())
	// Kind names the implementation: "bbolt" or "postgres".
	Kind() string
	// Shared reports whether other processes may write the same store at
	// the same time (PostgreSQL): in-memory caches must then follow
	// notifications, and money must be leased (docs/cluster.md).
	Shared() bool
	// Close releases the store. Transactions must have ended.
	Close() error
}

// Resync is the payload Subscribe delivers when notifications may have
// been lost.
const Resync = "\x00resync"

// Tx is a transaction. It must not be used after its View or Update
// function returns.
type Tx interface {
	// Bucket returns the top-level bucket name, or nil if it does not exist.
	Bucket(name []byte) Bucket
	// CreateBucketIfNotExists returns the top-level bucket name, creating
	// it (read-write transactions only).
	CreateBucketIfNotExists(name []byte) (Bucket, error)
	// DeleteBucket removes the top-level bucket name with everything in it;
	// it returns ErrBucketNotFound if there is none.
	DeleteBucket(name []byte) error
	// Writable reports whether this is a read-write transaction.
	Writable() bool
	// Notify publishes payload on topic when (and only if) the transaction
	// commits (read-write transactions only). Payloads are at most
	// MaxNotifyPayload bytes.
	Notify(topic, payload string) error
}

// Ref names one value: a key of a top-level bucket.
type Ref struct {
	Bucket, Key []byte
}

// Prefetcher is implemented by transactions whose reads are round trips
// (PostgreSQL). Prefetch reads every ref in one round trip and keeps the
// values, so the Gets that follow cost no round trip each; a store whose
// reads are memory (bbolt) does not implement it. Refs of missing buckets
// are ignored. It changes no result, only how many round trips they cost:
// the transaction's own writes still win, and Update transactions are
// serialised so nobody else changes a prefetched value before the end.
type Prefetcher interface {
	Prefetch(refs []Ref)
}

// Prefetch asks tx to read refs in one round trip if it can (Prefetcher);
// otherwise it does nothing.
func Prefetch(tx Tx, refs []Ref) {
	if p, ok := tx.(Prefetcher); ok && len(refs) > 0 {
		p.Prefetch(refs)
	}
}

// MaxNotifyPayload bounds a notification's payload (PostgreSQL's NOTIFY
// takes less than 8000 bytes): send ids, not records.
const MaxNotifyPayload = 4000

// Bucket is an ordered collection of key/value pairs and nested buckets.
type Bucket interface {
	// Get returns the value of key, or nil if it is absent (or names a
	// nested bucket).
	Get(key []byte) []byte
	// Put sets key to value (copied). The key must be non-empty and at most
	// MaxKeySize bytes; a nil value is stored as empty.
	Put(key, value []byte) error
	// Delete removes key; deleting an absent key is not an error.
	Delete(key []byte) error
	// Cursor iterates the bucket in key order.
	Cursor() Cursor
	// ForEach calls fn for every key in order (v is nil for a nested
	// bucket); an error from fn stops it and is returned.
	ForEach(fn func(k, v []byte) error) error
	// Bucket returns the nested bucket name, or nil.
	Bucket(name []byte) Bucket
	// CreateBucketIfNotExists returns the nested bucket name, creating it.
	CreateBucketIfNotExists(name []byte) (Bucket, error)
	// DeleteBucket removes the nested bucket name with everything in it.
	DeleteBucket(name []byte) error
	// KeyN counts the keys of the bucket (nested buckets' own keys
	// included, as bbolt's Stats().KeyN does).
	KeyN() int
	// SetFillPercent hints how full to pack pages when keys are appended
	// in order (bbolt); other stores ignore it.
	SetFillPercent(float64)
}

// Cursor walks a bucket in key order. Each method returns the key and
// value it lands on, or a nil key past either end; v is nil for a nested
// bucket.
type Cursor interface {
	First() (k, v []byte)
	Last() (k, v []byte)
	// Seek moves to key, or the first key after it.
	Seek(key []byte) (k, v []byte)
	Next() (k, v []byte)
	Prev() (k, v []byte)
	// Delete removes the key the cursor is on.
	Delete() error
}

// MaxKeySize bounds keys (bbolt's own limit is 32768).
const MaxKeySize = 32768

// Errors.
var (
	// ErrUnavailable wraps every failure to reach the store: the request
	// that needed it fails with 503 and Retry-After, not with a wrong answer.
	ErrUnavailable = errors.New("store: unavailable")
	// ErrBucketNotFound is returned by DeleteBucket for a missing bucket.
	ErrBucketNotFound = errors.New("store: bucket not found")
	// ErrTxNotWritable is returned by writes in a View transaction.
	ErrTxNotWritable = errors.New("store: transaction not writable")
	// ErrKeyRequired and ErrKeyTooLarge refuse bad keys.
	ErrKeyRequired = errors.New("store: key required")
	ErrKeyTooLarge = errors.New("store: key too large")
)
