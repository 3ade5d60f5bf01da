package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"
)

// Bolt is the embedded store: one bbolt file, one process.
type Bolt struct {
	db *bolt.DB
	subs
}

var _ DB = (*Bolt)(nil)

// OpenBolt opens (creating if needed) the bbolt file at path.
func OpenBolt(path string) (*Bolt, error) {
	// A timeout instead of blocking forever when a second gateway holds the
	// file lock: the operator gets an error that says what is wrong.
	return OpenBoltWith(path, &bolt.Options{Timeout: 2 * time.Second, InitialMmapSize: initialMmap})
}

// initialMmap is the address space bbolt maps from the start (address
// space, not memory: only the pages read are resident). Grown by doubling
// instead, the map was remapped each time a commit's pages went past it,
// and every remap copies each value of the transaction's nodes out of the
// old map into the heap (bbolt's dereference): a fresh data directory's
// first commit stores ~70 MB of module binaries, and its remaps took the
// start's heap to ~330 MB (VmHWM 390 MB) for a gateway that then idles
// at 20. It also spares a growing store the remaps that wait for every
// read transaction to end. 32-bit platforms keep bbolt's doubling.
const initialMmap = (1 << 30) * (strconv.IntSize / 64)

// OpenBoltWith opens the bbolt file at path with bbolt's own options
// (tests and benchmarks use NoSync).
func OpenBoltWith(path string, o *bolt.Options) (*Bolt, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: create directory: %w", err)
		}
	}
	db, err := bolt.Open(path, 0o600, o)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w (is another gateway using it?)", path, err)
	}
	return &Bolt{db: db}, nil
}

// Bolt returns the underlying bbolt handle, for tools that read the file
// itself (stats, backup).
func (b *Bolt) Bolt() *bolt.DB { return b.db }

// Kind implements DB.
func (b *Bolt) Kind() string { return "bbolt" }

// Shared implements DB: bbolt admits one process per file.
func (b *Bolt) Shared() bool { return false }

// Close implements DB.
func (b *Bolt) Close() error { return b.db.Close() }

// View implements DB.
func (b *Bolt) View(fn func(Tx) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(&boltTx{tx: tx}) })
}

// Update implements DB.
func (b *Bolt) Update(fn func(Tx) error) error {
	t := &boltTx{tx: nil}
	err := b.db.Update(func(tx *bolt.Tx) error {
		t.tx = tx
		t.notes = t.notes[:0]
		return fn(t)
	})
	if err == nil {
		for _, n := range t.notes {
			b.publish(n.topic, n.payload)
		}
	}
	return err
}

type note struct{ topic, payload string }

type boltTx struct {
	tx    *bolt.Tx
	notes []note
}

func (t *boltTx) Bucket(name []byte) Bucket {
	if b := t.tx.Bucket(name); b != nil {
		return boltBucket{b}
	}
	return nil
}

// CreateBucketIfNotExists looks the bucket up first: bbolt's copies the
// name on every call, an allocation each time a settlement opens one of
// the buckets that exist from the start.
func (t *boltTx) CreateBucketIfNotExists(name []byte) (Bucket, error) {
	if t.tx.Writable() {
		if b := t.tx.Bucket(name); b != nil {
			return boltBucket{b}, nil
		}
	}
	b, err := t.tx.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, mapBoltErr(err)
	}
	return boltBucket{b}, nil
}

func (t *boltTx) DeleteBucket(name []byte) error { return mapBoltErr(t.tx.DeleteBucket(name)) }
func (t *boltTx) Writable() bool                 { return t.tx.Writable() }

func (t *boltTx) Notify(topic, payload string) error {
	if !t.tx.Writable() {
		return ErrTxNotWritable
	}
	if len(payload) > MaxNotifyPayload {
		return fmt.Errorf("store: notification payload of %d bytes (at most %d)", len(payload), MaxNotifyPayload)
	}
	t.notes = append(t.notes, note{topic, payload})
	return nil
}

type boltBucket struct{ b *bolt.Bucket }

func (b boltBucket) Get(k []byte) []byte { return b.b.Get(k) }
func (b boltBucket) Put(k, v []byte) error {
	if v == nil {
		v = []byte{}
	}
	return mapBoltErr(b.b.Put(k, v))
}
func (b boltBucket) Delete(k []byte) error { return mapBoltErr(b.b.Delete(k)) }
func (b boltBucket) Cursor() Cursor        { return boltCursor{b.b.Cursor()} }
func (b boltBucket) ForEach(fn func(k, v []byte) error) error {
	return b.b.ForEach(fn)
}
func (b boltBucket) Bucket(name []byte) Bucket {
	if n := b.b.Bucket(name); n != nil {
		return boltBucket{n}
	}
	return nil
}
func (b boltBucket) CreateBucketIfNotExists(name []byte) (Bucket, error) {
	if b.b.Writable() {
		if n := b.b.Bucket(name); n != nil {
			return boltBucket{n}, nil
		}
	}
	n, err := b.b.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, mapBoltErr(err)
	}
	return boltBucket{n}, nil
}
func (b boltBucket) DeleteBucket(name []byte) error { return mapBoltErr(b.b.DeleteBucket(name)) }
func (b boltBucket) KeyN() int                      { return b.b.Stats().KeyN }
func (b boltBucket) SetFillPercent(f float64)       { b.b.FillPercent = f }

type boltCursor struct{ c *bolt.Cursor }

func (c boltCursor) First() ([]byte, []byte)        { return c.c.First() }
func (c boltCursor) Last() ([]byte, []byte)         { return c.c.Last() }
func (c boltCursor) Seek(k []byte) ([]byte, []byte) { return c.c.Seek(k) }
func (c boltCursor) Next() ([]byte, []byte)         { return c.c.Next() }
func (c boltCursor) Prev() ([]byte, []byte)         { return c.c.Prev() }
func (c boltCursor) Delete() error                  { return mapBoltErr(c.c.Delete()) }

// mapBoltErr turns bbolt's errors into the contract's.
func mapBoltErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bolterr.ErrBucketNotFound):
		return ErrBucketNotFound
	case errors.Is(err, bolterr.ErrTxNotWritable):
		return ErrTxNotWritable
	case errors.Is(err, bolterr.ErrKeyRequired):
		return ErrKeyRequired
	case errors.Is(err, bolterr.ErrKeyTooLarge):
		return ErrKeyTooLarge
	}
	return err
}

// subs fans notifications out to this process's subscribers.
type subs struct {
	mu   sync.Mutex
	next int
	m    map[string]map[int]func(string)
}

// Subscribe implements DB.
func (s *subs) Subscribe(topic string, fn func(string)) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[int]func(string){}
	}
	if s.m[topic] == nil {
		s.m[topic] = map[int]func(string){}
	}
	s.next++
	id := s.next
	s.m[topic][id] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.m[topic], id)
	}
}

// publish calls topic's subscribers in turn.
func (s *subs) publish(topic, payload string) {
	s.mu.Lock()
	fns := make([]func(string), 0, len(s.m[topic]))
	for _, fn := range s.m[topic] {
		fns = append(fns, fn)
	}
	s.mu.Unlock()
	for _, fn := range fns {
		fn(payload)
	}
}

// resyncAll tells every subscriber to reload (a network store whose
// listener reconnected).
func (s *subs) resyncAll() {
	s.mu.Lock()
	var fns []func(string)
	for _, m := range s.m {
		for _, fn := range m {
			fns = append(fns, fn)
		}
	}
	s.mu.Unlock()
	for _, fn := range fns {
		fn(Resync)
	}
}
