// Package keys stores accounts and API keys in the store (host/store). Secrets are never
// stored: a key is found by the SHA-256 of its secret (API keys are 256-bit
// random, so a fast hash is the right tool, not a password hash) and the
// stored digest is compared in constant time.
package keys

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/ratelimit"
	"github.com/switchyard/switchyard/host/store"
)

var (
	bucketKeys     = []byte("keys")     // sha256(secret) → Key JSON
	bucketAccounts = []byte("accounts") // account id → Account JSON
)

// Prefix starts every secret so a leaked key is recognisable by scanners.
const Prefix = "sk-sy-v1-"

// Account owns keys and credits.
type Account struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	// Providers are the account-wide provider preferences every request of
	// the account is routed with (spec 2.4: merged with the request's).
	Providers ProviderSettings `json:"providers"`
	// RateLimits are the account's own limits, shared by all its keys; nil
	// means the configured defaults. A zero field takes the default's.
	RateLimits *ratelimit.Limits `json:"rate_limits,omitempty"`
	// LogContent puts the prompt and completion text of the account's
	// requests in the request log (settings.go); off by default.
	LogContent bool `json:"log_content,omitempty"`
	// StoreContent keeps the prompt and completion of the account's
	// generations for GET /generation/content (host/content,
	// settings.go); nil: the operator's default (content.store).
	StoreContent *bool `json:"store_content,omitempty"`
	// ResponseCache is the account's default of the response cache: the
	// options of the cache plugin's plugins[] item that every request of
	// the account runs with unless its key has its own (settings.go);
	// nil: none (the cache runs when a request or the operator asks).
	ResponseCache json.RawMessage `json:"response_cache,omitempty"`
}

// ProviderSettings are account-wide allowed and ignored provider slugs.
type ProviderSettings struct {
	Only   []string `json:"only,omitempty"`
	Ignore []string `json:"ignore,omitempty"`
}

// Limit reset periods. Usage counted against a limit rolls over at UTC
// boundaries: midnight, Monday midnight, the first of the month.
const (
	ResetNone    = ""
	ResetDaily   = "daily"
	ResetWeekly  = "weekly"
	ResetMonthly = "monthly"
)

// ValidReset reports whether s is one of the reset periods.
func ValidReset(s string) bool {
	switch s {
	case ResetNone, ResetDaily, ResetWeekly, ResetMonthly:
		return true
	}
	return false
}

// Key is an API key record; the secret itself is not in it. Records are
// shared through the cache: never modify one, Update stores a new copy.
// The usage counters live in the billing ledger, next to the balances they
// are settled with.
type Key struct {
	Hash       string    `json:"hash"`  // hex sha256 of the secret
	Label      string    `json:"label"` // first characters of the secret, for display
	Name       string    `json:"name"`
	AccountID  string    `json:"account_id"`
	Management bool      `json:"management"`
	Disabled   bool      `json:"disabled"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated,omitzero"`
	Expires    time.Time `json:"expires,omitzero"`
	// Limit is the most the key may spend per LimitReset period (over its
	// lifetime when LimitReset is ResetNone), in nano-dollars; nil means no
	// limit beyond the account's credits.
	Limit      *int64 `json:"limit,omitempty"`
	LimitReset string `json:"limit_reset,omitempty"`
	// Operator marks a management key of the operator: it may add credits,
	// manage gateway-wide modules and act on other accounts (docs/api.md,
	// "Roles"). Management keys of the operator account are operator keys
	// without it.
	Operator bool `json:"operator,omitempty"`
	// RateLimits bound this key alone, on top of its account's limits
	// (docs/ratelimit.md); zero fields are unlimited.
	RateLimits ratelimit.Limits `json:"rate_limits,omitzero"`
	// ResponseCache is this key's default of the response cache, over its
	// account's (settings.go); nil: the account's.
	ResponseCache json.RawMessage `json:"response_cache,omitempty"`
}

// Options are the settable fields of a new key.
type Options struct {
	Name       string
	Secret     string // empty: a fresh random secret
	Management bool
	Operator   bool   // implies Management
	Limit      *int64 // nano-dollars; nil: no limit
	LimitReset string
	Expires    time.Time // zero: never
	RateLimits ratelimit.Limits
}

// Store is safe for concurrent use. Authenticate is on every request's path,
// so records are cached in memory; every write replaces or drops the cached
// record after it commits.
type Store struct {
	db    store.DB
	mu    sync.RWMutex
	cache map[string]*Key
	// epoch counts writes. A cache miss reads bbolt without the lock and
	// only caches what it read if no write happened meanwhile, so a record
	// read just before an update can never be cached after it.
	epoch uint64
	// accounts caches account records for the settings read on every
	// request: provider settings, rate limits, content logging and
	// storage, the response cache's default (settings.go). A write through
	// updateAccount, here or on another instance, drops the record (the
	// topicAccounts notification), and so does each setter once its write
	// committed. Only those settings are read from it: what changes
	// without that notification must not be.
	accounts sync.Map // account id → *Account

	operator atomic.Value // string: the operator account, found on first use

	stop      chan struct{}
	unsub     []func()
	closeOnce sync.Once
}

// Errors the management operations return; compare with errors.Is.
var (
	ErrNotFound       = errors.New("keys: no such key")
	ErrNoAccount      = errors.New("keys: no such account")
	ErrInvalidOptions = errors.New("keys: invalid key options")
)

// Open creates the buckets if needed.
func Open(db store.DB) (*Store, error) {
	err := db.Update(func(tx store.Tx) error {
		for _, b := range [][]byte{bucketKeys, bucketAccounts} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, cache: map[string]*Key{}, stop: make(chan struct{})}
	// Writes made by other gateways on a shared store reach this one's
	// caches through notifications, and a periodic flush bounds how stale
	// a missed one can leave them (docs/cluster.md).
	s.unsub = append(s.unsub,
		db.Subscribe(TopicKeys, func(h string) {
			if h == store.Resync {
				s.flush()
				return
			}
			s.invalidate(h, nil)
		}),
		db.Subscribe(topicAccounts, func(id string) {
			if id == store.Resync {
				s.flush()
				return
			}
			s.accounts.Delete(id)
		}))
	if db.Shared() {
		go s.recheck(RecheckInterval)
	}
	return s, nil
}

// TopicKeys is the store notification topic of key writes (payload: the
// key's hash); other packages that keep per-key state (billing's leases)
// follow it too.
const TopicKeys = "keys"

// topicAccounts is the topic of account writes (payload: the account id).
const topicAccounts = "accounts"

// RecheckInterval is how often a gateway on a shared store drops its
// cached keys and account settings, in case a notification was missed: a
// change made elsewhere is seen within it at worst (within milliseconds
// normally).
var RecheckInterval = 5 * time.Second

func (s *Store) recheck(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.flush()
		}
	}
}

// flush drops every cached record.
func (s *Store) flush() {
	s.mu.Lock()
	s.epoch++
	clear(s.cache)
	s.mu.Unlock()
	s.accounts.Clear()
}

// Close stops following other gateways' writes. Safe to call more than once.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		close(s.stop)
		for _, u := range s.unsub {
			u()
		}
	})
}

func digest(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// HashOf returns the hash under which the key with this secret is stored.
func HashOf(secret string) string {
	d := digest(secret)
	return hex.EncodeToString(d[:])
}

// Authenticate resolves a bearer secret to its key. Failures are 401 with a
// message that never echoes the secret.
func (s *Store) Authenticate(secret string) (*Key, *apierr.Error) {
	if secret == "" {
		return nil, apierr.New(http.StatusUnauthorized, "Missing Authentication header")
	}
	d := digest(secret)
	// Hex on the stack: a cached key is found without the hash becoming
	// a string (the map lookup of string(h[:]) does not allocate).
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], d[:])
	k, err := s.cachedBytes(h[:])
	if err != nil && !errors.Is(err, ErrNotFound) {
		// The store could not be read: the key may well be valid, so this
		// is not a 401 (docs/cluster.md).
		e := apierr.New(http.StatusServiceUnavailable, "The key store is not reachable; the request was not started. Retry shortly.")
		e.RetryAfter = 2 * time.Second
		e.Cause = err
		return nil, e
	}
	if k == nil {
		return nil, apierr.New(http.StatusUnauthorized, "Invalid API key: no key matches the supplied credential")
	}
	if !sameHash(h[:], k.Hash) {
		return nil, apierr.New(http.StatusUnauthorized, "Invalid API key: no key matches the supplied credential")
	}
	if k.Disabled {
		return nil, apierr.New(http.StatusUnauthorized, "API key %q is disabled", k.Name)
	}
	if !k.Expires.IsZero() && time.Now().After(k.Expires) {
		return nil, apierr.New(http.StatusUnauthorized, "API key %q expired at %s", k.Name, k.Expires.UTC().Format(time.RFC3339))
	}
	return k, nil
}

// sameHash reports, in constant time, whether the stored hash (lower-case
// hex, as HashOf writes it) is h.
func sameHash(h []byte, stored string) bool {
	if len(stored) != len(h) {
		return false
	}
	var v byte
	for i := range h {
		v |= h[i] ^ stored[i]
	}
	return v == 0
}

// cached returns the record for hash from the cache, loading it on a miss;
// nil and ErrNotFound when there is none, nil and another error when the
// store could not be read.
func (s *Store) cached(h string) (*Key, error) {
	s.mu.RLock()
	k, ok := s.cache[h]
	epoch := s.epoch
	s.mu.RUnlock()
	if ok {
		return k, nil
	}
	k, err := s.load(h)
	if k != nil {
		s.mu.Lock()
		if s.epoch == epoch {
			s.cache[h] = k
		}
		s.mu.Unlock()
	}
	return k, err
}

// cachedBytes is cached for a hash in bytes: a hit is found without the
// hash becoming a string (the lookup of string(hb) does not allocate); a
// miss goes to cached.
func (s *Store) cachedBytes(hb []byte) (*Key, error) {
	s.mu.RLock()
	k, ok := s.cache[string(hb)]
	s.mu.RUnlock()
	if ok {
		return k, nil
	}
	return s.cached(string(hb))
}

func (s *Store) load(h string) (*Key, error) {
	var k *Key
	err := s.db.View(func(tx store.Tx) error {
		v := tx.Bucket(bucketKeys).Get([]byte(h))
		if v == nil {
			return ErrNotFound
		}
		var rec Key
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		k = &rec
		return nil
	})
	return k, err
}

// invalidate records a committed write of hash: the cache holds rec (nil
// drops the entry) and concurrent misses will not cache what they read.
func (s *Store) invalidate(h string, rec *Key) {
	s.mu.Lock()
	s.epoch++
	if rec != nil {
		s.cache[h] = rec
	} else {
		delete(s.cache, h)
	}
	s.mu.Unlock()
}

// NewSecret returns a fresh random secret.
func NewSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // the OS random source failing is not recoverable
	}
	return Prefix + hex.EncodeToString(b[:])
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CreateAccount stores a new account.
func (s *Store) CreateAccount(name string) (*Account, error) {
	a := &Account{ID: "acct_" + newID(), Name: name, Created: time.Now().UTC()}
	v, _ := json.Marshal(a)
	return a, s.db.Update(func(tx store.Tx) error {
		return tx.Bucket(bucketAccounts).Put([]byte(a.ID), v)
	})
}

// Account returns the account with id, or ErrNoAccount.
func (s *Store) Account(id string) (*Account, error) {
	var a *Account
	err := s.db.View(func(tx store.Tx) error {
		v := tx.Bucket(bucketAccounts).Get([]byte(id))
		if v == nil {
			return ErrNoAccount
		}
		a = new(Account)
		return json.Unmarshal(v, a)
	})
	return a, err
}

// Accounts lists every account ordered by id.
func (s *Store) Accounts() ([]*Account, error) {
	var out []*Account
	err := s.db.View(func(tx store.Tx) error {
		return tx.Bucket(bucketAccounts).ForEach(func(_, v []byte) error {
			a := new(Account)
			if err := json.Unmarshal(v, a); err != nil {
				return err
			}
			out = append(out, a)
			return nil
		})
	})
	return out, err
}

// CreateKey stores a key for the account with the given secret (a fresh one
// when secret is empty) and returns the secret, the only time it is visible.
func (s *Store) CreateKey(accountID, name, secret string, management bool) (string, *Key, error) {
	return s.Create(accountID, Options{Name: name, Secret: secret, Management: management})
}

// Create stores a key with the given options for the account and returns
// its secret, the only time it is visible.
func (s *Store) Create(accountID string, o Options) (string, *Key, error) {
	secret := o.Secret
	if secret == "" {
		secret = NewSecret()
	}
	if len(secret) < 20 {
		return "", nil, errors.New("keys: a secret must be at least 20 characters")
	}
	if err := validate(o.Name, o.Limit, o.LimitReset); err != nil {
		return "", nil, err
	}
	if err := ValidRateLimits(o.RateLimits); err != nil {
		return "", nil, err
	}
	d := digest(secret)
	k := &Key{
		Hash: hex.EncodeToString(d[:]), Label: label(secret), Name: o.Name, AccountID: accountID,
		Management: o.Management || o.Operator, Operator: o.Operator, Created: time.Now().UTC(),
		Limit: o.Limit, LimitReset: o.LimitReset, RateLimits: o.RateLimits,
	}
	if !o.Expires.IsZero() {
		k.Expires = o.Expires.UTC()
	}
	v, _ := json.Marshal(k)
	err := s.db.Update(func(tx store.Tx) error {
		if tx.Bucket(bucketAccounts).Get([]byte(accountID)) == nil {
			return fmt.Errorf("%w: %s", ErrNoAccount, accountID)
		}
		if tx.Bucket(bucketKeys).Get([]byte(k.Hash)) != nil {
			return errors.New("keys: a key with this secret already exists")
		}
		if err := tx.Notify(TopicKeys, k.Hash); err != nil {
			return err
		}
		return tx.Bucket(bucketKeys).Put([]byte(k.Hash), v)
	})
	if err != nil {
		return "", nil, err
	}
	s.invalidate(k.Hash, k)
	return secret, k, nil
}

func validate(name string, limit *int64, reset string) error {
	if strings.TrimSpace(name) == "" || len(name) > 256 {
		return fmt.Errorf("%w: name must be 1 to 256 characters", ErrInvalidOptions)
	}
	if limit != nil && *limit < 0 {
		return fmt.Errorf("%w: limit must not be negative", ErrInvalidOptions)
	}
	if !ValidReset(reset) {
		return fmt.Errorf("%w: limit_reset must be daily, weekly, monthly or empty", ErrInvalidOptions)
	}
	return nil
}

// Get returns the key stored under hash, or ErrNotFound.
func (s *Store) Get(hash string) (*Key, error) {
	return s.cached(hash)
}

// List returns the keys of an account (every key when accountID is empty)
// ordered by creation time; disabled keys only with includeDisabled.
func (s *Store) List(accountID string, includeDisabled bool) ([]*Key, error) {
	var out []*Key
	err := s.db.View(func(tx store.Tx) error {
		return tx.Bucket(bucketKeys).ForEach(func(_, v []byte) error {
			k := new(Key)
			if err := json.Unmarshal(v, k); err != nil {
				return err
			}
			if (accountID == "" || k.AccountID == accountID) && (includeDisabled || !k.Disabled) {
				out = append(out, k)
			}
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].Hash < out[j].Hash
	})
	return out, err
}

// Update applies fn to a copy of the key stored under hash and stores the
// result; the cache sees the new record as soon as it is committed. fn may
// change Name, Disabled, Limit, LimitReset, Expires and RateLimits; the other fields are
// kept. An error from fn aborts the update and is returned as is.
func (s *Store) Update(hash string, fn func(*Key) error) (*Key, error) {
	var out *Key
	err := s.db.Update(func(tx store.Tx) error {
		b := tx.Bucket(bucketKeys)
		v := b.Get([]byte(hash))
		if v == nil {
			return ErrNotFound
		}
		var old, k Key
		if err := json.Unmarshal(v, &old); err != nil {
			return err
		}
		k = old
		if old.Limit != nil {
			l := *old.Limit
			k.Limit = &l
		}
		if err := fn(&k); err != nil {
			return err
		}
		if err := validate(k.Name, k.Limit, k.LimitReset); err != nil {
			return err
		}
		if err := ValidRateLimits(k.RateLimits); err != nil {
			return err
		}
		k.Hash, k.Label, k.AccountID, k.Management, k.Created = old.Hash, old.Label, old.AccountID, old.Management, old.Created
		k.Updated = time.Now().UTC()
		if !k.Expires.IsZero() {
			k.Expires = k.Expires.UTC()
		}
		nv, err := json.Marshal(&k)
		if err != nil {
			return err
		}
		out = &k
		if err := tx.Notify(TopicKeys, hash); err != nil {
			return err
		}
		return b.Put([]byte(hash), nv)
	})
	if err != nil {
		return nil, err
	}
	s.invalidate(hash, out)
	return out, nil
}

// SetDisabled disables or re-enables a key.
func (s *Store) SetDisabled(hash string, disabled bool) (*Key, error) {
	return s.Update(hash, func(k *Key) error { k.Disabled = disabled; return nil })
}

// Delete removes the key stored under hash, or returns ErrNotFound. The key
// stops authenticating as soon as Delete returns.
func (s *Store) Delete(hash string) error {
	err := s.db.Update(func(tx store.Tx) error {
		b := tx.Bucket(bucketKeys)
		if b.Get([]byte(hash)) == nil {
			return ErrNotFound
		}
		if err := tx.Notify(TopicKeys, hash); err != nil {
			return err
		}
		return b.Delete([]byte(hash))
	})
	if err == nil {
		s.invalidate(hash, nil)
	}
	return err
}

func label(secret string) string {
	// The fixed prefix and the last four characters: enough to tell keys
	// apart in a list, and nothing of the random part a reader could use
	// to narrow the secret down from its start.
	if len(secret) <= len(Prefix)+8 {
		return Prefix + "..."
	}
	return Prefix + "..." + secret[len(secret)-4:]
}

// Count returns the number of stored keys.
func (s *Store) Count() int {
	n := 0
	_ = s.db.View(func(tx store.Tx) error { n = tx.Bucket(bucketKeys).KeyN(); return nil })
	return n
}

// Bootstrap makes sure a management key exists. With secret set (from the
// environment) that key is ensured; otherwise a key is generated only when
// the store has none, and its secret is returned so the caller can print it
// once. created reports whether anything was written. A stored key with
// that secret that an operator disabled (or let expire) is left as it is.
//
// The check and the creation are one transaction: gateways of a cluster
// starting together on an empty shared store create one account and one
// key between them, and only the one that created it is told so (and funds
// it).
func (s *Store) Bootstrap(secret string) (string, bool, error) {
	generated := secret == ""
	if generated {
		secret = NewSecret()
	} else if !strings.HasPrefix(secret, "sk-") || len(secret) < 20 {
		return "", false, errors.New("keys: bootstrap key must start with sk- and be at least 20 characters")
	}
	now := time.Now().UTC()
	a := &Account{ID: "acct_" + newID(), Name: "default", Created: now}
	d := digest(secret)
	k := &Key{Hash: hex.EncodeToString(d[:]), Label: label(secret), Name: "bootstrap", AccountID: a.ID, Management: true, Created: now}
	av, _ := json.Marshal(a)
	kv, _ := json.Marshal(k)
	created := false
	err := s.db.Update(func(tx store.Tx) error {
		created = false
		kb := tx.Bucket(bucketKeys)
		if (generated && kb.KeyN() > 0) || (!generated && kb.Get([]byte(k.Hash)) != nil) {
			return nil
		}
		if err := tx.Bucket(bucketAccounts).Put([]byte(a.ID), av); err != nil {
			return err
		}
		if err := tx.Notify(TopicKeys, k.Hash); err != nil {
			return err
		}
		created = true
		return kb.Put([]byte(k.Hash), kv)
	})
	switch {
	case err != nil:
		return "", false, err
	case created:
		s.invalidate(k.Hash, k)
		return secret, true, nil
	case generated:
		return "", false, nil
	}
	return secret, false, nil
}

// IsOperator reports whether k acts as the gateway's operator: a
// management key of the operator account (the one Bootstrap created), or a
// management key marked Operator. Tenants — every other management key —
// act only within their own account and cannot mint credits.
func (s *Store) IsOperator(k *Key) bool {
	if k == nil || !k.Management {
		return false
	}
	if k.Operator {
		return true
	}
	op := s.OperatorAccount()
	return op != "" && k.AccountID == op
}

// OperatorAccount is the operator's account (the bootstrap account), ""
// while there is none.
func (s *Store) OperatorAccount() string {
	op, _ := s.operator.Load().(string)
	if op == "" {
		// Found once there is one; the oldest account never changes.
		op = s.BootstrapAccount()
		s.operator.Store(op)
	}
	return op
}

// BootstrapAccount is the id of the account Bootstrap created (the
// operator's), or "" when there is none. It is the oldest account.
func (s *Store) BootstrapAccount() string {
	accts, err := s.Accounts()
	if err != nil || len(accts) == 0 {
		return ""
	}
	oldest := accts[0]
	for _, a := range accts[1:] {
		if a.Created.Before(oldest.Created) {
			oldest = a
		}
	}
	return oldest.ID
}

// Providers returns the account-wide provider settings (empty when none).
func (s *Store) Providers(accountID string) ProviderSettings {
	if a := s.settings(accountID); a != nil {
		return a.Providers
	}
	return ProviderSettings{}
}

// SetProviders replaces the account-wide provider settings.
func (s *Store) SetProviders(accountID string, p ProviderSettings) error {
	return s.setSetting(accountID, func(a *Account) { a.Providers = p })
}

// updateAccount applies fn to the stored account and stores it.
func (s *Store) updateAccount(accountID string, fn func(*Account)) error {
	return s.db.Update(func(tx store.Tx) error {
		b := tx.Bucket(bucketAccounts)
		v := b.Get([]byte(accountID))
		if v == nil {
			return ErrNoAccount
		}
		var a Account
		if err := json.Unmarshal(v, &a); err != nil {
			return err
		}
		fn(&a)
		nv, err := json.Marshal(a)
		if err != nil {
			return err
		}
		if err := tx.Notify(topicAccounts, accountID); err != nil {
			return err
		}
		return b.Put([]byte(accountID), nv)
	})
}

// ValidRateLimits refuses negative limits (0 is unlimited); the error is
// ErrInvalidOptions.
func ValidRateLimits(l ratelimit.Limits) error {
	if l.RequestsPerMinute < 0 || l.TokensPerMinute < 0 || l.Concurrent < 0 {
		return fmt.Errorf("%w: rate_limits: requests_per_minute, tokens_per_minute and concurrent must not be negative (0 = unlimited)", ErrInvalidOptions)
	}
	return nil
}

// RateLimits returns the account's own rate limits (zero fields: the
// configured defaults apply). It is on every request's path, so it is
// cached.
func (s *Store) RateLimits(accountID string) ratelimit.Limits {
	if a := s.settings(accountID); a != nil && a.RateLimits != nil {
		return *a.RateLimits
	}
	return ratelimit.Limits{}
}

// SetRateLimits replaces the account's own rate limits; nil returns it to
// the configured defaults.
func (s *Store) SetRateLimits(accountID string, l *ratelimit.Limits) error {
	if l != nil {
		if err := ValidRateLimits(*l); err != nil {
			return err
		}
	}
	return s.setSetting(accountID, func(a *Account) { a.RateLimits = l })
}
