package keys

import (
	"errors"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/ratelimit"
	"github.com/switchyard/switchyard/host/store"
)

func openStore(t *testing.T) *Store {
	t.Helper()
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCreateGetListUpdateDelete(t *testing.T) {
	s := openStore(t)
	a, err := s.CreateAccount("acme")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.CreateAccount("other")
	limit := int64(5_000_000_000)
	secret, k, err := s.Create(a.ID, Options{Name: "ci", Limit: &limit, LimitReset: ResetDaily, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if HashOf(secret) != k.Hash || *k.Limit != limit || k.LimitReset != ResetDaily {
		t.Fatalf("key %+v", k)
	}
	if _, _, err := s.CreateKey(b.ID, "b1", "", false); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(k.Hash); err != nil || got.Name != "ci" {
		t.Fatalf("Get: %+v %v", got, err)
	}
	if _, err := s.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get unknown: %v", err)
	}
	if ks, _ := s.List(a.ID, false); len(ks) != 1 || ks[0].Hash != k.Hash {
		t.Fatalf("List: %v", ks)
	}
	if ks, _ := s.List("", false); len(ks) != 2 {
		t.Fatalf("List all: %d", len(ks))
	}

	// Update is seen by Authenticate at once (the cache is replaced).
	if _, aerr := s.Authenticate(secret); aerr != nil {
		t.Fatal(aerr)
	}
	if _, err := s.SetDisabled(k.Hash, true); err != nil {
		t.Fatal(err)
	}
	if _, aerr := s.Authenticate(secret); aerr == nil || aerr.Status != http.StatusUnauthorized {
		t.Fatalf("disabled key authenticated: %v", aerr)
	}
	if ks, _ := s.List(a.ID, false); len(ks) != 0 {
		t.Fatal("disabled key listed without includeDisabled")
	}
	k2, err := s.Update(k.Hash, func(k *Key) error {
		k.Disabled, k.Name, k.Limit, k.LimitReset = false, "renamed", nil, ResetNone
		k.AccountID, k.Management = b.ID, true // not updatable: ignored
		return nil
	})
	if err != nil || k2.Name != "renamed" || k2.Limit != nil || k2.AccountID != a.ID || k2.Management || k2.Updated.IsZero() {
		t.Fatalf("Update: %+v %v", k2, err)
	}
	if got, aerr := s.Authenticate(secret); aerr != nil || got.Name != "renamed" {
		t.Fatalf("after update: %+v %v", got, aerr)
	}
	if _, err := s.Update(k.Hash, func(k *Key) error { k.LimitReset = "yearly"; return nil }); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("invalid reset accepted: %v", err)
	}
	if _, err := s.Update("nope", func(*Key) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update unknown: %v", err)
	}

	if err := s.Delete(k.Hash); err != nil {
		t.Fatal(err)
	}
	if _, aerr := s.Authenticate(secret); aerr == nil {
		t.Fatal("deleted key authenticated")
	}
	if err := s.Delete(k.Hash); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestCreateValidation(t *testing.T) {
	s := openStore(t)
	a, _ := s.CreateAccount("acme")
	neg := int64(-1)
	for _, tc := range []struct {
		name    string
		account string
		o       Options
	}{
		{"empty name", a.ID, Options{Name: " "}},
		{"negative limit", a.ID, Options{Name: "x", Limit: &neg}},
		{"bad reset", a.ID, Options{Name: "x", LimitReset: "hourly"}},
		{"short secret", a.ID, Options{Name: "x", Secret: "sk-short"}},
		{"no account", "acct_nope", Options{Name: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := s.Create(tc.account, tc.o); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestExpiredKey(t *testing.T) {
	s := openStore(t)
	a, _ := s.CreateAccount("acme")
	secret, k, err := s.Create(a.ID, Options{Name: "x", Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(k.Hash, func(k *Key) error { k.Expires = time.Now().Add(-time.Second); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, aerr := s.Authenticate(secret); aerr == nil || aerr.Status != 401 {
		t.Fatalf("expired key: %v", aerr)
	}
}

// A cache miss racing an update must never leave the old record cached.
func TestCacheMissRacingUpdate(t *testing.T) {
	s := openStore(t)
	a, _ := s.CreateAccount("acme")
	secret, k, _ := s.Create(a.ID, Options{Name: "x"})
	for i := range 200 {
		s.mu.Lock()
		delete(s.cache, k.Hash) // force misses
		s.mu.Unlock()
		disabled := i%2 == 0
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _, _ = s.Authenticate(secret) }()
		go func() { defer wg.Done(); _, _ = s.SetDisabled(k.Hash, disabled) }()
		wg.Wait()
		_, aerr := s.Authenticate(secret)
		if (aerr != nil) != disabled {
			t.Fatalf("round %d: disabled=%v but Authenticate returned %v", i, disabled, aerr)
		}
	}
}

func TestBootstrap(t *testing.T) {
	s := openStore(t)
	secret, created, err := s.Bootstrap("")
	if err != nil || !created || secret == "" {
		t.Fatalf("%q %v %v", secret, created, err)
	}
	k, aerr := s.Authenticate(secret)
	if aerr != nil || !k.Management {
		t.Fatalf("%+v %v", k, aerr)
	}
	if _, created, _ := s.Bootstrap(""); created {
		t.Fatal("second bootstrap created a key")
	}
	env := "sk-sy-v1-from-the-environment-0123456789"
	if got, created, err := s.Bootstrap(env); err != nil || !created || got != env {
		t.Fatalf("%q %v %v", got, created, err)
	}
	if _, created, err := s.Bootstrap(env); err != nil || created {
		t.Fatalf("existing env key: %v %v", created, err)
	}
	// An operator disabled it: bootstrap neither fails nor re-enables it.
	if _, err := s.SetDisabled(HashOf(env), true); err != nil {
		t.Fatal(err)
	}
	if _, created, err := s.Bootstrap(env); err != nil || created {
		t.Fatalf("disabled env key: %v %v", created, err)
	}
	if _, aerr := s.Authenticate(env); aerr == nil {
		t.Fatal("bootstrap re-enabled a disabled key")
	}
}

func TestRateLimitsStored(t *testing.T) {
	s := openStore(t)
	a, _ := s.CreateAccount("acme")
	lim := ratelimit.Limits{RequestsPerMinute: 10, Concurrent: 2}
	secret, k, err := s.Create(a.ID, Options{Name: "ci", RateLimits: lim})
	if err != nil || k.RateLimits != lim {
		t.Fatalf("create: %+v %v", k, err)
	}
	if _, _, err := s.Create(a.ID, Options{Name: "neg", RateLimits: ratelimit.Limits{TokensPerMinute: -1}}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("negative limits accepted: %v", err)
	}
	// An update is what the next request authenticates with.
	want := ratelimit.Limits{TokensPerMinute: 500}
	if _, err := s.Update(k.Hash, func(k *Key) error { k.RateLimits = want; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Authenticate(secret); got.RateLimits != want {
		t.Fatalf("after update %+v", got.RateLimits)
	}
	if _, err := s.Update(k.Hash, func(k *Key) error { k.RateLimits.Concurrent = -3; return nil }); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("negative update accepted: %v", err)
	}

	// Account limits: none, set (cached and stored), cleared.
	if got := s.RateLimits(a.ID); got != (ratelimit.Limits{}) {
		t.Fatalf("fresh account %+v", got)
	}
	al := ratelimit.Limits{RequestsPerMinute: 100, TokensPerMinute: 1000, Concurrent: 5}
	if err := s.SetRateLimits(a.ID, &al); err != nil {
		t.Fatal(err)
	}
	if got := s.RateLimits(a.ID); got != al {
		t.Fatalf("account limits %+v", got)
	}
	if acct, _ := s.Account(a.ID); acct.RateLimits == nil || *acct.RateLimits != al {
		t.Fatalf("stored account %+v", acct)
	}
	if err := s.SetRateLimits("acct_nope", &al); !errors.Is(err, ErrNoAccount) {
		t.Fatalf("unknown account: %v", err)
	}
	if err := s.SetRateLimits(a.ID, &ratelimit.Limits{Concurrent: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("negative account limits: %v", err)
	}
	if err := s.SetRateLimits(a.ID, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.RateLimits(a.ID); got != (ratelimit.Limits{}) {
		t.Fatalf("cleared account limits %+v", got)
	}
}

func TestSameHash(t *testing.T) {
	h := []byte(HashOf("sk-test"))
	for _, tc := range []struct {
		stored string
		want   bool
	}{
		{HashOf("sk-test"), true},
		{HashOf("sk-other"), false},
		{HashOf("sk-test")[:63], false},
		{HashOf("sk-test") + "0", false},
		{"", false},
	} {
		if got := sameHash(h, tc.stored); got != tc.want {
			t.Errorf("sameHash(%q) = %v, want %v", tc.stored, got, tc.want)
		}
	}
}
