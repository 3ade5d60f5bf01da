package flow

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/tidwall/gjson"
)

// subGroup is what a request shares with the chat sub-requests its modules
// make (CallEnv.Chat, chat_batch): the hold a module reserved for them
// (chat_reserve) and the signal that the first of them started, which lets
// a streaming request open its stream and send keep-alives while a plugin
// works (chat.go, streamPre).
type subGroup struct {
	mu       sync.Mutex
	envelope *billing.Envelope
	// allow is the allowance for sub-requests made without a reservation:
	// the max_sub_cost of each plugin granted chat or embed, held before
	// those plugins run (pluginfees.go). Such a sub-request's hold must
	// fit what is left of it.
	allow   *billing.Envelope
	started chan struct{} // made when first asked for (startedChan)
	closed  bool
}

// startedChan is closed when a sub-request is under way.
func (g *subGroup) startedChan() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started == nil {
		g.started = make(chan struct{})
		if g.closed {
			close(g.started)
		}
	}
	return g.started
}

// start marks that a sub-request is under way.
func (g *subGroup) start() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		if g.started != nil {
			close(g.started)
		}
	}
}

// requestEnv is what one client request's module calls share, made in one
// allocation instead of seven (most requests' modules make no host call):
// the host functions' env, what the request spends, the group its
// sub-requests share and their count.
type requestEnv struct {
	call  wasm.CallEnv
	spend spend
	group subGroup
	subs  atomic.Int32 // numbers the sub-requests (their ids)
}

// hold is the group's envelope, or nil.
func (g *subGroup) hold() *billing.Envelope {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.envelope
}

// subHold is the hold a sub-request draws from: the group's reservation
// (chat_reserve) when its module made one, else the allowance, which it
// must then fit (only). Neither: the account, as for a client's request
// (a module called outside a client's request).
func (g *subGroup) subHold() (env *billing.Envelope, only bool) {
	if g == nil {
		return nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.envelope != nil {
		return g.envelope, false
	}
	return g.allow, g.allow != nil
}

// setAllowance makes env the group's allowance for sub-requests, releasing
// the one before (the router's, once it ran).
func (g *subGroup) setAllowance(env *billing.Envelope) {
	g.mu.Lock()
	old := g.allow
	g.allow = env
	g.mu.Unlock()
	old.Release()
}

// release returns what is left of the envelope and the allowance to the
// account.
func (g *subGroup) release() {
	if g != nil {
		g.hold().Release()
		g.setAllowance(nil)
	}
}

// reserveFor is CallEnv.Reserve for a request (abi chat_reserve): it
// estimates the worst case of every planned call at the endpoint routing
// would try first — (prompt + max output) at its prices, times the call's
// turns (a member with server tools makes up to max_tool_calls + 1), plus
// the fee ceiling for each of its tool calls (turns - 1) — and
// holds the sum against the account before any call runs. The request's
// sub-requests then draw their own holds from it. One reservation per
// request.
func (s *Core) reserveFor(parent *Request) func(ctx context.Context, plan []byte) (int, []byte, int, error) {
	return func(ctx context.Context, plan []byte) (int, []byte, int, error) {
		fail := func(e *apierr.Error) (int, []byte, int, error) { return e.Status, e.Envelope(nil), 0, nil }
		if !jsonwalk.ValidBytes(plan) {
			return fail(apierr.BadRequest("plan", "the chat_reserve plan is not JSON"))
		}
		calls := gjson.GetBytes(plan, "calls").Array()
		if len(calls) == 0 || len(calls) > abi.MaxChatReserve {
			return fail(apierr.BadRequest("plan.calls", "must hold 1 to %d calls, got %d", abi.MaxChatReserve, len(calls)))
		}
		var total billing.Nanos
		turns := 0
		for i, c := range calls {
			cost, n, aerr := s.worstCase(parent, c)
			if aerr != nil {
				aerr.Message = fmt.Sprintf("plan.calls[%d]: %s", i, aerr.Message)
				return fail(aerr)
			}
			total += cost
			turns += n
		}
		g := parent.group
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.envelope != nil {
			return fail(apierr.New(http.StatusConflict, "this request already reserved its sub-requests"))
		}
		env, aerr := s.Ledger.Hold(parent.Key, total)
		if aerr != nil {
			return fail(aerr)
		}
		g.envelope = env
		return http.StatusOK, []byte(fmt.Sprintf(`{"held":%s,"calls":%d}`, total.USD(), turns)), turns, nil
	}
}

// worstCase is one planned call's worst-case cost and its number of turns.
func (s *Core) worstCase(parent *Request, c gjson.Result) (billing.Nanos, int, *apierr.Error) {
	model := c.Get("model").Str
	prompt, maxOut, turns := c.Get("prompt_tokens").Int(), c.Get("max_tokens").Int(), int(c.Get("turns").Int())
	switch {
	case model == "":
		return 0, 0, apierr.BadRequest("model", "is required")
	case prompt < 0 || maxOut < 0 || turns < 0 || turns > validate.MaxToolCalls+1:
		return 0, 0, apierr.BadRequest("", "prompt_tokens and max_tokens must be >= 0 and turns 0 to %d", validate.MaxToolCalls+1)
	}
	turns = max(turns, 1)
	// The model as a client's request names it: aliases and variants are
	// resolved the same way.
	body := []byte(`{"model":` + c.Get("model").Raw + `,"messages":[{"role":"user","content":"."}]}`)
	vr, aerr := validate.Chat(body)
	if aerr == nil {
		vr, aerr = s.normalizeChat(vr)
	}
	if aerr != nil {
		return 0, 0, aerr
	}
	acct := s.Keys.Providers(parent.Key.AccountID)
	// Routed without the prompt estimate: an estimate is not a reason to
	// refuse (each call is checked against its context when it runs); the
	// hold is capped at the context below.
	plan, aerr := s.Router.Plan(route.Request{Models: vr.Models, MaxOutputTokens: int(maxOut),
		AccountOnly: acct.Only, AccountIgnore: acct.Ignore})
	if aerr != nil {
		return 0, 0, aerr
	}
	ep := plan.Attempts[0]
	out := int(maxOut)
	if clamped, ok := route.ClampedOutput(ep, out); ok {
		out = clamped
	}
	if out == 0 {
		out = ep.MaxOutput
	}
	if out == 0 {
		out = ep.ContextLength
	}
	p := prompt
	if ep.ContextLength > 0 {
		p = min(p, int64(ep.ContextLength))
	}
	one := billing.RatesOf(ep.Price).WorstCase(p, int64(out), 0)
	// A call of several turns runs server tools: up to turns-1 calls, each
	// held at the fee ceiling before it runs (limits.max_tool_fee_per_call).
	fees := s.feeCeiling() * billing.Nanos(turns-1)
	return one*billing.Nanos(turns) + fees, turns, nil
}
