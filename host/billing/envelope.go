package billing

import (
	"net/http"
	"sync"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/keys"
)

// Envelope is an amount held for a group of requests before the first of
// them starts: a module's planned chat sub-requests (a fusion's panel,
// judge and final answer, abi chat_reserve). The group either starts
// covered or not at all — a fusion the account cannot pay for is refused
// before any model is called, instead of failing after the panel was
// charged. Each request of the group still takes its own Reservation;
// Reserve draws that hold from the envelope first (Request.Envelope), so
// the account is not asked for the money twice. What is left returns to
// the account on Release.
//
// An envelope lives in memory only: it is never charged, so a crash that
// loses it loses nothing but a hold (the reservations drawn from it are
// persisted as always).
type Envelope struct {
	l    *Ledger
	acct *account
	key  *keyState
	// Guarded by acct.mu.
	left   Nanos
	closed bool
	once   sync.Once
}

// Hold holds amount against the key's account and limit for a group of
// requests, or refuses with the 402 Reserve would give (reason
// insufficient_credits or key_limit_exceeded in its metadata).
func (l *Ledger) Hold(k *keys.Key, amount Nanos) (*Envelope, *apierr.Error) {
	if l.closed.Load() {
		return nil, apierr.New(http.StatusServiceUnavailable, "the gateway is shutting down")
	}
	a := l.account(k.AccountID)
	probe := &Reservation{limit: k.Limit, reset: k.LimitReset, keyName: k.Name}
	var env *Envelope
	e := l.holdRetried(func() (*apierr.Error, bool) {
		if e := l.leaseFor(a, k.Hash, k.Limit, k.LimitReset, k.Name, amount, nil); e != nil {
			return e, false
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		ks := a.key(k.Hash)
		if e := l.fits(a, ks, probe, amount, l.now()); e != nil {
			return e, true
		}
		a.held += amount
		ks.held += amount
		env = &Envelope{l: l, acct: a, key: ks, left: amount}
		return nil, false
	})
	if e != nil {
		return nil, e
	}
	return env, nil
}

// Left is what the envelope still holds.
func (e *Envelope) Left() Nanos {
	if e == nil {
		return 0
	}
	e.acct.mu.Lock()
	defer e.acct.mu.Unlock()
	return e.left
}

// draw moves up to amount of the envelope's hold to a reservation of the
// same key; a.mu is held. It returns what it moved.
func (e *Envelope) draw(a *account, ks *keyState, amount Nanos) Nanos {
	if e == nil || e.acct != a || e.key != ks || e.closed || amount <= 0 {
		return 0
	}
	n := min(amount, e.left)
	e.left -= n
	a.held -= n
	ks.held -= n
	return n
}

// undraw returns n drawn by a reservation that was then refused; a.mu is
// held.
func (e *Envelope) undraw(n Nanos) {
	if n == 0 {
		return
	}
	e.left += n
	e.acct.held += n
	e.key.held += n
}

// Release returns what is left to the account. Safe to call more than once
// and on nil.
func (e *Envelope) Release() {
	if e == nil {
		return
	}
	e.once.Do(func() {
		e.acct.mu.Lock()
		defer e.acct.mu.Unlock()
		e.acct.held -= e.left
		e.key.held -= e.left
		e.left = 0
		e.closed = true
	})
}
