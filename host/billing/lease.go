package billing

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/usage"
)

// Cluster mode: leases.
//
// On a shared store (store.DB.Shared: several gateways on one PostgreSQL)
// the in-memory balance of one process says nothing about what the others
// spend, so admission cannot check it: N instances would each let an
// account spend its whole balance. Instead each instance holds a lease — a
// slice of the account's balance and of the key's limit that it alone may
// hold requests against — and reserves locally against its lease, with no
// store round trip per request:
//
//   - Acquiring: when a hold does not fit the instance's free lease (lease −
//     held), one serialised store transaction checks the account's balance
//     minus every instance's leases (and the key's limit minus its period's
//     usage minus every instance's leases on it) and grants the shortfall
//     plus some room (leaseExtra). A shortfall the store cannot grant is the
//     402 a single gateway gives, with the figures this instance can reach.
//   - Spending: a settlement's charge comes out of the lease; the
//     settlement transaction decrements the instance's lease records with
//     the account and the key, so Σ leases ≤ balance always holds on disk
//     (syctl audit checks it).
//   - Returning: a lease not used for LeaseIdle goes back (its free part),
//     and on Close; so a busy key is refused early by at most what the other
//     instances hold unused for LeaseIdle — the trade-off of docs/cluster.md.
//   - A dead instance: every instance writes a heartbeat counter; one whose
//     counter has not moved for DeadAfter, as observed by a survivor on its
//     own clock (so clock skew does not matter), is reconciled by it in one
//     transaction: its open holds are settled at their last checkpoint
//     (status interrupted), then its leases are deleted, which returns them.
//     An instance that cannot write its heartbeat for DeadAfter/2 stops
//     admitting (503) before anyone may reconcile it, and one that finds its
//     heartbeat record gone forfeits its leases: a stalled process never
//     spends money that was taken back.
//
// Lease records are in bucketLeases as "a/<account>/<instance>" and
// "k/<key hash>/<instance>" (ids never contain '/'), each a decimal amount
// of nanodollars; the sum over a prefix is what is leased on the subject.
var (
	bucketLeases    = []byte("billing_leases")
	bucketInstances = []byte("billing_instances") // instance id → heartbeat counter
)

// Lease defaults (Options).
const (
	defaultLeaseIdle = 2 * time.Second
	defaultBeat      = time.Second
	defaultDeadAfter = 10 * time.Second
	// acquireWait bounds how long a request waits for a lease before it is
	// answered 503: the store is down or overloaded.
	acquireWait = 3 * time.Second
)

func leaseKey(kind byte, id, inst string) []byte {
	return []byte(string(kind) + "/" + id + "/" + inst)
}

func readNanos(v []byte) Nanos {
	n, _ := strconv.ParseInt(string(v), 10, 64)
	return Nanos(n)
}

// leasedIn sums every instance's lease on the subject id ('a' account,
// 'k' key).
func leasedIn(tx store.Tx, kind byte, id string) Nanos {
	prefix := []byte(string(kind) + "/" + id + "/")
	c := tx.Bucket(bucketLeases).Cursor()
	var sum Nanos
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		sum = usage.AddSat(sum, readNanos(v))
	}
	return sum
}

// addLease moves one lease record by delta, never below zero (a charge
// against a lease taken before the key had one).
func addLease(tx store.Tx, kind byte, id, inst string, delta Nanos) error {
	if delta == 0 {
		return nil
	}
	b := tx.Bucket(bucketLeases)
	k := leaseKey(kind, id, inst)
	n := usage.AddSat(readNanos(b.Get(k)), delta)
	if n <= 0 {
		return b.Delete(k)
	}
	return b.Put(k, strconv.AppendInt(nil, int64(n), 10))
}

// leaseExtra is the room granted beyond a shortfall: an eighth of what is
// left after it, at least the shortfall again and at most 64 times it. An
// eighth leaves most of a nearly spent balance to the other instances; 64
// shortfalls of room mean one store transaction per tens of requests.
// No shortfall, no room: a key without a limit has "unlimited" left, and
// an eighth of that is not room anybody needs.
func leaseExtra(need, left Nanos) Nanos {
	if left <= 0 || need <= 0 {
		return 0
	}
	x := max(left/8, need)
	if need <= math.MaxInt64/64 {
		x = min(x, 64*need)
	}
	return min(x, left)
}

// unavailable is the answer when the shared store cannot be reached.
func unavailable(why string) *apierr.Error {
	e := apierr.New(http.StatusServiceUnavailable, "The credits store is not reachable (%s); the request was not started and nothing was charged. Retry shortly.", why)
	e.RetryAfter = 2 * time.Second
	return e
}

// storeHealthy refuses admission when this instance's heartbeat has not
// reached the store for DeadAfter/2: past DeadAfter another instance may
// take its leases back.
func (l *Ledger) storeHealthy() *apierr.Error {
	if d := time.Since(time.Unix(0, l.beatOK.Load())); d > l.opts.DeadAfter/2 {
		return unavailable("no answer for " + d.Round(time.Second).String())
	}
	return nil
}

// freeOf is what a and ks can still hold; a.mu is held. On a shared store
// it is the lease's free part; the key's figure is unlimited (MaxInt64)
// for a key without a limit on a single gateway.
func (l *Ledger) freeOf(a *account, ks *keyState, limit *int64, reset string, now time.Time) (acct, key Nanos) {
	if l.shared {
		return a.lease - a.held, ks.lease - ks.held
	}
	acct, key = a.balance-a.held, math.MaxInt64
	if limit != nil {
		key = Nanos(*limit) - ks.usage.inPeriod(reset, now) - ks.held
	}
	return acct, key
}

// retryLease reports whether a hold that leaseFor made room for but that
// then did not fit is tried again (after attempt, 0-based): in cluster
// mode the lease just acquired can be taken before the hold takes a.mu —
// by a concurrent request, or given back by KeyChanged when the key's
// notification arrives (PostgreSQL delivers them asynchronously: a key
// created just before its first request is "changed" during it). A few
// times, then the 402 stands.
func (l *Ledger) retryLease(attempt int) bool { return l.shared && attempt < 2 }

// holdRetried runs try — acquire the lease, then hold — until it holds,
// fails otherwise than by not fitting (unfit false), or retryLease says no
// more tries.
func (l *Ledger) holdRetried(try func() (e *apierr.Error, unfit bool)) *apierr.Error {
	for attempt := 0; ; attempt++ {
		e, unfit := try()
		if e == nil || !unfit || !l.retryLease(attempt) {
			return e
		}
	}
}

// leaseFor makes sure this instance's leases can hold amount more for the
// key (hash, limit, reset) of a, less what env will give; it acquires from
// the store when they cannot. Called without a.mu. A nil error does not
// promise the hold fits (a concurrent request may take the lease first):
// the caller checks under a.mu and calls again.
func (l *Ledger) leaseFor(a *account, hash string, limit *int64, reset, keyName string, amount Nanos, env *Envelope) (err *apierr.Error) {
	if !l.shared {
		return nil
	}
	if e := l.storeHealthy(); e != nil {
		return e
	}
	if l.leased != nil { // tests: runs last, after a.leaseMu is released
		defer func() {
			if err == nil {
				l.leased()
			}
		}()
	}
	short := func() (needA, needK Nanos, ks *keyState) {
		a.mu.Lock()
		defer a.mu.Unlock()
		ks = a.key(hash)
		need := amount
		if env != nil && env.acct == a && env.key == ks && !env.closed {
			need -= env.left
		}
		a.lastUse = time.Now().UnixNano()
		return need - (a.lease - a.held), need - (ks.lease - ks.held), ks
	}
	needA, needK, ks := short()
	if needA <= 0 && needK <= 0 {
		l.refillAhead(a, ks, limit, reset, keyName, amount, needA, needK)
		return nil
	}
	// One acquisition per account at a time: the requests that queue here
	// usually find the lease their predecessor took large enough.
	a.leaseMu.Lock()
	defer a.leaseMu.Unlock()
	needA, needK, ks = short()
	if needA <= 0 && needK <= 0 {
		return nil
	}
	return l.acquire(a, ks, limit, reset, keyName, amount, max(needA, 0), max(needK, 0), false)
}

// refillRequests is how many more requests like the current one the free
// lease must cover before a request tops it up in the background.
const refillRequests = 16

// refillAhead tops up the leases in the background when, after this
// request, they would cover fewer than refillRequests more like it: the
// request that would otherwise find them empty — one in every few dozen,
// the tail of the latency — does not wait for a store transaction. needA
// and needK are what the request needs beyond the free leases (≤ 0: it
// fits). Without room in the store it does nothing (a request that then
// does not fit acquires, or is refused, itself).
func (l *Ledger) refillAhead(a *account, ks *keyState, limit *int64, reset, keyName string, amount, needA, needK Nanos) {
	want := refillRequests * amount
	// After this request the free parts are -needA and -needK.
	lowA, lowK := -needA < want, limit != nil && -needK < want
	if !lowA && !lowK || l.closed.Load() || !a.refilling.CompareAndSwap(false, true) {
		return
	}
	var ga, gk Nanos
	if lowA {
		ga = 2*want + needA
	}
	if lowK {
		gk = 2*want + needK
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer a.refilling.Store(false)
		a.leaseMu.Lock()
		defer a.leaseMu.Unlock()
		if l.closed.Load() {
			return
		}
		l.refills.Add(1)
		_ = l.acquire(a, ks, limit, reset, keyName, amount, max(ga, 0), max(gk, 0), true)
	}()
}

// acquire leases needA of the account's balance and needK of the key's
// limit (or refuses with 402), plus room; a.leaseMu is held.
//
// Lease changes (acquire, giveBack) are transactions of their own, not
// writer operations: behind a long queue of settlements a request would
// wait for all of them, and a return queued behind them would leave other
// instances refused meanwhile. The store serialises them with the writer's
// transactions, and lease and settlement deltas commute. Run once, never
// replayed: a commit whose answer was lost leaves the store with more
// leased than this instance uses (money set aside until it leaves or is
// reconciled), never less.
func (l *Ledger) acquire(a *account, ks *keyState, limit *int64, reset, keyName string, amount, needA, needK Nanos, ahead bool) *apierr.Error {
	if !ahead {
		l.syncAcquires.Add(1)
	}
	now := l.now()
	inst := l.opts.InstanceID
	var grantA, grantK, freeA, freeK Nanos
	done := make(chan error, 1)
	op := func(tx store.Tx) error {
		grantA, grantK = 0, 0
		var rec accountRec
		if v := tx.Bucket(bucketAccounts).Get([]byte(a.id)); v != nil {
			if err := decodeAccount(v, &rec); err != nil {
				return err
			}
		}
		freeA = rec.Balance - leasedIn(tx, 'a', a.id)
		freeK = math.MaxInt64
		if limit != nil {
			ku := keyUsage{Account: a.id}
			if v := tx.Bucket(bucketKeys).Get([]byte(ks.hash)); v != nil {
				if err := decodeKeyUsage(v, &ku); err != nil {
					return err
				}
			}
			freeK = Nanos(*limit) - ku.inPeriod(reset, now) - leasedIn(tx, 'k', ks.hash)
		}
		if needA > freeA || needK > freeK {
			return nil
		}
		grantA = needA + leaseExtra(needA, freeA-needA)
		grantK = needK + leaseExtra(needK, freeK-needK)
		if err := addLease(tx, 'a', a.id, inst, grantA); err != nil {
			return err
		}
		return addLease(tx, 'k', ks.hash, inst, grantK)
	}
	go func() { done <- l.db.Update(op) }()
	t := time.NewTimer(acquireWait)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return unavailable(strings.TrimPrefix(err.Error(), "store: "))
		}
	case <-t.C:
		// The grant may still commit later; it then stays leased to this
		// instance unused (money set aside, never overspent) until the
		// instance closes or is reconciled.
		return unavailable("no answer within " + acquireWait.String())
	}
	a.mu.Lock()
	localA, localK := a.lease-a.held, ks.lease-ks.held
	a.lease += grantA
	ks.lease += grantK
	a.mu.Unlock()
	if grantA == 0 && grantK == 0 && (needA > 0 || needK > 0) {
		if ahead {
			// No room for a top-up: the fragments stay for the
			// requests they still cover.
			return nil
		}
		// What this instance holds unused is too little for the request:
		// give it back, so that the fragments several instances hold can
		// come together in one of them instead of each keeping a piece too
		// small for anybody (the end of a balance, many instances).
		a.mu.Lock()
		rets := ks.takeFree(a.takeFree(nil))
		a.mu.Unlock()
		l.giveBack(rets)
		if needA > freeA {
			avail := max(localA+max(freeA, 0), 0)
			return insufficient(amount, avail)
		}
		remaining := max(localK+max(freeK, 0), 0)
		return keyLimitExceeded(amount, remaining, keyName, *limit, reset)
	}
	return nil
}

// KeyChanged gives back this instance's free lease on the key hash (its
// limit may have been lowered: a lease granted against the old limit must
// not outlive it). The gateway calls it for every key write, made here or
// on another instance; the next request of the key leases again against
// the new limit.
func (l *Ledger) KeyChanged(hash string) {
	if !l.shared {
		return
	}
	var rets []leaseRet
	l.eachAccount(func(a *account) {
		if ks := a.keys[hash]; ks != nil {
			rets = ks.takeFree(rets)
		}
	})
	// Called on the store's notification goroutine, which must not wait
	// on the store.
	go l.giveBack(rets)
}

// leaseRet is a free part of one of this instance's lease records, taken
// out of memory and to be given back in the store.
type leaseRet struct {
	kind byte // 'a' account, 'k' key
	id   string
	n    Nanos
}

// takeFree moves a's free lease to rets; a.mu is held.
func (a *account) takeFree(rets []leaseRet) []leaseRet {
	if free := a.lease - a.held; free > 0 {
		a.lease -= free
		rets = append(rets, leaseRet{'a', a.id, free})
	}
	return rets
}

// takeFree moves ks's free lease to rets; its account's mu is held.
func (ks *keyState) takeFree(rets []leaseRet) []leaseRet {
	if free := ks.lease - ks.held; free > 0 {
		ks.lease -= free
		rets = append(rets, leaseRet{'k', ks.hash, free})
	}
	return rets
}

// giveBack returns rets (already taken out of memory) to the store in one
// transaction. A failure leaves them leased on disk: set aside, never
// overspent, until this instance leaves or is reconciled.
func (l *Ledger) giveBack(rets []leaseRet) {
	if len(rets) == 0 {
		return
	}
	inst := l.opts.InstanceID
	err := l.db.Update(func(tx store.Tx) error {
		for _, r := range rets {
			if err := addLease(tx, r.kind, r.id, inst, -r.n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && l.opts.Logf != nil {
		l.opts.Logf("billing: returning leases: %v (they return when this instance leaves or is reconciled)", err)
	}
}

// returnIdle gives back the free part of leases unused for LeaseIdle, and
// all free parts when all is set (Close).
func (l *Ledger) returnIdle(all bool) {
	idle := time.Now().Add(-l.opts.LeaseIdle).UnixNano()
	var rets []leaseRet
	l.eachAccount(func(a *account) {
		if all || a.lastUse < idle {
			rets = a.takeFree(rets)
			for _, ks := range a.keys {
				rets = ks.takeFree(rets)
			}
		}
	})
	l.giveBack(rets)
}

// beat writes this instance's heartbeat and notices when another instance
// reconciled it.
func (l *Ledger) beat() {
	l.beatN++
	n, inst := l.beatN, []byte(l.opts.InstanceID)
	lost := false
	// Its own transaction, not behind the writer's queue: it measures
	// whether the store answers, not how far behind the settlements are.
	err := l.db.Update(func(tx store.Tx) error {
		ib := tx.Bucket(bucketInstances)
		lost = n > 1 && ib.Get(inst) == nil
		return ib.Put(inst, strconv.AppendUint(nil, n, 10))
	})
	if err != nil {
		if l.opts.Logf != nil {
			l.opts.Logf("billing: heartbeat: %v", err)
		}
		return
	}
	if lost {
		l.forfeit()
	}
	l.beatOK.Store(time.Now().UnixNano())
}

// forfeit drops every lease held in memory: another instance found this
// one dead and took them back (and settled its holds).
func (l *Ledger) forfeit() {
	if l.opts.Logf != nil {
		l.opts.Logf("billing: this instance was reconciled as dead by another (no heartbeat for %s); its leases were returned and its open requests settled", l.opts.DeadAfter)
	}
	l.eachAccount(func(a *account) {
		a.lease = 0
		for _, ks := range a.keys {
			ks.lease = 0
		}
	})
}

// seenBeat is another instance's heartbeat as this one last saw it change.
type seenBeat struct {
	val string
	at  time.Time
}

// reconcile settles the holds and returns the leases of instances whose
// heartbeat has not moved for DeadAfter.
func (l *Ledger) reconcile() {
	now := time.Now()
	beats := map[string]string{}
	owners := map[string]bool{}
	err := l.db.View(func(tx store.Tx) error {
		if err := tx.Bucket(bucketInstances).ForEach(func(k, v []byte) error {
			beats[string(k)] = string(v)
			return nil
		}); err != nil {
			return err
		}
		// Owners of leases or holds with no instance record (one that
		// closed, was reconciled half-way, or wrote holds before cluster
		// mode) are gone too.
		if err := tx.Bucket(bucketLeases).ForEach(func(k, _ []byte) error {
			if i := bytes.LastIndexByte(k, '/'); i > 0 {
				owners[string(k[i+1:])] = true
			}
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(bucketHolds).ForEach(func(_, v []byte) error {
			var h struct {
				Owner string `json:"owner"`
			}
			if json.Unmarshal(v, &h) == nil {
				owners[h.Owner] = true
			}
			return nil
		})
	})
	if err != nil {
		return
	}
	// Another instance is judged by how long *this one* watched its
	// heartbeat stand still. A gap in the watching — the store was down
	// for everyone, or this process stalled — is not evidence: start the
	// count again, or an outage longer than DeadAfter would have every
	// instance reconcile the others the moment the store is back.
	if gap := now.Sub(l.watched); !l.watched.IsZero() && gap > min(3*l.opts.Heartbeat, l.opts.DeadAfter/2) {
		for id, s := range l.seen {
			s.at = now
			l.seen[id] = s
		}
	}
	l.watched = now
	var dead []string
	for id, v := range beats {
		if id == l.opts.InstanceID {
			continue
		}
		s, ok := l.seen[id]
		if !ok || s.val != v {
			l.seen[id] = seenBeat{val: v, at: now}
			continue
		}
		if now.Sub(s.at) >= l.opts.DeadAfter {
			dead = append(dead, id)
		}
	}
	for id := range owners {
		if _, ok := beats[id]; !ok && id != l.opts.InstanceID {
			dead = append(dead, id)
		}
	}
	for id := range l.seen {
		if _, ok := beats[id]; !ok {
			delete(l.seen, id)
		}
	}
	for _, id := range dead {
		if err := l.w.do(func(tx store.Tx) error { return l.reconcileIn(tx, id, beats[id], time.Now().UTC()) }); err != nil && l.opts.Logf != nil {
			l.opts.Logf("billing: reconciling instance %s: %v", id, err)
		}
	}
}

// reconcileIn settles the holds of instance id and deletes its leases and
// heartbeat, unless its heartbeat moved from beat since it was judged dead.
func (l *Ledger) reconcileIn(tx store.Tx, id, beat string, now time.Time) error {
	ib := tx.Bucket(bucketInstances)
	if v := ib.Get([]byte(id)); v != nil && string(v) != beat {
		return nil // it came back
	}
	var holds []holdRec
	if err := tx.Bucket(bucketHolds).ForEach(func(_, v []byte) error {
		var h holdRec
		if err := json.Unmarshal(v, &h); err != nil {
			return err
		}
		if h.Owner == id {
			holds = append(holds, h)
		}
		return nil
	}); err != nil {
		return err
	}
	for i := range holds {
		if err := l.commit(tx, deadGeneration(&holds[i], now), nil, id); err != nil {
			return err
		}
	}
	suffix := []byte("/" + id)
	var del [][]byte
	if err := tx.Bucket(bucketLeases).ForEach(func(k, _ []byte) error {
		if bytes.HasSuffix(k, suffix) {
			del = append(del, append([]byte{}, k...))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range del {
		if err := tx.Bucket(bucketLeases).Delete(k); err != nil {
			return err
		}
	}
	if l.opts.Logf != nil {
		l.opts.Logf("billing: reconciled instance %s: settled %d open holds, returned its leases", id, len(holds))
	}
	return ib.Delete([]byte(id))
}

// deadGeneration settles a hold whose process is gone at its last
// checkpoint, as recovery does on a single gateway (Reservation.settle):
// the charge is capped at the hold.
func deadGeneration(h *holdRec, now time.Time) *Generation {
	cost := h.Rates.Compute(h.Usage)
	total := usage.AddSat(cost.Total, h.Failed.Total)
	charge := min(total, h.Hold)
	g := &Generation{
		ID: h.ID, AccountID: h.Account, KeyHash: h.Key, Model: h.Model, Provider: h.Provider,
		Status: StatusInterrupted, Streamed: h.Streamed, Usage: h.Usage, Cost: cost,
		Attempts: h.FailedN + 1, FailedCost: h.Failed.Total, Charged: charge, Uncollected: total - charge,
		Held: h.Hold, LatencyMs: now.Sub(h.Created).Milliseconds(),
		Error:     "the gateway instance serving the request stopped before settling it",
		CreatedAt: h.Created, SettledAt: now,
	}
	if total > h.Hold {
		g.Anomaly = "usage at the last checkpoint costs " + total.String() + ", more than the " + h.Hold.String() + " the request authorised"
	}
	return g
}

// ahead reports whether a top-up is under way (tests).
func (l *Ledger) ahead() bool {
	busy := false
	l.eachAccount(func(a *account) { busy = busy || a.refilling.Load() })
	return busy
}
