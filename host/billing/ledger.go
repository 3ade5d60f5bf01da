// Package billing is the credits ledger: account balances, key usage
// against limits, reservations (holds) taken before an upstream call and
// settled after it, and the generation record every request leaves.
//
// Balances and holds are authoritative in memory (one mutex per account,
// accounts sharded by id) so Reserve never waits on the disk; bbolt is the
// durable copy, written by one group-committing writer. The crash-
// consistency argument is in docs/billing.md.
package billing

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/usage"
)

var (
	bucketAccounts    = []byte("billing_accounts")    // account id → accountRec
	bucketKeys        = []byte("billing_keys")        // key hash → keyRec
	bucketHolds       = []byte("billing_holds")       // generation id → holdRec (open reservations)
	bucketGenerations = []byte("billing_generations") // generation id → Generation
	bucketCredits     = []byte("billing_credits")     // account id/time/seq → creditRec (top-up log)
)

// Generation statuses.
const (
	StatusSuccess     = "success"     // the upstream answered
	StatusError       = "error"       // every attempt failed
	StatusCancelled   = "cancelled"   // the client went away (abandoned stream)
	StatusInterrupted = "interrupted" // the gateway stopped before settling; settled by recovery
	StatusExpired     = "expired"     // never settled by its handler; settled by the janitor
)

// Errors.
var (
	ErrClosed   = errors.New("billing: ledger closed")
	ErrNotFound = errors.New("billing: not found")
)

// Options tune a Ledger; the zero value is usable.
type Options struct {
	// RequestDeadline bounds a request's life. A hold that outlives it by a
	// further RequestDeadline without being settled is settled by the
	// janitor (status expired). Default 10 minutes.
	RequestDeadline time.Duration
	// JanitorInterval is how often unsettled holds are looked for; default
	// RequestDeadline/4, at least 1 ms and at most one minute.
	JanitorInterval time.Duration
	// Now is the clock (UTC); tests set it.
	Now func() time.Time
	// AsyncSettle makes Settle return once the charge is applied in memory
	// and queued for the next group commit, instead of after the fsync. It
	// takes the fsync (about a millisecond on common disks) off every
	// request's latency; the price is that a hard crash (kill -9, power
	// loss) can lose the settlements not yet committed — under-charges of
	// at most CommitWindow plus one commit of traffic, never a double
	// charge or an overdraft, since holds are released in memory only. See
	// billing.md.
	AsyncSettle bool
	// Journal, with AsyncSettle, is a directory for the settlement journal
	// (journal.go): Settle then returns once its record is appended there,
	// so a crash loses no acknowledged charge — the next Open replays the
	// journal into the store — while the store still commits a window of
	// writes at a time. Empty: no journal (a crash can lose up to a commit
	// window of acknowledged charges).
	Journal string
	// JournalSync is how long an appended record may wait for its
	// fdatasync: zero syncs before Settle returns (nothing acknowledged is
	// lost even to a power loss); a period has Settle return after the
	// write, which a crash of the process cannot lose, and bounds what a
	// power loss or kernel crash can lose to the period (journal.go).
	JournalSync time.Duration
	// CommitWindow, with AsyncSettle, is how long the writer gathers
	// writes nobody waits on (settlements, holds, checkpoints) before it
	// commits them together; a write someone waits on (a top-up, a key's
	// limit) commits at once with everything queued before it. Zero means
	// DefaultCommitWindow, or SharedCommitWindow on a shared store.
	CommitWindow time.Duration
	// Logf reports background write failures; nil discards them.
	Logf func(format string, args ...any)
	// InstanceID names this process in the holds it writes (default: a
	// fresh random id per Open). A hold on disk that names another
	// instance at Open belongs to a process that is gone — bbolt admits
	// one process per file — so recovery settles it at once instead of
	// keeping its money held until the request deadline.
	InstanceID string
	// Index, when set, runs in every settlement's transaction (index.go).
	Index IndexFunc
	// IndexReads, when set, appends the values Index reads for g
	// (writer.go, op.reads).
	IndexReads func(g *Generation, dst []store.Ref) []store.Ref
	// Unindex, when set, removes what Index wrote for g except aggregates,
	// in the transaction that prunes g (prune.go). g carries the fields
	// that name a record: ID, AccountID, KeyHash, Model, CreatedAt and
	// Charged.
	Unindex IndexFunc

	// Cluster mode (a shared store, lease.go). LeaseIdle is how long an
	// unused lease is kept before its free part goes back (default 2s);
	// Heartbeat how often this instance proves it is alive (default 1s);
	// DeadAfter how long another instance's heartbeat may stand still
	// before its holds and leases are reconciled (default 10s).
	LeaseIdle, Heartbeat, DeadAfter time.Duration
}

const numShards = 64

// DefaultCommitWindow is Options.CommitWindow's default. Every commit
// costs two fsyncs of the store file and rewrites the last pages of each
// tree it appends to, whatever its size. At 5 ms, the earlier default,
// a commit came every ~16 requests of a single client, and its disk
// flushes raised that client's p99 by ~200 µs (with fsync switched off,
// measured, the p99 fell as much); at 16 clients the commits cost 7–15%
// more CPU per request than at 100 ms (docs/performance.md has the A/B
// figures). The price: a hard crash loses at most a tenth of a second of
// charges, as under-charges (LiteLLM's proxy batches its spend writes
// over seconds).
const DefaultCommitWindow = 100 * time.Millisecond

// SharedCommitWindow is CommitWindow's default on a shared store
// (PostgreSQL, cluster mode): there a commit is a round trip rather than
// an fsync of this machine's disk, and a client's next read (GET
// /generation) may reach another gateway, which finds a settlement in the
// store only once it is committed; a short window keeps that to
// milliseconds.
const SharedCommitWindow = 5 * time.Millisecond

// Ledger is safe for concurrent use.
type Ledger struct {
	// leased, when set (tests), runs when leaseFor succeeds in cluster
	// mode, before the hold takes a.mu: where a concurrent request or a
	// key's notification can take the lease just acquired.
	leased func()

	db     store.DB
	opts   Options
	seed   maphash.Seed
	shards [numShards]shard
	w      *writer
	j      *journal // nil: no journal (Options.Journal)
	stop   chan struct{}
	wg     sync.WaitGroup
	closed atomic.Bool
	// Lease acquisitions a request waited for, and top-ups started ahead
	// of need (lease.go; tests and metrics).
	syncAcquires, refills atomic.Int64
	seq                   atomic.Uint64

	// Cluster mode (lease.go).
	shared  bool
	beatOK  atomic.Int64        // unix nanos of the last heartbeat committed
	beatN   uint64              // heartbeat counter; cluster goroutine only
	seen    map[string]seenBeat // cluster goroutine only
	watched time.Time           // last successful look at the heartbeats; cluster goroutine only
}

type shard struct {
	mu       sync.RWMutex
	accounts map[string]*account
}

// account is the in-memory state of one account and its keys; mu guards
// everything in it and in its keyStates and open reservations.
type account struct {
	mu      sync.Mutex
	id      string
	balance Nanos // credits - usage, settled
	credits Nanos // total ever added
	usage   Nanos // total ever charged
	held    Nanos // sum of open holds
	keys    map[string]*keyState
	open    map[string]*Reservation
	// Cluster mode: this instance's lease on the balance, and when a
	// request last needed it (unix nanos). leaseMu serialises acquisitions.
	lease   Nanos
	lastUse int64
	leaseMu sync.Mutex
	// refilling: a background acquisition (lease.go, refillAhead) is
	// under way.
	refilling atomic.Bool
}

type keyState struct {
	hash  string
	held  Nanos
	usage keyUsage
	lease Nanos // cluster mode: this instance's lease on the key's limit
}

// keyUsage is persisted as is in billing_keys.
type keyUsage struct {
	Account string `json:"account"`
	Total   Nanos  `json:"total"`
	Day     period `json:"day"`
	Week    period `json:"week"`
	Month   period `json:"month"`
}

type accountRec struct {
	Balance Nanos `json:"balance"`
	Credits Nanos `json:"credits"`
	Usage   Nanos `json:"usage"`
}

type creditRec struct {
	Account string    `json:"account"`
	Amount  Nanos     `json:"amount"`
	Note    string    `json:"note,omitempty"`
	Time    time.Time `json:"time"`
}

// Open loads the ledger from db (creating its buckets), runs crash recovery
// and starts the writer and the janitor. Close it before closing db.
func Open(db store.DB, opts Options) (*Ledger, error) {
	if opts.RequestDeadline <= 0 {
		opts.RequestDeadline = 10 * time.Minute
	}
	if opts.JanitorInterval <= 0 {
		opts.JanitorInterval = max(min(opts.RequestDeadline/4, time.Minute), time.Millisecond)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.InstanceID == "" {
		opts.InstanceID = NewID()[len("gen-"):]
	}
	if opts.LeaseIdle <= 0 {
		opts.LeaseIdle = defaultLeaseIdle
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = defaultBeat
	}
	if opts.DeadAfter <= 0 {
		opts.DeadAfter = defaultDeadAfter
	}
	l := &Ledger{db: db, opts: opts, seed: maphash.MakeSeed(), stop: make(chan struct{}),
		shared: db.Shared(), seen: map[string]seenBeat{}}
	for i := range l.shards {
		l.shards[i].accounts = map[string]*account{}
	}
	if opts.AsyncSettle && opts.Journal != "" {
		j, err := openJournal(opts.Journal, opts.JournalSync, opts.Logf)
		if err != nil {
			return nil, err
		}
		// Before the balances are read: they must include what the journal
		// adds.
		n, err := l.replayJournal(j)
		if err != nil {
			j.close()
			return nil, err
		}
		if n > 0 && opts.Logf != nil {
			opts.Logf("billing: journal: replayed %d acknowledged settlements the store had not committed", n)
		}
		l.j = j
	}
	holds, err := l.load()
	if err != nil {
		l.closeJournal()
		return nil, err
	}
	var window time.Duration
	if opts.AsyncSettle {
		// Nobody waits on settlements: gather a window of them into one
		// commit (docs/billing.md).
		window = opts.CommitWindow
		switch {
		case window > 0:
		case l.shared:
			window = SharedCommitWindow
		default:
			window = DefaultCommitWindow
		}
	}
	l.w = newWriter(db, opts.Logf, window)
	if l.shared {
		// The holds on a shared store belong to running instances; those
		// of dead ones are reconciled by the heartbeat protocol (lease.go).
		// The first heartbeat registers this instance before it admits.
		holds = nil
		l.beat()
		if l.beatOK.Load() == 0 {
			l.w.close()
			l.closeJournal()
			return nil, fmt.Errorf("billing: cannot register this instance in the shared store: %w", store.ErrUnavailable)
		}
		l.wg.Add(1)
		go l.every(l.opts.Heartbeat, func() {
			l.beat()
			l.returnIdle(false)
			l.reconcile()
		})
	}
	if err := l.recover(holds); err != nil {
		l.w.close()
		l.closeJournal()
		return nil, err
	}
	l.wg.Add(1)
	go l.every(l.opts.JanitorInterval, func() { l.expire(l.now()) })
	return l, nil
}

// every runs fn every d until the ledger stops: the janitor, and in
// cluster mode the heartbeat, lease returns and reconciliation of other
// instances (lease.go).
func (l *Ledger) every(d time.Duration, fn func()) {
	defer l.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// Close stops the janitor and commits every queued write. Reservations
// still open stay on disk as holds and are settled by recovery on the next
// Open. It does not close the bbolt file.
func (l *Ledger) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	close(l.stop)
	l.wg.Wait()
	if l.shared {
		// Give back what no open request holds, then leave: the others
		// reconcile what is left (open holds) at once, since the heartbeat
		// record is gone.
		l.returnIdle(true)
		if err := l.w.do(func(tx store.Tx) error {
			return tx.Bucket(bucketInstances).Delete([]byte(l.opts.InstanceID))
		}); err != nil && l.opts.Logf != nil {
			l.opts.Logf("billing: leaving the cluster: %v", err)
		}
	}
	l.w.close()
	l.closeJournal()
	return nil
}

// closeJournal closes the journal after the writer: the segments whose
// settlements the writer committed are deleted, the rest kept for replay.
func (l *Ledger) closeJournal() {
	if l.j != nil {
		l.j.close()
	}
}

// Sync waits until every write queued so far (including the background
// writes of holds and checkpoints) is durable.
func (l *Ledger) Sync() error { return l.w.sync() }

func (l *Ledger) now() time.Time { return l.opts.Now().UTC() }

// createBuckets creates the ledger's buckets where they do not exist.
func createBuckets(tx store.Tx) error {
	for _, b := range [][]byte{bucketAccounts, bucketKeys, bucketHolds, bucketGenerations, bucketCredits,
		bucketLeases, bucketInstances} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return nil
}

// load creates the buckets and reads balances and key usage into memory; it
// returns the holds found on disk.
func (l *Ledger) load() ([]holdRec, error) {
	var holds []holdRec
	err := l.db.Update(func(tx store.Tx) error {
		if err := createBuckets(tx); err != nil {
			return err
		}
		err := tx.Bucket(bucketAccounts).ForEach(func(k, v []byte) error {
			var r accountRec
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			a := l.account(string(k))
			a.balance, a.credits, a.usage = r.Balance, r.Credits, r.Usage
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bucketKeys).ForEach(func(k, v []byte) error {
			var u keyUsage
			if err := json.Unmarshal(v, &u); err != nil {
				return err
			}
			l.account(u.Account).key(string(k)).usage = u
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketHolds).ForEach(func(_, v []byte) error {
			var h holdRec
			if err := json.Unmarshal(v, &h); err != nil {
				return err
			}
			holds = append(holds, h)
			return nil
		})
	})
	return holds, err
}

// account returns the in-memory state of id, creating an empty one.
func (l *Ledger) account(id string) *account {
	s := &l.shards[maphash.String(l.seed, id)%numShards]
	s.mu.RLock()
	a := s.accounts[id]
	s.mu.RUnlock()
	if a != nil {
		return a
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a = s.accounts[id]; a == nil {
		a = &account{id: id, keys: map[string]*keyState{}, open: map[string]*Reservation{}}
		s.accounts[id] = a
	}
	return a
}

// eachAccount calls fn with every account in memory, its mu held.
func (l *Ledger) eachAccount(fn func(*account)) {
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.RLock()
		for _, a := range s.accounts {
			a.mu.Lock()
			fn(a)
			a.mu.Unlock()
		}
		s.mu.RUnlock()
	}
}

// key returns the state of a key of a; a.mu must be held (or a not yet shared).
func (a *account) key(hash string) *keyState {
	k := a.keys[hash]
	if k == nil {
		k = &keyState{hash: hash, usage: keyUsage{Account: a.id}}
		a.keys[hash] = k
	}
	return k
}

// Balance is an account's credits as the API reports them.
type Balance struct {
	Credits   Nanos // total ever added
	Usage     Nanos // total ever charged
	Balance   Nanos // Credits - Usage
	Held      Nanos // reserved by requests in flight
	Available Nanos // Balance - Held: what a new request can reserve
}

// Balance returns the account's current balance.
func (l *Ledger) Balance(accountID string) Balance {
	a := l.account(accountID)
	if l.shared {
		return l.sharedBalance(a)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return Balance{Credits: a.credits, Usage: a.usage, Balance: a.balance, Held: a.held, Available: a.balance - a.held}
}

// sharedBalance reads the balance from the shared store: Held is what
// every instance has leased less this one's free lease, Available what this
// instance can hold now (its free lease and what is not leased). A store
// that cannot be read gives the figures of this instance's memory.
//
// The writer is flushed first so a client reads its own writes: a request
// answered by this instance is settled in memory before its response, but
// its record reaches the store with the next group commit.
//
// It waits for an acquisition of a's lease in progress (a.leaseMu): a
// top-up ahead commits its grant to the store before it adds it to
// a.lease, and read between the two the grant counted as held (a stream's
// client that read its balance at once saw $0.41 held after its request
// ended, in CI).
func (l *Ledger) sharedBalance(a *account) Balance {
	var rec accountRec
	var leased Nanos
	a.leaseMu.Lock()
	defer a.leaseMu.Unlock()
	err := l.w.sync()
	if err == nil {
		err = l.db.View(func(tx store.Tx) error {
			if v := tx.Bucket(bucketAccounts).Get([]byte(a.id)); v != nil {
				if err := decodeAccount(v, &rec); err != nil {
					return err
				}
			}
			leased = leasedIn(tx, 'a', a.id)
			return nil
		})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		return Balance{Credits: a.credits, Usage: a.usage, Balance: a.balance, Held: a.held, Available: a.lease - a.held}
	}
	free := max(a.lease-a.held, 0)
	return Balance{Credits: rec.Credits, Usage: rec.Usage, Balance: rec.Balance, Held: leased - free, Available: rec.Balance - leased + free}
}

// KeyUsage is a key's spending as the API reports it.
type KeyUsage struct {
	Total, Daily, Weekly, Monthly Nanos
	Held                          Nanos
	// InPeriod is the usage counted against the limit: the counter of the
	// key's reset period, or Total without one.
	InPeriod Nanos
	// Remaining is Limit - InPeriod - Held (never below 0), nil without a limit.
	Remaining *Nanos
}

// KeyUsage returns the spending of k as of now.
func (l *Ledger) KeyUsage(k *keys.Key) KeyUsage {
	a := l.account(k.AccountID)
	now := l.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	ks := a.keys[k.Hash]
	if ks == nil {
		ks = &keyState{}
	}
	if l.shared {
		// Other instances charge the key too: read its usage and leases,
		// after this instance's queued settlements (see sharedBalance).
		c := *ks
		ks = &c
		a.mu.Unlock()
		var leased Nanos
		err := l.w.sync()
		if err == nil {
			err = l.db.View(func(tx store.Tx) error {
				if v := tx.Bucket(bucketKeys).Get([]byte(k.Hash)); v != nil {
					if err := decodeKeyUsage(v, &ks.usage); err != nil {
						return err
					}
				}
				leased = leasedIn(tx, 'k', k.Hash)
				return nil
			})
		}
		a.mu.Lock()
		if err == nil {
			ks.held = leased - max(ks.lease-ks.held, 0)
		}
	}
	u := KeyUsage{
		Total: ks.usage.Total, Held: ks.held,
		Daily:   ks.usage.Day.at(keys.ResetDaily, now),
		Weekly:  ks.usage.Week.at(keys.ResetWeekly, now),
		Monthly: ks.usage.Month.at(keys.ResetMonthly, now),
	}
	u.InPeriod = ks.usage.inPeriod(k.LimitReset, now)
	if k.Limit != nil {
		r := max(Nanos(*k.Limit)-u.InPeriod-u.Held, 0)
		u.Remaining = &r
	}
	return u
}

// TopUp adds amount (> 0) to an account's credits. It returns once the
// credit is durable; only then can requests spend it.
func (l *Ledger) TopUp(accountID string, amount Nanos, note string) (Balance, error) {
	if amount <= 0 {
		return Balance{}, errors.New("billing: a top-up must be positive")
	}
	if accountID == "" {
		return Balance{}, errors.New("billing: no account")
	}
	now := l.now()
	seq := l.seq.Add(1)
	err := l.w.do(func(tx store.Tx) error {
		if err := updateAccount(tx, accountID, func(r *accountRec) {
			r.Credits = usage.AddSat(r.Credits, amount)
			r.Balance = usage.AddSat(r.Balance, amount)
		}); err != nil {
			return err
		}
		v, _ := json.Marshal(creditRec{Account: accountID, Amount: amount, Note: note, Time: now})
		k := accountID + "/" + strconv.FormatInt(now.UnixNano(), 10) + "/" + strconv.FormatUint(seq, 10)
		return tx.Bucket(bucketCredits).Put([]byte(k), v)
	})
	if err != nil {
		return Balance{}, err
	}
	a := l.account(accountID)
	a.mu.Lock()
	a.credits = usage.AddSat(a.credits, amount)
	a.balance = usage.AddSat(a.balance, amount)
	a.mu.Unlock()
	return l.Balance(accountID), nil
}

// Generation returns the record of a settled request, or ErrNotFound.
func (l *Ledger) Generation(id string) (*Generation, error) {
	g, err := l.storedGeneration(id)
	if !errors.Is(err, ErrNotFound) {
		return g, err
	}
	// Settled but not committed yet (AsyncSettle): the queued record.
	// Then the store once more: the commit may have ended in between.
	if p := l.w.pending(id); p != nil {
		c := *p
		return &c, nil
	}
	return l.storedGeneration(id)
}

func (l *Ledger) storedGeneration(id string) (*Generation, error) {
	var g *Generation
	err := l.db.View(func(tx store.Tx) error {
		v := tx.Bucket(bucketGenerations).Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		g = new(Generation)
		return json.Unmarshal(v, g)
	})
	return g, err
}

// Generations calls fn for every generation record of the account (all
// accounts when accountID is empty) until fn returns false. It reads one
// consistent snapshot.
func (l *Ledger) Generations(accountID string, fn func(*Generation) bool) error {
	stop := errors.New("stop")
	err := l.db.View(func(tx store.Tx) error {
		return tx.Bucket(bucketGenerations).ForEach(func(_, v []byte) error {
			g := new(Generation)
			if err := json.Unmarshal(v, g); err != nil {
				return err
			}
			if accountID != "" && g.AccountID != accountID {
				return nil
			}
			if !fn(g) {
				return stop
			}
			return nil
		})
	})
	if errors.Is(err, stop) {
		return nil
	}
	return err
}

// Request describes what is about to be sent upstream, for the hold.
type Request struct {
	// ID is the generation id, which is also the completion id the client
	// sees; NewID() when empty. It must be unique.
	ID       string
	Model    string // model id as requested (<vendor>/<model>)
	Provider string // provider slug of the first endpoint tried
	Price    catalog.Price
	// PromptTokens bounds the prompt (tokenize.EstimatePrompt).
	PromptTokens int64
	// MaxOutputTokens is the most the upstream may generate: the request's
	// max_completion_tokens/max_tokens, else the endpoint's MaxOutput.
	MaxOutputTokens int64
	// ContextLength, when > 0, caps PromptTokens and MaxOutputTokens: the
	// upstream accepts no more, so the hold never exceeds the real worst
	// case (pass the endpoint's ContextLength).
	ContextLength int64
	Images        int64 // images billed per image
	// Choices is the number of completions asked for (the request's n):
	// each may generate MaxOutputTokens, so the hold covers them all.
	// Zero means one.
	Choices  int64
	Streamed bool
	// Insurable: the generation is a completion (chat), so zero-completion
	// insurance (Insured) applies to it; an embedding never completes.
	Insurable bool
	// Attribution is the client's app, from its attribution headers,
	// recorded on the generation.
	Attribution usage.Attribution
	// Envelope, when set, is a hold taken for this request's group
	// (Ledger.Hold): the reservation's hold is drawn from it first, and
	// only the rest must fit the account.
	Envelope *Envelope
	// EnvelopeOnly: the whole hold must come from Envelope, never from the
	// account's free balance — a plugin's sub-request, whose worst case
	// was held before the plugin ran (the request's allowance for them):
	// a call the allowance cannot cover is refused, so no sub-request is
	// charged for a request whose hold did not cover it.
	EnvelopeOnly bool
	// Fees is held beside the tokens for fees the run may add before it
	// settles (a server-tool turn holds one call's fee ceiling: an
	// account that cannot pay for one call is refused before the turn
	// is sent, not charged for a turn whose calls cannot run). Fees
	// added later come out of it first, as out of HoldFees.
	Fees Nanos
}

// bound is the worst case of req: its prompt and each choice's output
// capped at the context length.
func (req Request) bound() (prompt, output int64) {
	prompt, output = req.PromptTokens, req.MaxOutputTokens
	if c := req.ContextLength; c > 0 {
		prompt, output = min(prompt, c), min(output, c)
	}
	return prompt, mulSat(output, max(req.Choices, 1))
}

// mulSat is a×b for non-negative a and b, saturating at the int64 maximum.
func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// At is req moved to target t (a fallback's endpoint), as Retarget moves a
// hold.
func (req Request) At(t Target) Request {
	req.Provider, req.Price, req.MaxOutputTokens, req.ContextLength = t.Provider, t.Price, t.MaxOutputTokens, t.ContextLength
	return req
}

// WorstCase is what Reserve would hold for req: its prompt and output
// bounds at the dearest of its prices (a caller checks a budget before
// reserving).
func WorstCase(req Request) Nanos {
	prompt, output := req.bound()
	return usage.AddSat(RatesOf(req.Price).WorstCase(prompt, output, req.Images), max(req.Fees, 0))
}

// Reserve holds the worst-case cost of req against the key's account and
// limit. It refuses with 402 when the account's available balance or the
// key's remaining limit cannot cover the hold; the message says which and by
// how much. It does not wait on the disk: the hold is written in the
// background (its absence after a crash is harmless, see docs/billing.md).
// Every successful Reserve must be followed by Settle.
func (l *Ledger) Reserve(k *keys.Key, req Request) (*Reservation, *apierr.Error) {
	if l.closed.Load() {
		return nil, apierr.New(http.StatusServiceUnavailable, "the gateway is shutting down")
	}
	if req.ID == "" {
		req.ID = NewID()
	}
	rates := RatesOf(req.Price)
	hold := WorstCase(req)
	_, output := req.bound()
	now := l.now()
	r := &Reservation{
		l: l, ID: req.ID, keyHash: k.Hash, keyName: k.Name, limit: k.Limit, reset: k.LimitReset,
		model: req.Model, provider: req.Provider, streamed: req.Streamed, insurable: req.Insurable, attribution: req.Attribution, created: now,
		promptEst: req.PromptTokens, maxOut: output, images: req.Images, choices: max(req.Choices, 1), rates: rates,
		env: req.Envelope, feeHold: max(req.Fees, 0),
	}
	a := l.account(k.AccountID)
	r.acct = a
	for attempt := 0; ; attempt++ {
		if e := l.leaseFor(a, k.Hash, k.Limit, k.LimitReset, k.Name, hold, req.Envelope); e != nil {
			return nil, e
		}
		a.mu.Lock()
		if _, dup := a.open[r.ID]; dup {
			a.mu.Unlock()
			return nil, apierr.New(http.StatusConflict, "generation id %q is already in use", r.ID)
		}
		ks := a.key(k.Hash)
		r.key = ks
		drawn := req.Envelope.draw(a, ks, hold)
		var e *apierr.Error
		if req.EnvelopeOnly && drawn < hold {
			req.Envelope.undraw(drawn)
			a.mu.Unlock()
			return nil, overAllowance(hold, drawn)
		}
		e = l.fits(a, ks, r, hold, now)
		if e == nil {
			break
		}
		req.Envelope.undraw(drawn)
		a.mu.Unlock()
		if !l.retryLease(attempt) {
			return nil, e
		}
	}
	ks := r.key
	r.hold = hold
	a.held += hold
	ks.held += hold
	a.open[r.ID] = r
	rec := r.record()
	a.mu.Unlock()
	l.putHold(rec)
	return r, nil
}

// fits checks that amount more can be held; a.mu is held.
func (l *Ledger) fits(a *account, ks *keyState, r *Reservation, amount Nanos, now time.Time) *apierr.Error {
	availA, availK := l.freeOf(a, ks, r.limit, r.reset, now)
	if amount > availA {
		return insufficient(amount, max(availA, 0))
	}
	if amount > availK {
		if r.limit == nil { // cluster mode: the key's lease, taken with the account's
			return insufficient(amount, max(availK, 0))
		}
		return keyLimitExceeded(amount, max(availK, 0), r.keyName, *r.limit, r.reset)
	}
	return nil
}

// insufficient is the 402 of an account that cannot cover amount.
func insufficient(amount, avail Nanos) *apierr.Error {
	e := apierr.New(http.StatusPaymentRequired,
		"Insufficient credits: this request needs up to %s but the account has %s available (short by %s). Add credits to continue.",
		amount, avail, amount-avail)
	e.Metadata = map[string]any{"reason": "insufficient_credits", "required": amount, "available": avail, "shortfall": amount - avail}
	return e
}

// overAllowance is the 402 of a sub-request whose worst case (amount) is
// more than what is left (avail) of the hold its request took for its
// plugins' sub-requests before they ran.
func overAllowance(amount, avail Nanos) *apierr.Error {
	e := apierr.New(http.StatusPaymentRequired,
		"this sub-request may cost up to %s but only %s is left of what its request held for its plugins' sub-requests before they ran (the plugin's max_sub_cost, or limits.max_sub_request_cost); nothing was charged for it",
		amount, avail)
	e.Metadata = map[string]any{"reason": "sub_request_allowance", "required": amount, "available": avail}
	return e
}

// keyLimitExceeded is the 402 of a key whose limit cannot cover amount.
func keyLimitExceeded(amount, remaining Nanos, keyName string, limit int64, reset string) *apierr.Error {
	per := "total"
	if reset != keys.ResetNone {
		per = reset
	}
	e := apierr.New(http.StatusPaymentRequired,
		"Key limit exceeded: this request needs up to %s but key %q has %s left of its %s %s limit (short by %s).",
		amount, keyName, remaining, Nanos(limit), per, amount-remaining)
	e.Metadata = map[string]any{"reason": "key_limit_exceeded", "required": amount, "available": remaining, "shortfall": amount - remaining, "limit": Nanos(limit), "limit_reset": reset}
	return e
}

// expire settles every open reservation whose expiry has passed.
func (l *Ledger) expire(now time.Time) {
	var due []*Reservation
	l.eachAccount(func(a *account) {
		for _, r := range a.open {
			if !now.Before(r.expiry()) {
				due = append(due, r)
			}
		}
	})
	for _, r := range due {
		status := StatusExpired
		if r.recovered {
			status = StatusInterrupted
		}
		if _, err := r.settle(Outcome{Status: status, Usage: r.checkpointUsage(), Error: "not settled before the request deadline"}, true); err != nil && l.opts.Logf != nil {
			l.opts.Logf("billing: settling expired reservation %s: %v", r.ID, err)
		}
	}
}
