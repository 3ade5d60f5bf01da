package wasm

import "context"

// CallEnv is the environment of one client request that host functions
// called during it may use: who is paying, which request it is, and how to
// run a chat sub-request on its behalf (charged to the same key, counted
// in the request's usage). The server puts one in the ctx it hands to
// plugin and tool hooks.
type CallEnv struct {
	Account, KeyID, RequestID string
	// Chat runs body as a chat sub-request of this request and returns its
	// HTTP status and response body; nil when sub-requests are not allowed
	// (a sub-request's own environment: no recursion).
	Chat func(ctx context.Context, body []byte) (status int, resp []byte, err error)
}

type callEnvKey struct{}

// WithCallEnv returns ctx carrying env.
func WithCallEnv(ctx context.Context, env *CallEnv) context.Context {
	return context.WithValue(ctx, callEnvKey{}, env)
}

// CallEnvFrom returns the environment in ctx, or nil.
func CallEnvFrom(ctx context.Context) *CallEnv {
	env, _ := ctx.Value(callEnvKey{}).(*CallEnv)
	return env
}
