// Package vecindex is the vector index modules reach through the
// vector_put and vector_search host functions (docs/abi.md section 5): a
// flat index of normalised float32 vectors, searched by cosine similarity
// (a dot product of unit vectors), held in process and kept in the
// gateway's store, so it survives a restart (Open rebuilds it) and, on
// PostgreSQL, every gateway on the database sees a new entry at once (a
// store notification names it; each process reads it back).
//
// Entries live in partitions. A partition is a kv.Scope (the module, its
// publisher and the account of the request: the host fills it, never the
// module) and a name the module chooses inside it (the response cache's
// "a" for the account, "k:<key id>" for one API key). So, as with kv, one
// account's requests can never read, list or overwrite another's vectors.
//
// An entry carries a tag: a search only considers entries of the same tag
// (the response cache's tag is the digest of everything but the last user
// turn, and the embedding model). Each partition holds at most
// Limits.MaxPerPartition entries and the whole index Limits.MaxTotal;
// past either, a put evicts what expired, then the least recently used
// (a search hit counts as a use). Expired entries are never found.
//
// A tag is scanned exactly (no recall loss, nothing to build) until it
// holds Limits.ANNThreshold entries; from there an HNSW graph, built in
// the background, serves its searches (annindex.go, hnsw.go; no
// well-kept Go HNSW module is among the modules this build may use).
// docs/response-cache.md has the measured crossover and recall.
package vecindex

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/kv"
	"github.com/switchyard/switchyard/host/store"
)

// Limits bound the index. Zero fields take DefaultLimits'.
type Limits struct {
	MaxPerPartition int // entries of one partition
	MaxTotal        int // entries of the whole index, every account's
	MaxDims         int // dimensions of one vector
	MaxTTL          time.Duration
	// ANNThreshold is the number of entries of one tag of one partition
	// from which that tag is searched through an approximate (HNSW) graph
	// instead of exactly (hnsw.go); below it the scan is exact.
	ANNThreshold int
}

// DefaultLimits are the limits an operator did not set.
func DefaultLimits() Limits {
	return Limits{MaxPerPartition: 10000, MaxTotal: 1000000, MaxDims: 8192, MaxTTL: 30 * 24 * time.Hour, ANNThreshold: 10000}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxPerPartition <= 0 {
		l.MaxPerPartition = d.MaxPerPartition
	}
	if l.MaxTotal <= 0 {
		l.MaxTotal = d.MaxTotal
	}
	if l.MaxDims <= 0 {
		l.MaxDims = d.MaxDims
	}
	if l.MaxTTL <= 0 {
		l.MaxTTL = d.MaxTTL
	}
	if l.ANNThreshold <= 0 {
		l.ANNThreshold = d.ANNThreshold
	}
	return l
}

// Errors of Put (a bad request: the host function answers HostFailed).
var (
	ErrBadVector = errors.New("vecindex: a vector is 1 to MaxDims finite float32s, not all zero")
	ErrBadName   = errors.New("vecindex: a partition name, id or tag is at most 256 bytes; a partition name and id are not empty")
)

const maxName = 256

// topic is the store notification of a changed entry; its payload is the
// entry's partition key and id (ref).
const topic = "vector_index"

var rootBucket = []byte("vector_index")

// entry is one vector in memory.
type entry struct {
	id, tag string
	vec     []float32 // unit length
	expires int64     // unix nanoseconds
	created int64     // unix nanoseconds
	used    atomic.Int64
	// gone: removed from its partition (deleted, replaced, evicted). A
	// graph's node of it is then a waypoint, never returned; builders
	// read it with no partition lock held.
	gone atomic.Bool
}

type partition struct {
	mu      sync.RWMutex
	entries []*entry
	byID    map[string]int // index into entries
	// tagN counts the entries of each tag; ann holds the graph of each
	// tag with at least Limits.ANNThreshold entries, building the one
	// being built in the background (annindex.go).
	tagN     map[string]int
	ann      map[string]*hnsw
	building map[string]*build
}

// Index is the vector index. It is safe for concurrent use.
type Index struct {
	db    store.DB
	lim   Limits
	mu    sync.RWMutex // guards parts (the map), not the partitions
	parts map[string]*partition
	total atomic.Int64
	// evictions counts entries evicted to make room (not expiries).
	evictions atomic.Int64
	unsub     func()
	closeOnce sync.Once
	bld       builder // the background graph builds (annindex.go)
	// buildHook, if set, runs in a build between its snapshot and its
	// linking (tests hold a build there to race puts and deletes with it).
	buildHook func(stop <-chan struct{})
	// Now is the clock (tests replace it).
	Now func() time.Time
}

// Open makes the index's bucket in db and loads every live entry into
// memory: the index is rebuilt from the store at start.
func Open(db store.DB, lim Limits) (*Index, error) {
	if err := db.Update(func(tx store.Tx) error {
		_, err := tx.CreateBucketIfNotExists(rootBucket)
		return err
	}); err != nil {
		return nil, fmt.Errorf("vecindex: %w", err)
	}
	ix := &Index{db: db, lim: lim.withDefaults(), parts: map[string]*partition{}, Now: time.Now}
	ix.startBuilder()
	if err := ix.loadAll(); err != nil {
		ix.stopBuilder()
		return nil, err
	}
	// Another gateway on the same store (PostgreSQL) wrote or removed an
	// entry: read it back. This process's own writes arrive too, and
	// reading them again changes nothing.
	ix.unsub = db.Subscribe(topic, ix.follow)
	return ix, nil
}

// Close stops following the store and stops the graph builds (the tags
// being built stay searched exactly). A second Close does nothing.
func (ix *Index) Close() {
	ix.closeOnce.Do(func() {
		if ix.unsub != nil {
			ix.unsub()
		}
		ix.stopBuilder()
	})
}

// Limits returns the limits in force.
func (ix *Index) Limits() Limits { return ix.lim }

// Len is the number of entries in memory, every partition's.
func (ix *Index) Len() int { return int(ix.total.Load()) }

// Evictions is how many entries were evicted to make room since start.
func (ix *Index) Evictions() int64 { return ix.evictions.Load() }

// partKey is the store's name of a partition: the scope's, then the name.
// NUL cannot appear in module names or account ids; the name is the last
// part, so it may hold anything.
func partKey(sc kv.Scope, name string) string {
	return sc.Owner + "\x00" + sc.Module + "\x00" + sc.Account + "\x00" + name
}

// ref is a notification's payload: the partition key's length, ':', the
// partition key, the id (both may hold any byte, so the first is framed by
// its length), in hex: a PostgreSQL notification is text, and partition
// keys hold NULs.
func ref(pk, id string) string {
	return hex.EncodeToString([]byte(fmt.Sprintf("%d:%s%s", len(pk), pk, id)))
}

func parseRef(h string) (pk, id string, ok bool) {
	b, err := hex.DecodeString(h)
	if err != nil {
		return "", "", false
	}
	s := string(b)
	var n int
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		n = n*10 + int(s[i]-'0')
		i++
	}
	if i == 0 || i >= len(s) || s[i] != ':' || len(s)-i-1 < n {
		return "", "", false
	}
	s = s[i+1:]
	return s[:n], s[n:], true
}

// The stored value of an entry: expiry and creation (unix nanoseconds,
// big-endian), the tag's length (uint16) and the tag, then the vector's
// float32s, little-endian (as the host function takes them).
func encode(e *entry) []byte {
	v := make([]byte, 0, 18+len(e.tag)+4*len(e.vec))
	v = binary.BigEndian.AppendUint64(v, uint64(e.expires))
	v = binary.BigEndian.AppendUint64(v, uint64(e.created))
	v = binary.BigEndian.AppendUint16(v, uint16(len(e.tag)))
	v = append(v, e.tag...)
	for _, f := range e.vec {
		v = binary.LittleEndian.AppendUint32(v, math.Float32bits(f))
	}
	return v
}

func decode(id string, v []byte) (*entry, bool) {
	if len(v) < 18 {
		return nil, false
	}
	e := &entry{id: id, expires: int64(binary.BigEndian.Uint64(v)), created: int64(binary.BigEndian.Uint64(v[8:]))}
	n := int(binary.BigEndian.Uint16(v[16:]))
	if len(v) < 18+n || (len(v)-18-n)%4 != 0 {
		return nil, false
	}
	e.tag = string(v[18 : 18+n])
	e.vec = Floats(v[18+n:])
	e.used.Store(e.created)
	return e, true
}

// Floats reads little-endian float32s (the host function's wire form).
func Floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// Bytes is the wire form of v: little-endian float32s.
func Bytes(v []float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, f := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
	}
	return out
}

// normalise returns v scaled to unit length, or false for a vector that
// has none (empty, all zero, not finite).
func normalise(v []float32) ([]float32, bool) {
	var ss float64
	for _, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, false
		}
		ss += float64(f) * float64(f)
	}
	if len(v) == 0 || ss == 0 {
		return nil, false
	}
	inv := float32(1 / math.Sqrt(ss))
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = f * inv
	}
	return out, true
}

// dotGo is the portable dot product (dot.go picks an assembly one where
// the CPU has it).
func dotGo(a, b []float32) float32 {
	b = b[:len(a)] // one bounds check, not one per element
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

func (ix *Index) part(pk string, create bool) *partition {
	ix.mu.RLock()
	p := ix.parts[pk]
	ix.mu.RUnlock()
	if p != nil || !create {
		return p
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if p = ix.parts[pk]; p == nil {
		p = &partition{byID: map[string]int{}}
		ix.parts[pk] = p
	}
	return p
}

// set puts e in p's memory, replacing an entry of its id. p.mu is held.
func (ix *Index) set(p *partition, e *entry) {
	if i, ok := p.byID[e.id]; ok {
		ix.unindex(p, p.entries[i])
		p.entries[i] = e
		ix.index(p, e)
		return
	}
	p.byID[e.id] = len(p.entries)
	p.entries = append(p.entries, e)
	ix.index(p, e)
	ix.total.Add(1)
}

// remove drops id from p's memory. p.mu is held.
func (ix *Index) remove(p *partition, id string) {
	i, ok := p.byID[id]
	if !ok {
		return
	}
	ix.unindex(p, p.entries[i])
	last := len(p.entries) - 1
	p.entries[i] = p.entries[last]
	p.byID[p.entries[i].id] = i
	p.entries[last] = nil
	p.entries = p.entries[:last]
	delete(p.byID, id)
	ix.total.Add(-1)
}

// Match is a search's answer.
type Match struct {
	ID         string
	Similarity float32
	Created    time.Time
}

// Search returns the entry of partition name in sc with tag whose vector
// is most similar to q (cosine), if its similarity is at least min. A
// match counts as a use (LRU).
func (ix *Index) Search(sc kv.Scope, name, tag string, q []float32, min float32) (Match, bool) {
	p := ix.part(partKey(sc, name), false)
	if p == nil {
		return Match{}, false
	}
	q, ok := normalise(q)
	if !ok {
		return Match{}, false
	}
	now := ix.Now().UnixNano()
	p.mu.RLock()
	defer p.mu.RUnlock()
	if g := p.ann[tag]; g != nil && g.dims == len(q) {
		best, sim := g.search(q, now)
		if best == nil || sim < min {
			return Match{}, false
		}
		best.used.Store(now)
		return Match{ID: best.id, Similarity: min32(sim, 1), Created: time.Unix(0, best.created)}, true
	}
	var best *entry
	bestSim := float32(math.Inf(-1))
	for _, e := range p.entries {
		if e.tag != tag || len(e.vec) != len(q) || e.expires <= now {
			continue
		}
		if s := dot(q, e.vec); s > bestSim {
			best, bestSim = e, s
		}
	}
	if best == nil || bestSim < min {
		return Match{}, false
	}
	best.used.Store(now)
	return Match{ID: best.id, Similarity: min32(bestSim, 1), Created: time.Unix(0, best.created)}, true
}

func min32(a, b float32) float32 {
	if a < b {
		return a
	}
	return b
}

// Put stores vector v under id in partition name of sc, with tag, for ttl
// (0 or more than MaxTTL: MaxTTL); an empty v deletes id. It returns how
// many entries it evicted to make room.
func (ix *Index) Put(sc kv.Scope, name, id, tag string, v []float32, ttl time.Duration) (evicted int, err error) {
	if name == "" || id == "" || len(name) > maxName || len(id) > maxName || len(tag) > maxName {
		return 0, ErrBadName
	}
	pk := partKey(sc, name)
	if len(v) == 0 {
		return 0, ix.delete(pk, []string{id})
	}
	if len(v) > ix.lim.MaxDims {
		return 0, ErrBadVector
	}
	u, ok := normalise(v)
	if !ok {
		return 0, ErrBadVector
	}
	if ttl <= 0 || ttl > ix.lim.MaxTTL {
		ttl = ix.lim.MaxTTL
	}
	now := ix.Now()
	e := &entry{id: id, tag: tag, vec: u, expires: now.Add(ttl).UnixNano(), created: now.UnixNano()}
	e.used.Store(e.created)

	p := ix.part(pk, true)
	// What must go to make room: this partition's expired entries, then
	// its least recently used past MaxPerPartition, then the whole
	// index's least recently used past MaxTotal.
	p.mu.RLock()
	_, replaces := p.byID[id]
	victims := ix.victims(p, pk, id, now.UnixNano(), replaces)
	p.mu.RUnlock()
	// The total bound is chosen with no partition's lock held: it reads
	// every partition, one at a time.
	grow := 1
	if replaces {
		grow = 0
	}
	if over := int(ix.total.Load()) - len(victims) + grow - ix.lim.MaxTotal; over > 0 {
		victims = append(victims, ix.globalLRU(pk, id, victims, over)...)
	}
	if len(victims) > 0 {
		if err := ix.deleteRefs(victims); err != nil {
			return 0, err
		}
	}
	err = ix.db.Update(func(tx store.Tx) error {
		b, err := tx.Bucket(rootBucket).CreateBucketIfNotExists([]byte(pk))
		if err != nil {
			return err
		}
		if err := b.Put([]byte(id), encode(e)); err != nil {
			return err
		}
		return tx.Notify(topic, ref(pk, id))
	})
	if err != nil {
		return 0, fmt.Errorf("vecindex: %w", err)
	}
	p.mu.Lock()
	ix.set(p, e)
	p.mu.Unlock()
	for _, r := range victims {
		if !r.expired {
			evicted++
		}
	}
	ix.evictions.Add(int64(evicted))
	return evicted, nil
}

// victim is an entry to delete before a put.
type victim struct {
	pk, id  string
	expired bool
}

// victims are the entries a put into p must remove first for p's own
// bound. p.mu is read-held.
func (ix *Index) victims(p *partition, pk, id string, now int64, replaces bool) []victim {
	var out []victim
	for _, e := range p.entries {
		if e.expires <= now && e.id != id {
			out = append(out, victim{pk, e.id, true})
		}
	}
	grow := 1
	if replaces {
		grow = 0
	}
	over := len(p.entries) - len(out) + grow - ix.lim.MaxPerPartition
	if over > 0 {
		out = append(out, lru(p.entries, pk, id, now, over)...)
	}
	return out
}

// lru are the n least recently used live entries of es other than keep.
func lru(es []*entry, pk, keep string, now int64, n int) []victim {
	var cs []candidate
	for _, e := range es {
		if e.id != keep && e.expires > now {
			cs = append(cs, candidate{pk, e.id, e.used.Load()})
		}
	}
	return leastUsed(cs, n)
}

// globalLRU are the n least recently used entries of the whole index
// (every account's), other than keep of pk and those already chosen. It
// takes each partition's lock in turn, never two at once.
func (ix *Index) globalLRU(pk, keep string, chosen []victim, n int) []victim {
	skip := map[victim]bool{}
	for _, v := range chosen {
		skip[victim{pk: v.pk, id: v.id}] = true
	}
	ix.mu.RLock()
	parts := make(map[string]*partition, len(ix.parts))
	for k, p := range ix.parts {
		parts[k] = p
	}
	ix.mu.RUnlock()
	var cs []candidate
	for k, p := range parts {
		p.mu.RLock()
		for _, e := range p.entries {
			if !(k == pk && e.id == keep) && !skip[victim{pk: k, id: e.id}] {
				cs = append(cs, candidate{k, e.id, e.used.Load()})
			}
		}
		p.mu.RUnlock()
	}
	return leastUsed(cs, n)
}

// candidate is an entry that eviction may choose, with its last use.
type candidate struct {
	pk, id string
	used   int64
}

// leastUsed are the n least recently used of cs, in that order (cs is
// reordered). A partial selection: n is usually 1.
func leastUsed(cs []candidate, n int) []victim {
	out := make([]victim, 0, n)
	for range n {
		bi := -1
		for i, c := range cs {
			if bi < 0 || c.used < cs[bi].used {
				bi = i
			}
		}
		if bi < 0 {
			break
		}
		out = append(out, victim{cs[bi].pk, cs[bi].id, false})
		cs[bi] = cs[len(cs)-1]
		cs = cs[:len(cs)-1]
	}
	return out
}

func (ix *Index) delete(pk string, ids []string) error {
	vs := make([]victim, len(ids))
	for i, id := range ids {
		vs[i] = victim{pk: pk, id: id}
	}
	return ix.deleteRefs(vs)
}

// deleteRefs removes entries from the store and memory, in one
// transaction.
func (ix *Index) deleteRefs(vs []victim) error {
	err := ix.db.Update(func(tx store.Tx) error {
		root := tx.Bucket(rootBucket)
		for _, v := range vs {
			if b := root.Bucket([]byte(v.pk)); b != nil {
				if err := b.Delete([]byte(v.id)); err != nil {
					return err
				}
			}
			if err := tx.Notify(topic, ref(v.pk, v.id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("vecindex: %w", err)
	}
	for _, v := range vs {
		if p := ix.part(v.pk, false); p != nil {
			p.mu.Lock()
			ix.remove(p, v.id)
			p.mu.Unlock()
		}
	}
	return nil
}

// loadAll reads every live entry of the store into memory.
func (ix *Index) loadAll() error {
	now := ix.Now().UnixNano()
	parts := map[string]*partition{}
	n := 0
	err := ix.db.View(func(tx store.Tx) error {
		return tx.Bucket(rootBucket).ForEach(func(k, v []byte) error {
			if v != nil {
				return nil
			}
			b := tx.Bucket(rootBucket).Bucket(k)
			p := &partition{byID: map[string]int{}}
			err := b.ForEach(func(id, val []byte) error {
				if e, ok := decode(string(id), val); ok && e.expires > now {
					p.byID[e.id] = len(p.entries)
					p.entries = append(p.entries, e)
					n++
				}
				return nil
			})
			if len(p.entries) > 0 {
				ix.reindex(p)
				parts[string(k)] = p
			}
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("vecindex: loading: %w", err)
	}
	ix.mu.Lock()
	old := ix.parts
	ix.parts = parts
	ix.total.Store(int64(n))
	ix.mu.Unlock()
	for _, p := range old {
		dropBuilds(p)
	}
	return nil
}

// follow applies a store notification: the entry it names is read back
// (present: set; absent or expired: removed). Resync reloads everything.
func (ix *Index) follow(payload string) {
	if payload == store.Resync {
		_ = ix.loadAll()
		return
	}
	pk, id, ok := parseRef(payload)
	if !ok {
		return
	}
	var e *entry
	_ = ix.db.View(func(tx store.Tx) error {
		if b := tx.Bucket(rootBucket).Bucket([]byte(pk)); b != nil {
			if v := b.Get([]byte(id)); v != nil {
				e, _ = decode(id, v)
			}
		}
		return nil
	})
	p := ix.part(pk, e != nil)
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e == nil {
		ix.remove(p, id)
		return
	}
	if old, ok := p.byID[id]; ok && p.entries[old].created == e.created {
		return // this process's own write: keep its use time
	}
	ix.set(p, e)
}
