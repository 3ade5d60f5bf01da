package wasm

import (
	"context"
	"sync/atomic"
)

// CallEnv is the request a module call runs for, as the host functions see
// it. The server makes one per client request and puts it in the ctx of
// every Module.Call it makes for that request (pipeline hooks, tool calls),
// so budgets count per request, across every module call.
//
// A call without an env (adapters, tests, anything that did not set one)
// runs with an empty one of its own: account "" (kv is scoped to it), no
// Chat (the chat host function answers HostDenied), and the engine's
// default budgets counted for that call alone.
type CallEnv struct {
	// Account is the account the request is billed to: kv entries are
	// scoped to it. KeyID and RequestID are for the server's own use (a
	// Chat implementation finds the caller through them).
	Account, KeyID, RequestID string
	// Chat runs a chat request body as a sub-request of this request
	// (routing, billing, the pipeline, the depth limit and the parent's
	// deadline are its business) and returns the response's HTTP status
	// and body. nil: chat is refused with HostDenied. An error is a call
	// that could not run at all (HostFailed, with its message); an API
	// error is a status and body like any response.
	Chat func(ctx context.Context, body []byte) (status int, resp []byte, err error)
	// Embed runs an embeddings request body as a sub-request of this
	// request, like Chat (charged to its key, counted against its rate
	// limits; each call takes one of the request's chat calls). nil: embed
	// is refused with HostDenied.
	Embed func(ctx context.Context, body []byte) (status int, resp []byte, err error)
	// Reserve holds the worst-case cost of the chat sub-requests a module
	// plans (chat_reserve: the plan JSON of docs/abi.md) before any runs;
	// the request's later sub-requests draw their holds from it. It returns
	// the status and body the module reads and the number of calls
	// reserved. nil: chat_reserve is refused with HostDenied.
	Reserve func(ctx context.Context, plan []byte) (status int, resp []byte, calls int, err error)
	// HTTPCalls and ChatCalls are the request's budgets of http_request
	// and chat calls (0: the engine's defaults, Config.HTTP.CallsPerRequest
	// and Config.ChatCallsPerRequest). Past them the call answers
	// HostBudget. HTTPCalls < 0: none at all (the publish-time guest
	// check, which must not reach the network for a module not yet
	// published).
	HTTPCalls, ChatCalls int

	httpUsed, chatUsed atomic.Int64
	// chatRaised is a chat budget a reservation raised (0: none).
	chatRaised atomic.Int64
}

// chatLimit is the request's chat budget: ChatCalls, else def, or what a
// reservation raised it to.
func (e *CallEnv) chatLimit(def int) int {
	limit := e.ChatCalls
	if limit <= 0 {
		limit = def
	}
	return max(limit, int(e.chatRaised.Load()))
}

// raiseChatLimit lets the request make n chat calls in all.
func (e *CallEnv) raiseChatLimit(n int) {
	for {
		cur := e.chatRaised.Load()
		if int64(n) <= cur || e.chatRaised.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

// HTTPCallsUsed and ChatCallsUsed report what the request has spent, for
// metadata and tests.
func (e *CallEnv) HTTPCallsUsed() int { return int(e.httpUsed.Load()) }
func (e *CallEnv) ChatCallsUsed() int { return int(e.chatUsed.Load()) }

// spendN takes n calls of budget limit from used, all or none.
func spendN(used *atomic.Int64, n, limit int) bool {
	if used.Add(int64(n)) > int64(limit) {
		used.Add(-int64(n))
		return false
	}
	return true
}

// spend takes one call of budget limit from used; false once spent.
func spend(used *atomic.Int64, limit int) bool {
	if used.Add(1) > int64(limit) {
		used.Add(-1)
		return false
	}
	return true
}

type callEnvKey struct{}

// WithCallEnv returns ctx carrying env for the module calls made with it.
func WithCallEnv(ctx context.Context, env *CallEnv) context.Context {
	return context.WithValue(ctx, callEnvKey{}, env)
}

// CallEnvFrom returns the env ctx carries, or nil.
func CallEnvFrom(ctx context.Context) *CallEnv {
	env, _ := ctx.Value(callEnvKey{}).(*CallEnv)
	return env
}
