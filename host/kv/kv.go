// Package kv is the small key-value store modules reach through the kv_get
// and kv_put host functions (docs/abi.md section 5). It lives in the
// gateway's bbolt file (host/store), under its own top-level bucket, so there
// is still one file to back up.
//
// Every entry belongs to a scope: the module (its owner account and name)
// and the account of the request that called it, so one account's requests
// never read what another's left, and two modules never share keys. Each
// scope has a quota in keys and bytes. Entries carry an expiry: a read past
// it answers "not found" (lazy expiry), a put that would go over the quota
// first drops the scope's expired entries, and Sweep (run periodically by
// Run) drops every expired entry so abandoned scopes do not hold space.
package kv

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/store"
)

// Limits bound the store. Zero fields take the defaults of DefaultLimits.
type Limits struct {
	// MaxKeys and MaxBytes are the quota of one scope (module × account);
	// an entry's bytes are its key's plus its value's.
	MaxKeys  int
	MaxBytes int64
	// MaxKeyBytes and MaxValueBytes cap one entry.
	MaxKeyBytes   int
	MaxValueBytes int
	// MaxTTL is the longest an entry lives, and the TTL of a put that asks
	// for none.
	MaxTTL time.Duration
	// SweepEvery is the period of Run's sweep of expired entries.
	SweepEvery time.Duration
	// MaxCacheBytes, when > 0, bounds the keys and values of one module
	// across every account's scope (the response cache's total size). It
	// is enforced by evicting puts (PutEvicting), which evict the least
	// recently used entries of any account of the module to make room.
	MaxCacheBytes int64
}

// DefaultLimits are the limits an operator did not set.
func DefaultLimits() Limits {
	return Limits{
		MaxKeys:       1000,
		MaxBytes:      4 << 20,
		MaxKeyBytes:   512,
		MaxValueBytes: 1 << 20,
		MaxTTL:        30 * 24 * time.Hour,
		SweepEvery:    10 * time.Minute,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxKeys <= 0 {
		l.MaxKeys = d.MaxKeys
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxKeyBytes <= 0 {
		l.MaxKeyBytes = d.MaxKeyBytes
	}
	if l.MaxValueBytes <= 0 {
		l.MaxValueBytes = d.MaxValueBytes
	}
	if l.MaxTTL <= 0 {
		l.MaxTTL = d.MaxTTL
	}
	if l.SweepEvery <= 0 {
		l.SweepEvery = d.SweepEvery
	}
	return l
}

// Errors of Put. ErrQuota is the scope being full (the host function's
// HostQuota); ErrTooLarge an entry over the size caps.
var (
	ErrQuota    = errors.New("kv: the store quota of this module and account is full")
	ErrTooLarge = errors.New("kv: entry too large")
)

// Scope names whose entries a call reads and writes.
type Scope struct {
	// Owner is the account that published the module ("" for the
	// gateway's own), Module its name: two accounts' modules of the same
	// name never share entries.
	Owner, Module string
	// Account is the account of the request the module runs for.
	Account string
}

func (s Scope) bucket() []byte {
	// NUL cannot appear in module names or account ids.
	return []byte(s.Owner + "\x00" + s.Module + "\x00" + s.Account)
}

// Store is the module key-value store. It is safe for concurrent use.
type Store struct {
	db        store.DB
	lim       Limits
	evictions atomic.Int64
	// used is when each entry written by PutEvicting was last written or
	// read (unix nanoseconds), in this process: the LRU order of the
	// total bound (MaxCacheBytes). In memory only, since a read that
	// wrote would serialise the lock-free bbolt reads; an entry not used
	// since the start counts as never used (evicted first, soonest
	// expiry first).
	used sync.Map // useKey -> int64
	// Now is the clock (tests replace it).
	Now func() time.Time
}

var (
	rootBucket = []byte("module_kv")
	dataBucket = []byte("d")
	usageKey   = []byte("u") // 16 bytes: keys, bytes (uint64 each)
)

// Open makes the store's bucket in db.
func Open(db store.DB, lim Limits) (*Store, error) {
	err := db.Update(func(tx store.Tx) error {
		_, err := tx.CreateBucketIfNotExists(rootBucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("kv: %w", err)
	}
	return &Store{db: db, lim: lim.withDefaults(), Now: time.Now}, nil
}

// Limits returns the limits in force (defaults filled).
func (s *Store) Limits() Limits { return s.lim }

// An entry's value is its expiry (unix nanoseconds, big-endian) then the
// module's bytes.
const headerLen = 8

// Get returns the value of key in scope; false when absent or expired.
// The value is a copy.
func (s *Store) Get(sc Scope, key string) ([]byte, bool, error) {
	var out []byte
	now := s.Now().UnixNano()
	err := s.db.View(func(tx store.Tx) error {
		b := tx.Bucket(rootBucket).Bucket(sc.bucket())
		if b == nil {
			return nil
		}
		v := b.Bucket(dataBucket).Get([]byte(key))
		if len(v) < headerLen || int64(binary.BigEndian.Uint64(v)) <= now {
			return nil
		}
		out = append([]byte{}, v[headerLen:]...)
		return nil
	})
	if out != nil && s.lim.MaxCacheBytes > 0 {
		uk := useKey{string(sc.bucket()), key}
		if _, ok := s.used.Load(uk); ok {
			s.used.Store(uk, now)
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("kv: %w", err)
	}
	return out, out != nil, nil
}

// Put stores val under key in scope for ttl (0 or more than MaxTTL:
// MaxTTL). An empty val deletes the key. It fails with ErrTooLarge for an
// entry over the size caps and ErrQuota when the scope would go over its
// quota even after its expired entries are dropped.
func (s *Store) Put(sc Scope, key string, val []byte, ttl time.Duration) error {
	_, err := s.put(sc, key, val, ttl, false)
	return err
}

// PutEvicting is Put for a cache: when the scope would go over its quota
// even after its expired entries are dropped, it evicts the entries that
// expire soonest (for entries of one TTL, the oldest written) until the
// new one fits, and returns how many it evicted. It fails with ErrQuota
// only for an entry larger than the whole quota. A read does not write
// (bbolt reads are lock-free; a write per hit would serialise them), so
// this is not LRU: an entry read often goes as early as one never read.
func (s *Store) PutEvicting(sc Scope, key string, val []byte, ttl time.Duration) (evicted int, err error) {
	return s.put(sc, key, val, ttl, true)
}

// Evictions is how many entries PutEvicting has evicted since start.
func (s *Store) Evictions() int64 { return s.evictions.Load() }

func (s *Store) put(sc Scope, key string, val []byte, ttl time.Duration, evict bool) (int, error) {
	if key == "" || len(key) > s.lim.MaxKeyBytes {
		return 0, fmt.Errorf("%w: a key is 1 to %d bytes", ErrTooLarge, s.lim.MaxKeyBytes)
	}
	if len(val) > s.lim.MaxValueBytes {
		return 0, fmt.Errorf("%w: a value is at most %d bytes", ErrTooLarge, s.lim.MaxValueBytes)
	}
	evicted := 0
	if ttl <= 0 || ttl > s.lim.MaxTTL {
		ttl = s.lim.MaxTTL
	}
	now := s.Now()
	err := s.db.Update(func(tx store.Tx) error {
		scope, err := tx.Bucket(rootBucket).CreateBucketIfNotExists(sc.bucket())
		if err != nil {
			return err
		}
		data, err := scope.CreateBucketIfNotExists(dataBucket)
		if err != nil {
			return err
		}
		keys, size := usage(scope)
		k := []byte(key)
		if old := data.Get(k); old != nil {
			keys--
			size -= int64(len(k) + len(old) - headerLen)
		}
		if len(val) == 0 {
			if err := data.Delete(k); err != nil {
				return err
			}
			return setUsage(scope, keys, size)
		}
		keys++
		size += int64(len(k) + len(val))
		if keys > int64(s.lim.MaxKeys) || size > s.lim.MaxBytes {
			// Lazy expiry pays off here: what expired no longer counts.
			n, freed, err := dropExpired(data, now.UnixNano(), k)
			if err != nil {
				return err
			}
			keys, size = keys-n, size-freed
			if evict && (keys > int64(s.lim.MaxKeys) || size > s.lim.MaxBytes) {
				n, freed, err := evictSoonest(data, k, keys-int64(s.lim.MaxKeys), size-s.lim.MaxBytes)
				if err != nil {
					return err
				}
				keys, size, evicted = keys-n, size-freed, int(n)
			}
			if keys > int64(s.lim.MaxKeys) || size > s.lim.MaxBytes {
				return ErrQuota
			}
		}
		if evict && s.lim.MaxCacheBytes > 0 {
			n, err := s.evictAcross(tx.Bucket(rootBucket), sc, scope, k, &keys, &size)
			if err != nil {
				return err
			}
			evicted += n
		}
		v := make([]byte, headerLen+len(val))
		binary.BigEndian.PutUint64(v, uint64(now.Add(ttl).UnixNano()))
		copy(v[headerLen:], val)
		if err := data.Put(k, v); err != nil {
			return err
		}
		return setUsage(scope, keys, size)
	})
	if errors.Is(err, ErrQuota) {
		return 0, fmt.Errorf("%w (%d keys, %d bytes)", ErrQuota, s.lim.MaxKeys, s.lim.MaxBytes)
	}
	if err != nil {
		return 0, fmt.Errorf("kv: %w", err)
	}
	s.evictions.Add(int64(evicted))
	if evict && s.lim.MaxCacheBytes > 0 {
		s.used.Store(useKey{string(sc.bucket()), key}, now.UnixNano())
	}
	return evicted, nil
}

// useKey names an entry in Store.used.
type useKey struct{ bucket, key string }

// evictAcross keeps the module of sc within MaxCacheBytes across every
// account's scope: when the module's scopes hold more (own's usage being
// *ownKeys, *ownSize with the new entry counted), it evicts the least
// recently used entries of any of them (never keep, the entry being
// written) until they fit, and fixes each scope's usage. It returns how
// many it evicted, or ErrQuota when even all of them are not enough.
func (s *Store) evictAcross(root store.Bucket, sc Scope, own store.Bucket, keep []byte, ownKeys, ownSize *int64) (int, error) {
	type scopeB struct {
		name        string
		b           store.Bucket
		keys, size  int64
		own, change bool
	}
	ownName := string(sc.bucket())
	prefix := []byte(sc.Owner + "\x00" + sc.Module + "\x00") // NUL ends a module name: no other module's scopes
	var scopes []*scopeB
	total := int64(0)
	c := root.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if v != nil {
			continue
		}
		if string(k) == ownName {
			continue // counted below, with the new entry
		}
		b := root.Bucket(k)
		if b == nil {
			continue
		}
		keys, size := usage(b)
		scopes = append(scopes, &scopeB{name: string(k), b: b, keys: keys, size: size})
		total += size
	}
	scopes = append(scopes, &scopeB{name: ownName, b: own, keys: *ownKeys, size: *ownSize, own: true})
	total += *ownSize
	if total <= s.lim.MaxCacheBytes {
		return 0, nil
	}
	type cand struct {
		sb   *scopeB
		k    []byte
		used int64
		exp  uint64
		size int64
	}
	var cs []cand
	for _, sb := range scopes {
		data := sb.b.Bucket(dataBucket)
		if data == nil {
			continue
		}
		cur := data.Cursor()
		for k, v := cur.First(); k != nil; k, v = cur.Next() {
			if len(v) < headerLen || (sb.own && bytes.Equal(k, keep)) {
				continue
			}
			u, _ := s.used.Load(useKey{sb.name, string(k)})
			used, _ := u.(int64)
			cs = append(cs, cand{sb, append([]byte{}, k...), used, binary.BigEndian.Uint64(v), int64(len(k) + len(v) - headerLen)})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if c := cmp.Compare(a.used, b.used); c != 0 {
			return c
		}
		return cmp.Compare(a.exp, b.exp)
	})
	n := 0
	for _, e := range cs {
		if total <= s.lim.MaxCacheBytes {
			break
		}
		if err := e.sb.b.Bucket(dataBucket).Delete(e.k); err != nil {
			return 0, err
		}
		s.used.Delete(useKey{e.sb.name, string(e.k)})
		e.sb.keys--
		e.sb.size -= e.size
		e.sb.change = true
		total -= e.size
		n++
	}
	if total > s.lim.MaxCacheBytes {
		return 0, ErrQuota
	}
	for _, sb := range scopes {
		switch {
		case sb.own:
			*ownKeys, *ownSize = sb.keys, sb.size
		case sb.change:
			if err := setUsage(sb.b, sb.keys, sb.size); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// evictSoonest deletes data's entries that expire soonest (except keep)
// until at least overKeys keys and overBytes bytes are freed, and returns
// how many and their bytes.
func evictSoonest(data store.Bucket, keep []byte, overKeys, overBytes int64) (n, freed int64, err error) {
	type ent struct {
		k    []byte
		exp  uint64
		size int64
	}
	var all []ent
	c := data.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(v) < headerLen || string(k) == string(keep) {
			continue
		}
		all = append(all, ent{append([]byte{}, k...), binary.BigEndian.Uint64(v), int64(len(k) + len(v) - headerLen)})
	}
	slices.SortFunc(all, func(a, b ent) int { return cmp.Compare(a.exp, b.exp) })
	for _, e := range all {
		if n >= overKeys && freed >= overBytes {
			break
		}
		if err := data.Delete(e.k); err != nil {
			return 0, 0, err
		}
		n++
		freed += e.size
	}
	return n, freed, nil
}

// Usage returns the keys and bytes scope holds, expired entries not yet
// dropped included.
func (s *Store) Usage(sc Scope) (keys, bytes int64, err error) {
	err = s.db.View(func(tx store.Tx) error {
		if b := tx.Bucket(rootBucket).Bucket(sc.bucket()); b != nil {
			keys, bytes = usage(b)
		}
		return nil
	})
	return keys, bytes, err
}

// Sweep drops every expired entry and returns how many it dropped.
func (s *Store) Sweep() (int, error) {
	now := s.Now().UnixNano()
	total := 0
	err := s.db.Update(func(tx store.Tx) error {
		root := tx.Bucket(rootBucket)
		var scopes [][]byte
		if err := root.ForEach(func(k, v []byte) error {
			if v == nil { // a nested bucket: an account's scope
				scopes = append(scopes, append([]byte{}, k...))
			}
			return nil
		}); err != nil {
			return err
		}
		for _, name := range scopes {
			scope := root.Bucket(name)
			data := scope.Bucket(dataBucket)
			if data == nil {
				continue
			}
			n, freed, err := dropExpired(data, now, nil)
			if err != nil {
				return err
			}
			keys, size := usage(scope)
			keys, size = keys-n, size-freed
			if keys <= 0 {
				// Nothing left: drop the scope, so accounts that went
				// away leave no buckets behind.
				if err := root.DeleteBucket(name); err != nil {
					return err
				}
			} else if err := setUsage(scope, keys, size); err != nil {
				return err
			}
			total += int(n)
		}
		return nil
	})
	if err != nil {
		return total, fmt.Errorf("kv: sweep: %w", err)
	}
	return total, nil
}

// Run sweeps every SweepEvery until ctx ends. Errors go to logf.
func (s *Store) Run(ctx context.Context, logf func(format string, args ...any)) {
	t := time.NewTicker(s.lim.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Sweep(); err != nil && logf != nil {
				logf("%v", err)
			}
		}
	}
}

// dropExpired deletes data's entries expired at now (except keep) and
// returns how many and their bytes.
func dropExpired(data store.Bucket, now int64, keep []byte) (n, freed int64, err error) {
	var dead [][]byte
	c := data.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(v) >= headerLen && int64(binary.BigEndian.Uint64(v)) <= now && string(k) != string(keep) {
			dead = append(dead, append([]byte{}, k...))
			freed += int64(len(k) + len(v) - headerLen)
		}
	}
	for _, k := range dead {
		if err := data.Delete(k); err != nil {
			return 0, 0, err
		}
	}
	return int64(len(dead)), freed, nil
}

func usage(scope store.Bucket) (keys, size int64) {
	if u := scope.Get(usageKey); len(u) == 16 {
		return int64(binary.BigEndian.Uint64(u)), int64(binary.BigEndian.Uint64(u[8:]))
	}
	return 0, 0
}

func setUsage(scope store.Bucket, keys, size int64) error {
	var u [16]byte
	binary.BigEndian.PutUint64(u[:], uint64(max(keys, 0)))
	binary.BigEndian.PutUint64(u[8:], uint64(max(size, 0)))
	return scope.Put(usageKey, u[:])
}
