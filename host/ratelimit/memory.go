package ratelimit

import "time"

// Memory is the in-process Limiter; safe for concurrent use.
type Memory struct {
	epoch    time.Time
	keys     table
	accounts table
}

// NewMemory returns an empty in-memory limiter.
func NewMemory() *Memory {
	m := &Memory{epoch: time.Now()}
	m.keys.init()
	m.accounts.init()
	return m
}

var _ Limiter = (*Memory)(nil)

// since is now on the limiter's monotonic timeline.
func (m *Memory) since(now time.Time) int64 { return int64(now.Sub(m.epoch)) }

// lockBoth locks the key's and the account's subjects, key first, skipping
// evicted ones.
func (m *Memory) lockBoth(r Request, now int64) (k, a *subject) {
	for {
		k = m.keys.get(r.Key, now)
		a = m.accounts.get(r.Account, now)
		k.mu.Lock()
		a.mu.Lock()
		if !k.dead && !a.dead {
			return k, a
		}
		a.mu.Unlock()
		k.mu.Unlock()
	}
}

// Admit implements Limiter.
func (m *Memory) Admit(at time.Time, r Request) Decision {
	now := m.since(at)
	k, a := m.lockBoth(r, now)
	defer k.mu.Unlock()
	defer a.mu.Unlock()

	d := Decision{Allowed: true}
	var kReq, aReq, kTok, aTok int64
	// refuse records a refusal, keeping the longest wait.
	refuse := func(reason Reason, wait time.Duration) {
		if d.Allowed || wait > d.RetryAfter {
			d.Allowed, d.Reason, d.RetryAfter = false, reason, wait
		}
	}
	tokens := max(r.TokensEstimate, 0)
	checkRate := func(g gcra, limit, cost int64, reason Reason) int64 {
		if limit <= 0 {
			return g.tat
		}
		tat, wait := g.check(now, limit, cost)
		if wait > 0 {
			refuse(reason, time.Duration(wait))
		}
		return tat
	}
	kReq = checkRate(k.requests, r.KeyLimits.RequestsPerMinute, 1, KeyRequests)
	aReq = checkRate(a.requests, r.AccountLimits.RequestsPerMinute, 1, AccountRequests)
	kTok = checkRate(k.tokens, r.KeyLimits.TokensPerMinute, tokens, KeyTokens)
	aTok = checkRate(a.tokens, r.AccountLimits.TokensPerMinute, tokens, AccountTokens)
	if c := r.KeyLimits.Concurrent; c > 0 && k.inFlight >= c {
		refuse(KeyConcurrent, concurrentRetryHint)
	}
	if c := r.AccountLimits.Concurrent; c > 0 && a.inFlight >= c {
		refuse(AccountConcurrent, concurrentRetryHint)
	}

	if d.Allowed {
		k.requests.tat, a.requests.tat = kReq, aReq
		k.tokens.tat, a.tokens.tat = kTok, aTok
		k.inFlight++
		a.inFlight++
	}
	d.Limit, d.Remaining, d.Reset = report(d, now, k.requests.tat, a.requests.tat, r)
	return d
}

// Settle implements Limiter.
func (m *Memory) Settle(at time.Time, r Request, actualTokens int64) {
	now := m.since(at)
	k, a := m.lockBoth(r, now)
	defer k.mu.Unlock()
	defer a.mu.Unlock()
	k.inFlight = max(k.inFlight-1, 0)
	a.inFlight = max(a.inFlight-1, 0)
	estimate, actual := max(r.TokensEstimate, 0), max(actualTokens, 0)
	adjust(&k.tokens, r.KeyLimits.TokensPerMinute, estimate, actual, now)
	adjust(&a.tokens, r.AccountLimits.TokensPerMinute, estimate, actual, now)
}

// adjust moves TAT from what admission charged (the estimate, capped at the
// limit as in gcra.check) to the actual tokens: back for an over-estimate
// (never before now: an unused minute is not saved up), forward for an
// under-estimate (debt, however large).
func adjust(g *gcra, limit, estimate, actual, now int64) {
	if limit <= 0 {
		return
	}
	delta := actual - min(estimate, limit)
	if delta == 0 {
		return
	}
	g.tat += delta * interval(limit)
	if delta < 0 {
		g.tat = max(g.tat, now)
	}
}

// Subjects is the number of keys and accounts held (for tests and metrics).
func (m *Memory) Subjects() int { return m.keys.len() + m.accounts.len() }
