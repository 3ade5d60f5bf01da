package route

import (
	"hash/maphash"
	"sync"

	"github.com/switchyard/switchyard/host/catalog"
)

// sessionShards spreads sessions over independent locks.
const sessionShards = 16

// sessions maps a session id to the endpoint it is pinned to. Each shard is
// an LRU list with an idle TTL: an entry expires TTL after it was last pinned
// or used, and the least recently used entry is evicted when a shard is full.
type sessions struct {
	seed   maphash.Seed
	ttl    int64
	cap    int // per shard
	shards [sessionShards]sessionShard
}

type sessionShard struct {
	mu   sync.Mutex
	m    map[string]*session
	head session // sentinel: head.next is the most recent, head.prev the least
}

type session struct {
	id         string
	ep         *catalog.Endpoint
	last       int64
	prev, next *session
}

func newSessions(ttl int64, limit int) *sessions {
	s := &sessions{seed: maphash.MakeSeed(), ttl: ttl, cap: max(1, (limit+sessionShards-1)/sessionShards)}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.m = make(map[string]*session)
		sh.head.next, sh.head.prev = &sh.head, &sh.head
	}
	return s
}

func (s *sessions) shard(id string) *sessionShard {
	return &s.shards[maphash.String(s.seed, id)%sessionShards]
}

func (sh *sessionShard) unlink(e *session) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (sh *sessionShard) pushFront(e *session) {
	e.prev, e.next = &sh.head, sh.head.next
	sh.head.next.prev = e
	sh.head.next = e
}

// get returns the pinned endpoint of id, or nil when there is none or it
// expired. It does not refresh the entry: see touch.
func (s *sessions) get(id string, now int64) *catalog.Endpoint {
	sh := s.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[id]
	if e == nil {
		return nil
	}
	if now-e.last > s.ttl {
		sh.unlink(e)
		delete(sh.m, id)
		return nil
	}
	return e.ep
}

// touch marks id as used at now if it is still pinned to ep.
func (s *sessions) touch(id string, ep *catalog.Endpoint, now int64) {
	sh := s.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.m[id]; e != nil && e.ep == ep {
		e.last = now
		sh.unlink(e)
		sh.pushFront(e)
	}
}

// put pins id to ep, evicting expired entries and then the least recently
// used one when the shard is full.
func (s *sessions) put(id string, ep *catalog.Endpoint, now int64) {
	sh := s.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.m[id]; e != nil {
		e.ep, e.last = ep, now
		sh.unlink(e)
		sh.pushFront(e)
		return
	}
	for len(sh.m) > 0 {
		old := sh.head.prev
		if len(sh.m) < s.cap && now-old.last <= s.ttl {
			break
		}
		sh.unlink(old)
		delete(sh.m, old.id)
	}
	e := &session{id: id, ep: ep, last: now}
	sh.m[id] = e
	sh.pushFront(e)
}

// len counts live and not yet collected entries (for tests).
func (s *sessions) len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// each calls f for every entry; used to carry sessions to a new router.
func (s *sessions) each(f func(id string, ep *catalog.Endpoint, last int64)) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		// Oldest first so that re-inserting keeps the LRU order.
		for e := sh.head.prev; e != &sh.head; e = e.prev {
			f(e.id, e.ep, e.last)
		}
		sh.mu.Unlock()
	}
}
