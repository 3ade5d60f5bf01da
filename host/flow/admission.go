package flow

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/ratelimit"
)

// Admission is one admitted request's place in its key's and account's
// rate limits (docs/ratelimit.md). It is given back once, by end, with
// the tokens the request really used (record): whatever way the request
// ends — answered, failed, streamed to the end, abandoned, answered by a
// plugin — the concurrent slot is freed and the token estimate corrected
// exactly once. A nil admission (no limiter) does nothing.
type Admission struct {
	lim    ratelimit.Limiter
	req    ratelimit.Request
	tokens atomic.Int64 // prompt + completion, as billed; 0 until recorded
	once   sync.Once
}

// Admit checks the key's and its account's rate limits for a request of
// about estimate tokens (its prompt; the completion is added at the end).
// header is given the X-RateLimit headers for the response (a refusal's
// Retry-After among them). Allowed, the caller must End the admission
// (NewRequest hands it to the Request, whose Close does); refused, it is
// a 429 and nothing is charged.
func (s *Core) Admit(key *keys.Key, estimate int64, header func(name, value string)) (*Admission, *apierr.Error) {
	if s.Limiter == nil {
		return nil, nil
	}
	// Tenants are held to the built-in defaults where the configuration
	// sets none; the operator's own account only to what is set.
	op := key.Operator || key.AccountID == s.Keys.OperatorAccount()
	r := ratelimit.Request{
		ID: ratelimit.NewID(), Key: key.Hash, Account: key.AccountID,
		KeyLimits:      s.RateDefaults.Key(key.RateLimits, op),
		AccountLimits:  s.RateDefaults.Account(s.Keys.RateLimits(key.AccountID), op),
		TokensEstimate: estimate,
	}
	if r.KeyLimits == (ratelimit.Limits{}) && r.AccountLimits == (ratelimit.Limits{}) {
		// Nothing to enforce (the default): no state, no headers. Requests
		// already in flight when a limit is set are not counted against it.
		return nil, nil
	}
	now := time.Now()
	d := s.Limiter.Admit(now, r)
	d.Headers(now, header)
	if !d.Allowed {
		return nil, rateLimited(d)
	}
	return &Admission{lim: s.Limiter, req: r}, nil
}

// rateLimited is the spec's 429 for a refused decision.
func rateLimited(d ratelimit.Decision) *apierr.Error {
	return &apierr.Error{Status: http.StatusTooManyRequests, Message: d.Message(), Metadata: map[string]any{
		"reason":              "rate_limited",
		"limit":               strings.ReplaceAll(string(d.Reason), " ", "_"),
		"retry_after_seconds": int64((d.RetryAfter + time.Second - 1) / time.Second),
	}}
}

// also admits one more upstream call made for the request a holds (a
// module's chat sub-request, a fusion member, a server-tool turn past the
// first) against the same key's and account's limits: each is a request
// of its own to the limits, with its own token estimate (issue 31 item 3:
// sub-requests made 1,800 upstream calls a second past a limit of 60 a
// minute). A call that runs while no other of the request's is in flight
// runs in the request's concurrent slot (slot false); each call beside
// another (parallel sub-requests) takes a slot of its own. A nil a (no
// limits apply) admits everything.
func (a *Admission) also(estimate int64, slot bool) (*Admission, *apierr.Error) {
	if a == nil {
		return nil, nil
	}
	r := a.req
	r.ID, r.TokensEstimate = ratelimit.NewID(), estimate
	if !slot {
		r.KeyLimits.Concurrent, r.AccountLimits.Concurrent = 0, 0
	}
	if d := a.lim.Admit(time.Now(), r); !d.Allowed {
		return nil, rateLimited(d)
	}
	return &Admission{lim: a.lim, req: r}, nil
}

// Record notes the usage the request is billed for; the last one counts.
func (a *Admission) Record(u billing.Usage) {
	if a != nil {
		a.tokens.Store(max(u.PromptTokens, 0) + max(u.CompletionTokens, 0))
	}
}

// End gives the admission back with the recorded tokens; only the first
// call counts.
func (a *Admission) End() {
	if a == nil {
		return
	}
	a.once.Do(func() { a.lim.Settle(time.Now(), a.req, a.tokens.Load()) })
}
