package keys

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/host/ratelimit"
	"github.com/switchyard/switchyard/host/store"
)

// flakyDB is a shared store whose reads can be made to fail as a lost
// PostgreSQL connection does.
type flakyDB struct {
	store.DB
	down atomic.Bool
}

func (*flakyDB) Shared() bool { return true }

func (f *flakyDB) View(fn func(store.Tx) error) error {
	if f.down.Load() {
		return fmt.Errorf("%w: connection refused", store.ErrUnavailable)
	}
	return f.DB.View(fn)
}

// Two gateways on one shared store: a key disabled, a limit changed or an
// account setting changed through one is what the other sees next, with
// no wait (the notification arrives with the commit), and a store that
// cannot be read is a 503 for a valid key, never a 401.
func TestSharedStoreCaches(t *testing.T) {
	bdb, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bdb.Close() })
	db := &flakyDB{DB: bdb}
	one, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.Close)
	two, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(two.Close)

	a, err := one.CreateAccount("acme")
	if err != nil {
		t.Fatal(err)
	}
	secret, k, err := one.Create(a.ID, Options{Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	// Both cache it.
	for _, s := range []*Store{one, two} {
		if _, e := s.Authenticate(secret); e != nil {
			t.Fatal(e)
		}
	}
	if _, err := one.SetDisabled(k.Hash, true); err != nil {
		t.Fatal(err)
	}
	if _, e := two.Authenticate(secret); e == nil || e.Status != http.StatusUnauthorized {
		t.Fatalf("the other gateway still authenticates a key disabled through the first: %v", e)
	}
	if _, err := two.SetDisabled(k.Hash, false); err != nil {
		t.Fatal(err)
	}
	if _, e := one.Authenticate(secret); e != nil {
		t.Fatalf("re-enabled through the second, refused by the first: %v", e)
	}
	if two.RateLimits(a.ID) != (ratelimit.Limits{}) {
		t.Fatal("unexpected account rate limits")
	}
	if err := one.SetRateLimits(a.ID, &ratelimit.Limits{RequestsPerMinute: 7}); err != nil {
		t.Fatal(err)
	}
	if got := two.RateLimits(a.ID); got.RequestsPerMinute != 7 {
		t.Fatalf("the other gateway sees account rate limits %+v after they were set to 7 rpm", got)
	}

	// The store goes away: a cached key still works; one not cached is a
	// 503 with Retry-After, not a 401.
	secret2, _, err := one.Create(a.ID, Options{Name: "ci2"})
	if err != nil {
		t.Fatal(err)
	}
	two.flush()
	db.down.Store(true)
	if _, e := one.Authenticate(secret); e != nil {
		t.Fatalf("a cached key was refused while the store is down: %v", e)
	}
	e := two.Authenticate
	if _, err := e(secret2); err == nil || err.Status != http.StatusServiceUnavailable || err.RetryAfter == 0 {
		t.Fatalf("a valid key not in the cache while the store is down: %v; want 503 with Retry-After", err)
	}
	if _, err := e("sy-not-a-key"); err == nil || err.Status != http.StatusServiceUnavailable {
		t.Fatalf("an unknown key while the store is down: %v; want 503 (the store cannot tell)", err)
	}
	db.down.Store(false)
	if _, err := e(secret2); err != nil {
		t.Fatalf("after the store came back: %v", err)
	}
}
