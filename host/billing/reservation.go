package billing

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/usage"
)

// Reservation is the hold of one request, from Reserve to Settle. Its
// methods are safe for concurrent use (a stream's reader and its
// cancellation path may both settle; the first wins).
type Reservation struct {
	l       *Ledger
	acct    *account
	key     *keyState
	ID      string // generation id = completion id
	keyHash string
	keyName string
	limit   *int64
	reset   string
	created time.Time
	// recovered marks a hold found on disk at start: its handler is gone.
	recovered   bool
	insurable   bool              // Request.Insurable
	attribution usage.Attribution // Request.Attribution
	promptEst   int64             // the prompt bound before any context cap
	maxOut      int64             // output bound of the current endpoint, all choices
	images      int64
	choices     int64
	streamed    bool

	firstToken atomic.Int64 // unix nanos of the first token, 0 until then

	settleMu sync.Mutex // serialises Settle; held across the durable write
	result   *Generation

	// Guarded by acct.mu.
	hold       Nanos
	rates      Rates
	model      string
	provider   string
	failedN    int
	failedCost Cost
	checkpoint Usage
	done       bool
	fees       []Fee // server-tool fees (AddFees)
	feeTotal   Nanos
	feeHold    Nanos     // held for fees not yet reported (HoldFees)
	env        *Envelope // the group hold the reservation draws from (Request.Envelope)
	notes      string    // anomalies the caller saw (Note), for the record
}

// Outcome is how a request ended, for Settle.
type Outcome struct {
	// Status is one of the Status constants; empty means StatusSuccess.
	Status string
	// Usage is what the upstream reported for the attempt that served the
	// request (the final attempt), or what the gateway counted when it
	// reported none (set Usage.Estimated). For a stream the client
	// abandoned, the usage of what was generated so far.
	Usage        Usage
	FinishReason string
	// Provider overrides the provider slug recorded (normally set by
	// Reserve and Retarget).
	Provider string
	// Latency is the time from receiving the request to its end; zero means
	// the time since Reserve.
	Latency time.Duration
	// PluginTime is the wall time the request's plugin hooks took.
	PluginTime time.Duration
	// Error is a short description of the failure, for StatusError.
	Error string
	// CacheHitOf names the generation a response-cache hit replayed
	// (Generation.CacheHitOf).
	CacheHitOf string
}

// holdRec is an open reservation on disk.
type holdRec struct {
	ID        string    `json:"id"`
	Account   string    `json:"account"`
	Key       string    `json:"key"`
	KeyName   string    `json:"key_name"`
	Limit     *int64    `json:"limit,omitempty"`
	Reset     string    `json:"reset,omitempty"`
	Model     string    `json:"model"`
	Provider  string    `json:"provider"`
	Streamed  bool      `json:"streamed,omitempty"`
	Hold      Nanos     `json:"hold"`
	Rates     Rates     `json:"rates"`
	Created   time.Time `json:"created"`
	FailedN   int       `json:"failed_n,omitempty"`
	Failed    Cost      `json:"failed"`
	Usage     Usage     `json:"usage"` // last checkpoint of the current attempt
	PromptEst int64     `json:"prompt_est"`
	MaxOut    int64     `json:"max_out"`
	Choices   int64     `json:"choices,omitempty"`
	Images    int64     `json:"images,omitempty"`
	// Owner is the InstanceID of the process that took the hold.
	Owner string `json:"owner,omitempty"`
}

// record snapshots r for disk; acct.mu is held.
func (r *Reservation) record() *holdRec {
	return &holdRec{
		ID: r.ID, Account: r.acct.id, Key: r.keyHash, KeyName: r.keyName, Limit: r.limit, Reset: r.reset,
		Model: r.model, Provider: r.provider, Streamed: r.streamed, Hold: r.hold, Rates: r.rates, Created: r.created,
		FailedN: r.failedN, Failed: r.failedCost, Usage: r.checkpoint, PromptEst: r.promptEst, MaxOut: r.maxOut,
		Choices: r.choices, Images: r.images, Owner: r.l.opts.InstanceID,
	}
}

// put writes the hold unless the request is already settled (a settlement
// committed first makes the hold obsolete).
func (h *holdRec) put(tx store.Tx) error {
	if tx.Bucket(bucketGenerations).Get([]byte(h.ID)) != nil {
		return nil
	}
	return tx.Bucket(bucketHolds).Put([]byte(h.ID), h.appendJSON(make([]byte, 0, 512)))
}

// settleOp is the writer operation that commits g, already encoded as rec
// when the journal holds it (nil: encoded at commit).
func (l *Ledger) settleOp(g *Generation, rec []byte) op {
	owner := l.leaseOwner()
	o := op{fn: func(tx store.Tx) error { return l.commit(tx, g, rec, owner) }, settles: g.ID, gen: g}
	if l.shared {
		o.reads = l.commitReads(g, owner)
	}
	return o
}

// reads appends what put reads (writer.go, op.reads); the hold itself
// too, for Checkpoint.
func (h *holdRec) reads(dst []store.Ref) []store.Ref {
	return append(dst, store.Ref{Bucket: bucketGenerations, Key: []byte(h.ID)},
		store.Ref{Bucket: bucketHolds, Key: []byte(h.ID)})
}

// putHold queues the write of a hold record.
func (l *Ledger) putHold(h *holdRec) { l.queueHold(h, h.put) }

// queueHold queues fn, a write of the hold record h, marked as such (a
// group that settles h skips it) and saying what it reads.
func (l *Ledger) queueHold(h *holdRec, fn func(store.Tx) error) {
	o := op{fn: fn, hold: h.ID}
	if l.shared {
		o.reads = h.reads
	}
	l.w.submit(o)
}

// Hold is the amount currently held.
func (r *Reservation) Hold() Nanos {
	r.acct.mu.Lock()
	defer r.acct.mu.Unlock()
	return r.hold
}

// FailedCost is what the failed attempts so far cost.
func (r *Reservation) FailedCost() Nanos {
	r.acct.mu.Lock()
	defer r.acct.mu.Unlock()
	return r.failedCost.Total
}

func (r *Reservation) expiry() time.Time {
	d := r.l.opts.RequestDeadline
	if r.recovered {
		return r.created.Add(d)
	}
	return r.created.Add(2 * d)
}

func (r *Reservation) checkpointUsage() Usage {
	r.acct.mu.Lock()
	defer r.acct.mu.Unlock()
	return r.checkpoint
}

// FirstToken records the time to first token; only the first call counts.
func (r *Reservation) FirstToken() {
	r.firstToken.CompareAndSwap(0, r.l.opts.Now().UnixNano())
}

// Target is the endpoint a fallback attempt goes to, for Retarget.
type Target struct {
	Provider string
	Price    catalog.Price
	// MaxOutputTokens is the most one choice may generate there (the
	// request's bound, else the endpoint's maximum output); ContextLength,
	// when > 0, caps the prompt and output bounds as in Request.
	MaxOutputTokens int64
	ContextLength   int64
}

// Retarget moves the hold to another endpoint before a fallback attempt:
// the new hold is what failed attempts already cost plus the worst case at
// the new endpoint — its price, and its output and context bounds, which
// may be larger than the first endpoint's. It refuses with 402 (and keeps
// the old hold) when the increase does not fit.
func (r *Reservation) Retarget(t Target) *apierr.Error {
	return r.l.holdRetried(func() (*apierr.Error, bool) { return r.retarget(t) })
}

// retarget is one try of Retarget; unfit: the lease was there but the
// hold did not fit (taken meanwhile).
func (r *Reservation) retarget(t Target) (e *apierr.Error, unfit bool) {
	rates := RatesOf(t.Price)
	prompt, output := Request{PromptTokens: r.promptEst, MaxOutputTokens: t.MaxOutputTokens,
		ContextLength: t.ContextLength, Choices: r.choices}.bound()
	a := r.acct
	if r.l.shared {
		a.mu.Lock()
		delta := usage.AddSat(usage.AddSat(r.failedCost.Total, rates.WorstCase(prompt, output, r.images)), r.feeHold) - r.hold
		a.mu.Unlock()
		if delta > 0 {
			if e := r.l.leaseFor(a, r.keyHash, r.limit, r.reset, r.keyName, delta, nil); e != nil {
				return e, false
			}
		}
	}
	a.mu.Lock()
	if r.done {
		a.mu.Unlock()
		return apierr.New(http.StatusInternalServerError, "reservation %s is already settled", r.ID), false
	}
	// The fees held (Request.Fees) move with the tokens' worst case.
	hold := usage.AddSat(usage.AddSat(r.failedCost.Total, rates.WorstCase(prompt, output, r.images)), r.feeHold)
	if delta := hold - r.hold; delta > 0 {
		if e := r.l.fits(a, r.key, r, delta, r.l.now()); e != nil {
			a.mu.Unlock()
			return e, true
		}
	}
	a.held += hold - r.hold
	r.key.held += hold - r.hold
	r.hold, r.rates, r.provider, r.maxOut = hold, rates, t.Provider, output
	r.checkpoint = Usage{}
	rec := r.record()
	a.mu.Unlock()
	r.l.putHold(rec)
	return nil, false
}

// HoldFees grows the hold by amount before tools run whose fees are not
// known yet (the server-tool loop holds the per-call ceiling for each call
// of a turn). It refuses with 402, holding nothing more, when the account's
// available balance or the key's remaining limit cannot cover it. A
// reservation drawn from a group's hold (Request.Envelope) draws the fees
// from it first. Fees added later come out of it first (AddFees).
func (r *Reservation) HoldFees(amount Nanos) *apierr.Error {
	if amount <= 0 {
		return nil
	}
	return r.l.holdRetried(func() (*apierr.Error, bool) { return r.holdFees(amount) })
}

// holdFees is one try of HoldFees; unfit as in retarget.
func (r *Reservation) holdFees(amount Nanos) (e *apierr.Error, unfit bool) {
	a := r.acct
	if r.l.shared {
		if e := r.l.leaseFor(a, r.keyHash, r.limit, r.reset, r.keyName, amount, r.env); e != nil {
			return e, false
		}
	}
	a.mu.Lock()
	if r.done {
		a.mu.Unlock()
		return apierr.New(http.StatusInternalServerError, "reservation %s is already settled", r.ID), false
	}
	drawn := r.env.draw(a, r.key, amount) // a group's hold (a fusion's) covers its calls' fees first
	if e := r.l.fits(a, r.key, r, amount, r.l.now()); e != nil {
		r.env.undraw(drawn)
		a.mu.Unlock()
		return e, true
	}
	a.held += amount
	r.key.held += amount
	r.hold += amount
	r.feeHold += amount
	rec := r.record()
	a.mu.Unlock()
	r.l.putHold(rec)
	return nil, false
}

// DrawFees moves up to amount from e — a hold taken for this request's
// fees before the code that reports them ran (a router plugin's, a
// post_response hook's in the server-tool loop) — into this reservation's
// fee hold, so the fees AddFees then takes are covered by money held
// before they were incurred, not by whatever the account has free by then.
// It returns what it moved; e must hold for the same key.
func (r *Reservation) DrawFees(e *Envelope, amount Nanos) Nanos {
	a := r.acct
	a.mu.Lock()
	if r.done {
		a.mu.Unlock()
		return 0
	}
	n := e.draw(a, r.key, amount)
	a.held += n
	r.key.held += n
	r.hold += n
	r.feeHold += n
	rec := r.record()
	a.mu.Unlock()
	if n > 0 {
		r.l.putHold(rec)
	}
	return n
}

// FeesHeld is what the hold still keeps for fees not yet reported
// (Request.Fees and HoldFees, less the fees AddFees took from it).
func (r *Reservation) FeesHeld() Nanos {
	a := r.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	return r.feeHold
}

// Note records an anomaly the caller saw (a tool fee above the operator's
// ceiling, charged at it) on the generation record, beside any the
// settlement finds.
func (r *Reservation) Note(anomaly string) {
	a := r.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.done || anomaly == "" {
		return
	}
	if r.notes != "" {
		r.notes += "; "
	}
	r.notes += anomaly
}

// AddFees adds server-tool fees to the charge. The tools have run already,
// so it never refuses: the fees come out of what HoldFees held for them,
// and past that the hold grows by as much as the account's available
// balance and the key's remaining limit allow; what does not fit is
// recorded as Uncollected at settlement, as any cost beyond the hold is
// (docs/server-tools.md).
func (r *Reservation) AddFees(fees ...Fee) {
	var sum Nanos
	for _, f := range fees {
		sum = usage.AddSat(sum, f.Cost)
	}
	a := r.acct
	a.mu.Lock()
	if r.done || len(fees) == 0 {
		a.mu.Unlock()
		return
	}
	covered := min(sum, r.feeHold)
	r.feeHold -= covered
	freeA, freeK := r.l.freeOf(a, r.key, r.limit, r.reset, r.l.now())
	grow := min(sum-covered, max(freeA, 0), max(freeK, 0))
	a.held += grow
	r.key.held += grow
	r.hold += grow
	r.fees = append(r.fees, fees...)
	r.feeTotal = usage.AddSat(r.feeTotal, sum)
	rec := r.record()
	a.mu.Unlock()
	r.l.putHold(rec)
}

// AddFailedAttempt records an attempt that failed; when the provider bills
// failed attempts, u is what it billed and its cost at the current price is
// added to the charge. Call it before Retarget to the next endpoint.
func (r *Reservation) AddFailedAttempt(u Usage) {
	a := r.acct
	a.mu.Lock()
	if r.done {
		a.mu.Unlock()
		return
	}
	r.failedN++
	r.failedCost = r.failedCost.Add(r.rates.Compute(u))
	r.checkpoint = Usage{}
	rec := r.record()
	a.mu.Unlock()
	r.l.putHold(rec)
}

// Checkpoint records the usage of the current attempt so far (a long
// stream) without charging it. If the gateway dies before Settle, recovery
// charges the last checkpoint instead of nothing. It does not wait on disk.
func (r *Reservation) Checkpoint(u Usage) {
	a := r.acct
	a.mu.Lock()
	if r.done {
		a.mu.Unlock()
		return
	}
	r.checkpoint = u
	rec := r.record()
	a.mu.Unlock()
	r.l.queueHold(rec, func(tx store.Tx) error {
		if tx.Bucket(bucketHolds).Get([]byte(rec.ID)) == nil {
			return nil // settled already
		}
		return rec.put(tx)
	})
}

// Settle charges the actual cost and writes the generation record; it
// returns once both are durable. The cost is the final attempt's usage at
// the current endpoint's price plus billed failed attempts. A cost above the
// hold is charged as far as the account's available balance and the key's
// remaining limit allow, the rest is recorded as Uncollected: neither ever
// goes below zero.
//
// Settle is idempotent: once it has succeeded, further calls return the
// same record and charge nothing. If it fails (the disk write failed) the
// charge is undone in memory, the hold is released and the reservation
// stays open; calling Settle again retries.
func (r *Reservation) Settle(o Outcome) (*Generation, error) { return r.settle(o, false) }

// Settled reports whether the reservation has been settled (a later Settle
// is a no-op), so callers can skip computing an outcome nobody will use.
func (r *Reservation) Settled() bool {
	r.settleMu.Lock()
	defer r.settleMu.Unlock()
	return r.result != nil
}

// Insured reports whether a generation's inference is covered by
// zero-completion insurance, as OpenRouter defines it
// (openrouter.ai/docs, "Zero Completion Insurance"): the answer produced no
// completion tokens and its finish reason is empty or "error". Its
// inference cost (the final attempt's and the failed attempts') is not
// charged; server-tool fees are, since the tools ran.
// Reservation.Settle applies it.
func Insured(u Usage, finish string) bool {
	return u.CompletionTokens == 0 && (finish == "" || finish == "error")
}

func (r *Reservation) settle(o Outcome, expired bool) (*Generation, error) {
	r.settleMu.Lock()
	defer r.settleMu.Unlock()
	if r.result != nil {
		return r.result, nil
	}
	l, a := r.l, r.acct
	now := l.now()
	if o.Status == "" {
		o.Status = StatusSuccess
	}
	if o.Latency <= 0 {
		o.Latency = now.Sub(r.created)
	}
	a.mu.Lock()
	if r.done { // settled by the expiry path while Settle waited
		a.mu.Unlock()
		return r.result, nil
	}
	ks := r.key
	cost := r.rates.Compute(o.Usage)
	inference := usage.AddSat(cost.Total, r.failedCost.Total)
	var insured Nanos
	// Only an outcome the request reports is insured: a hold the janitor
	// expires or recovery settles after a crash charges at least what its
	// last checkpoint says (the crash-recovery invariant), whatever came
	// after it. A request its client abandoned is the client's choice, not
	// a failed completion: it is charged as docs/billing.md says (the
	// prompt the provider received).
	if r.insurable && !expired && o.Status != StatusCancelled && Insured(o.Usage, o.FinishReason) {
		insured, inference = inference, 0
	}
	total := usage.AddSat(inference, r.feeTotal)
	charge := min(total, r.hold)
	anomaly := r.anomaly(o, total, inference)
	g := &Generation{
		ID: r.ID, AccountID: a.id, KeyHash: r.keyHash, Model: r.model, Provider: r.provider,
		Status: o.Status, FinishReason: o.FinishReason, Streamed: r.streamed, Usage: o.Usage, Cost: cost,
		Attempts: r.failedN + 1, FailedCost: r.failedCost.Total, Charged: charge, Uncollected: total - charge, Insured: insured,
		Held: r.hold, LatencyMs: o.Latency.Milliseconds(), Error: o.Error, Anomaly: anomaly,
		PluginUs: o.PluginTime.Microseconds(), CreatedAt: r.created, SettledAt: now,
		Fees: r.fees, FeesCost: r.feeTotal, Attribution: r.attribution, CacheHitOf: o.CacheHitOf,
	}
	if o.Provider != "" {
		g.Provider = o.Provider
	}
	if ft := r.firstToken.Load(); ft != 0 {
		g.TTFTMs = (ft - r.created.UnixNano()) / int64(time.Millisecond)
	}
	hold := r.hold
	a.held -= hold
	ks.held -= hold
	r.hold = 0
	l.charge(a, ks, charge, now)
	r.done = true
	delete(a.open, r.ID)
	a.mu.Unlock()

	if l.opts.AsyncSettle {
		if l.j != nil {
			// Durable in the journal before it is acknowledged; the store
			// commits it with the next window (journal.go). A journal that
			// cannot write falls back to waiting for the store. The store
			// keeps the very bytes the journal holds: the record is
			// encoded once.
			owner := l.leaseOwner()
			payload := journalPayload(owner, g)
			o := l.settleOp(g, payload[len(owner)+1:])
			seg, err := l.j.append(payload)
			if err == nil {
				o.journaled = seg
				l.w.submit(o)
				r.result = g
				return g, nil
			}
			return r.settleDurably(o, charge, now)
		}
		o := l.settleOp(g, nil)
		// Acknowledge from memory; the group-committing writer makes it
		// durable within one commit (see Options.AsyncSettle).
		l.w.submit(o)
		r.result = g
		return g, nil
	}
	return r.settleDurably(l.settleOp(g, nil), charge, now)
}

// anomaly is what the generation record tells the operator (syctl
// audit) about a settlement of total, inference of it: usage costing more
// than the hold, zero usage reported, and the reservation's notes. The
// hold is the most the caller authorised: a bound on the prompt and on
// every choice's output. Usage that costs more than it is not something
// the caller asked for (an upstream that over-reports, or generates past
// max_tokens), so the excess is never charged; it is recorded here.
func (r *Reservation) anomaly(o Outcome, total, inference Nanos) string {
	anomaly := ""
	if total > r.hold {
		anomaly = fmt.Sprintf("usage reported by %s costs %s, more than the %s the request authorised", r.provider, total, r.hold)
		if r.feeTotal > 0 && inference <= r.hold {
			anomaly = fmt.Sprintf("server-tool fees of %s went past the account's available credit", r.feeTotal)
		}
	}
	if anomaly == "" && o.Usage.ZeroReported {
		anomaly = fmt.Sprintf("%s reported zero usage; charged the gateway's count of what was sent and received", r.provider)
	}
	if r.notes != "" {
		if anomaly != "" {
			anomaly += "; "
		}
		anomaly += r.notes
	}
	return anomaly
}

// settleDurably queues the settlement o, already charged in memory, and
// returns once the store has committed it; settleMu is held.
func (r *Reservation) settleDurably(o op, charge Nanos, now time.Time) (*Generation, error) {
	l, a, ks := r.l, r.acct, r.key
	err := l.w.doOp(o)
	if err != nil {
		// Not durable: undo the charge and reopen with nothing held, so a
		// retry charges from the available balance and never overdraws.
		a.mu.Lock()
		l.charge(a, ks, -charge, now)
		r.done = false
		a.open[r.ID] = r
		a.mu.Unlock()
		return nil, err
	}
	r.result = o.gen
	return o.gen, nil
}

// charge debits amount (negative: credits back) at time t; a.mu is held.
// In cluster mode it comes out of this instance's leases.
func (l *Ledger) charge(a *account, ks *keyState, amount Nanos, t time.Time) {
	a.balance -= amount
	a.usage += amount
	ks.usage.add(amount, t)
	if l.shared {
		a.lease -= amount
		ks.lease -= amount
	}
}

// leaseOwner is the instance whose leases settlements draw on: this one in
// cluster mode, none on a single gateway.
func (l *Ledger) leaseOwner() string {
	if l.shared {
		return l.opts.InstanceID
	}
	return ""
}

const generationsFill = 0.95

// commitSettlement is the one transaction that moves money: it debits the
// account and the key, deletes the hold and writes the generation record,
// all or nothing. A record already present means it was committed before,
// and nothing happens.
func commitSettlement(tx store.Tx, g *Generation, rec []byte, leaseOwner string) (written bool, err error) {
	gens := tx.Bucket(bucketGenerations)
	// Generation records are only appended, in id order (NewID): pages
	// filled to 95% instead of bbolt's 50% split less and take half the
	// space.
	gens.SetFillPercent(generationsFill)
	// One copy of the id for the three calls: the store keeps Put's key
	// until the commit, and nothing changes it.
	id := []byte(g.ID)
	if gens.Get(id) != nil {
		return false, nil
	}
	if err := updateAccount(tx, g.AccountID, func(r *accountRec) {
		r.Balance -= g.Charged
		r.Usage += g.Charged
	}); err != nil {
		return false, err
	}
	if err := updateKeyUsage(tx, g.KeyHash, g.AccountID, func(u *keyUsage) {
		u.add(g.Charged, g.SettledAt)
	}); err != nil {
		return false, err
	}
	if err := tx.Bucket(bucketHolds).Delete(id); err != nil {
		return false, err
	}
	if leaseOwner != "" {
		// Cluster mode: the charge was held against the owner's leases.
		if err := addLease(tx, 'a', g.AccountID, leaseOwner, -g.Charged); err != nil {
			return false, err
		}
		if err := addLease(tx, 'k', g.KeyHash, leaseOwner, -g.Charged); err != nil {
			return false, err
		}
	}
	if rec == nil {
		// A record is ~650 bytes (a 1 KB chat's, measured): room for one
		// with long names or an error message, so it is built without
		// outgrowing its buffer into a second one.
		rec = appendGeneration(make([]byte, 0, 1024), g)
	}
	return true, gens.Put(id, rec)
}

// recover turns the holds found on disk into open reservations again and
// settles at once those of a process that is gone (every hold another
// instance took: bbolt admits one process per file), at their last
// checkpoint, with status interrupted: their handlers died with that
// process, so nothing will settle them, and keeping their money held until
// the request deadline would refuse the account's next requests with 402
// for minutes. A hold whose generation record exists was settled already
// and is dropped.
func (l *Ledger) recover(holds []holdRec) error {
	var stale []string
	var dead []*Reservation
	for i := range holds {
		h := &holds[i]
		if _, err := l.Generation(h.ID); err == nil {
			stale = append(stale, h.ID)
			continue
		}
		a := l.account(h.Account)
		r := &Reservation{
			l: l, acct: a, ID: h.ID, keyHash: h.Key, keyName: h.KeyName, limit: h.Limit, reset: h.Reset,
			created: h.Created, recovered: true, promptEst: h.PromptEst, maxOut: h.MaxOut, streamed: h.Streamed,
			images: h.Images, choices: max(h.Choices, 1),
			hold: h.Hold, rates: h.Rates, model: h.Model, provider: h.Provider, failedN: h.FailedN,
			failedCost: h.Failed, checkpoint: h.Usage,
		}
		a.mu.Lock()
		r.key = a.key(h.Key)
		a.held += r.hold
		r.key.held += r.hold
		a.open[r.ID] = r
		a.mu.Unlock()
		if h.Owner != l.opts.InstanceID {
			dead = append(dead, r)
		}
	}
	if len(stale) > 0 {
		if err := l.w.do(func(tx store.Tx) error {
			for _, id := range stale {
				if err := tx.Bucket(bucketHolds).Delete([]byte(id)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for _, r := range dead {
		if _, err := r.settle(Outcome{Status: StatusInterrupted, Usage: r.checkpointUsage(),
			Error: "the gateway stopped before the request was settled"}, true); err != nil {
			return err
		}
	}
	return nil
}
