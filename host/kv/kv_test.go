package kv_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/kv"
	"github.com/switchyard/switchyard/host/store"
)

// clock is a settable clock: expiry is tested without sleeping.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func open(t *testing.T, lim kv.Limits) (*kv.Store, *clock) {
	t.Helper()
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "kv.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := kv.Open(db, lim)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.Now = c.now
	return s, c
}

var (
	a  = kv.Scope{Module: "web-fetch", Account: "acct-a"}
	b  = kv.Scope{Module: "web-fetch", Account: "acct-b"}
	m2 = kv.Scope{Module: "web", Account: "acct-a"}
	t1 = kv.Scope{Owner: "acct-t", Module: "web-fetch", Account: "acct-a"}
)

func TestScopesAreSeparate(t *testing.T) {
	s, _ := open(t, kv.Limits{})
	if err := s.Put(a, "k", []byte("for a"), 0); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []kv.Scope{b, m2, t1} {
		if v, ok, err := s.Get(sc, "k"); err != nil || ok {
			t.Errorf("scope %+v reads another scope's key: %q %v %v", sc, v, ok, err)
		}
	}
	if v, ok, _ := s.Get(a, "k"); !ok || string(v) != "for a" {
		t.Errorf("get = %q %v", v, ok)
	}
}

func TestTTL(t *testing.T) {
	s, c := open(t, kv.Limits{MaxTTL: time.Hour})
	cases := []struct {
		name    string
		ttl     time.Duration
		advance time.Duration
		alive   bool
	}{
		{"before its ttl", 10 * time.Second, 9 * time.Second, true},
		{"at its ttl", 10 * time.Second, 10 * time.Second, false},
		{"ttl 0 is the maximum", 0, 59 * time.Minute, true},
		{"ttl 0 expires at the maximum", 0, time.Hour, false},
		{"a ttl over the maximum is clamped", 48 * time.Hour, time.Hour + time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Put(a, tc.name, []byte("v"), tc.ttl); err != nil {
				t.Fatal(err)
			}
			c.t = c.t.Add(tc.advance)
			_, ok, err := s.Get(a, tc.name)
			if err != nil || ok != tc.alive {
				t.Errorf("alive = %v (%v), want %v", ok, err, tc.alive)
			}
		})
	}
}

func TestDeleteWithEmptyValue(t *testing.T) {
	s, _ := open(t, kv.Limits{})
	_ = s.Put(a, "k", []byte("v"), 0)
	if err := s.Put(a, "k", nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(a, "k"); ok {
		t.Error("deleted key still reads")
	}
	if keys, size, _ := s.Usage(a); keys != 0 || size != 0 {
		t.Errorf("usage after delete = %d keys %d bytes", keys, size)
	}
}

func TestQuota(t *testing.T) {
	cases := []struct {
		name string
		lim  kv.Limits
		puts int // values of 100 bytes under keys k0, k1, …
		ok   int // how many succeed before ErrQuota
	}{
		{"key count", kv.Limits{MaxKeys: 3}, 5, 3},
		{"bytes", kv.Limits{MaxBytes: 350}, 5, 3}, // 102 bytes each (key + value)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := open(t, tc.lim)
			val := bytes.Repeat([]byte("x"), 100)
			for i := range tc.puts {
				err := s.Put(a, "k"+string(rune('0'+i)), val, 0)
				if i < tc.ok && err != nil {
					t.Fatalf("put %d: %v", i, err)
				}
				if i >= tc.ok && !errors.Is(err, kv.ErrQuota) {
					t.Fatalf("put %d: got %v, want ErrQuota", i, err)
				}
			}
			// Overwriting an existing key within the quota still works,
			// and another account's scope has its own quota.
			if err := s.Put(a, "k0", []byte("y"), 0); err != nil {
				t.Errorf("overwrite at quota: %v", err)
			}
			if err := s.Put(b, "k0", val, 0); err != nil {
				t.Errorf("another account: %v", err)
			}
		})
	}
}

func TestQuotaFreesExpired(t *testing.T) {
	s, c := open(t, kv.Limits{MaxKeys: 2})
	_ = s.Put(a, "short1", []byte("v"), time.Second)
	_ = s.Put(a, "short2", []byte("v"), time.Second)
	if err := s.Put(a, "k", []byte("v"), 0); !errors.Is(err, kv.ErrQuota) {
		t.Fatalf("full store: %v", err)
	}
	c.t = c.t.Add(2 * time.Second)
	if err := s.Put(a, "k", []byte("v"), 0); err != nil {
		t.Fatalf("expired entries should not count: %v", err)
	}
	if keys, _, _ := s.Usage(a); keys != 1 {
		t.Errorf("usage = %d keys, want 1", keys)
	}
}

func TestSizeCaps(t *testing.T) {
	s, _ := open(t, kv.Limits{MaxKeyBytes: 8, MaxValueBytes: 16})
	cases := []struct {
		key string
		val int
		ok  bool
	}{
		{"12345678", 16, true},
		{"123456789", 1, false},
		{"", 1, false},
		{"k", 17, false},
	}
	for _, tc := range cases {
		err := s.Put(a, tc.key, bytes.Repeat([]byte("v"), tc.val), 0)
		if (err == nil) != tc.ok || (!tc.ok && !errors.Is(err, kv.ErrTooLarge)) {
			t.Errorf("put key %q value %d bytes: %v, want ok=%v", tc.key, tc.val, err, tc.ok)
		}
	}
}

func TestSweep(t *testing.T) {
	s, c := open(t, kv.Limits{})
	_ = s.Put(a, "gone", []byte("v"), time.Second)
	_ = s.Put(a, "stays", []byte("v"), time.Hour)
	_ = s.Put(b, "gone", []byte(strings.Repeat("v", 10)), time.Second)
	c.t = c.t.Add(time.Minute)
	n, err := s.Sweep()
	if err != nil || n != 2 {
		t.Fatalf("sweep dropped %d (%v), want 2", n, err)
	}
	if keys, size, _ := s.Usage(a); keys != 1 || size != int64(len("stays")+1) {
		t.Errorf("usage of a = %d keys %d bytes", keys, size)
	}
	if keys, _, _ := s.Usage(b); keys != 0 {
		t.Errorf("usage of b = %d keys", keys)
	}
	if _, ok, _ := s.Get(a, "stays"); !ok {
		t.Error("sweep dropped a live entry")
	}
}

// PutEvicting makes room by evicting the entries that expire soonest; a
// plain Put still refuses when full; other scopes are never touched.
func TestPutEvicting(t *testing.T) {
	s, c := open(t, kv.Limits{MaxKeys: 3, MaxBytes: 1 << 20})
	sc := kv.Scope{Module: "response-cache", Account: "a"}
	other := kv.Scope{Module: "response-cache", Account: "b"}
	if err := s.Put(other, "x", []byte("other account"), time.Minute); err != nil {
		t.Fatal(err)
	}
	for i, k := range []string{"k1", "k2", "k3"} {
		if err := s.Put(sc, k, []byte("v"), time.Duration(10+i)*time.Minute); err != nil {
			t.Fatal(err)
		}
		c.t = c.t.Add(time.Second)
	}
	if err := s.Put(sc, "k4", []byte("v"), time.Hour); !errors.Is(err, kv.ErrQuota) {
		t.Fatalf("Put when full: %v", err)
	}
	n, err := s.PutEvicting(sc, "k4", []byte("v"), time.Hour)
	if err != nil || n != 1 || s.Evictions() != 1 {
		t.Fatalf("evicted %d (%d total), %v", n, s.Evictions(), err)
	}
	for k, want := range map[string]bool{"k1": false, "k2": true, "k3": true, "k4": true} {
		if _, ok, _ := s.Get(sc, k); ok != want {
			t.Errorf("%s present %v, want %v", k, ok, want)
		}
	}
	if _, ok, _ := s.Get(other, "x"); !ok {
		t.Error("another account's entry was evicted")
	}
	if keys, _, _ := s.Usage(sc); keys != 3 {
		t.Errorf("usage %d keys", keys)
	}
	// By bytes: a big entry evicts as many as it needs.
	s2, _ := open(t, kv.Limits{MaxKeys: 100, MaxBytes: 100})
	for _, k := range []string{"a", "b", "c"} {
		if err := s2.Put(sc, k, make([]byte, 29), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s2.PutEvicting(sc, "d", make([]byte, 59), time.Hour); err != nil || n != 2 {
		t.Fatalf("evicted %d, %v", n, err)
	}
	if _, err := s2.PutEvicting(sc, "e", make([]byte, 100), time.Hour); !errors.Is(err, kv.ErrQuota) {
		t.Fatalf("an entry over the whole quota: %v", err)
	}
}

// MaxCacheBytes bounds one module's entries across every account; an
// evicting put past it evicts the least recently used entry of any
// account of the module (a read is a use), and never another module's.
func TestCacheBoundAcrossAccountsIsLRU(t *testing.T) {
	// Each entry below is 1 + 10 bytes; the bound holds three.
	s, c := open(t, kv.Limits{MaxCacheBytes: 33})
	val := []byte("0123456789")
	tick := func() { c.t = c.t.Add(time.Second) }
	other := kv.Scope{Module: "another-cache", Account: "acct-a"}
	for _, p := range []struct {
		sc  kv.Scope
		key string
	}{{a, "1"}, {b, "2"}, {a, "3"}, {other, "9"}} {
		if n, err := s.PutEvicting(p.sc, p.key, val, time.Hour); err != nil || n != 0 {
			t.Fatalf("put %s: evicted %d, %v", p.key, n, err)
		}
		tick()
	}
	if _, ok, _ := s.Get(a, "1"); !ok { // 1 is now the most recently used
		t.Fatal("1 missing")
	}
	tick()
	n, err := s.PutEvicting(b, "4", val, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("put over the total bound: evicted %d, %v", n, err)
	}
	for _, w := range []struct {
		sc   kv.Scope
		key  string
		kept bool
	}{{a, "1", true}, {b, "2", false}, {a, "3", true}, {b, "4", true}, {other, "9", true}} {
		if _, ok, _ := s.Get(w.sc, w.key); ok != w.kept {
			t.Errorf("%s/%s kept %v, want %v", w.sc.Account, w.key, ok, w.kept)
		}
	}
	// The evicted entry's scope's usage was fixed: b holds one entry.
	if keys, bytes, _ := s.Usage(b); keys != 1 || bytes != 11 {
		t.Errorf("b's usage %d keys %d bytes, want 1, 11", keys, bytes)
	}
	// An entry larger than the whole bound is refused.
	if _, err := s.PutEvicting(a, "big", make([]byte, 40), time.Hour); !errors.Is(err, kv.ErrQuota) {
		t.Errorf("an entry over the total bound: %v", err)
	}
}
