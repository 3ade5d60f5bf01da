// Package conformance is the ABI conformance kit: it checks a host, or a
// guest, against what docs/abi.md promises.
//
// Two checks, both plain Go tests:
//
//   - Run checks a host. It loads the kit's guest (built from
//     abi/conformance/guest, which implements every hook and calls every
//     host function) under manifests it writes itself, and drives each
//     promise of the ABI through the host's module runtime: load-time
//     refusals (ABI version, missing exports, ungranted imports, memory
//     over the cap), the frame encoding both ways, a failing hook becoming
//     a 502 with the documented message, traps and the time limit contained
//     to one call, stream state handed back byte for byte, concurrent calls
//     over a bounded pool, the log and http host functions, and chat,
//     count_tokens, kv_get/kv_put, embed, vector_put/vector_search and
//     result (each refused at load when not granted, kv and vectors scoped
//     per account, kv's quota code, chat and embed through fake
//     sub-request functions, result copied through a small buffer).
//   - CheckGuest checks a guest: a third-party adapter or plugin, native or
//     Extism. It loads the module on a host and calls every hook it declares
//     with typical inputs and with inputs over 64 KiB; every answer must
//     have the shape its hook's output has in docs/abi.md, a passthrough
//     hook the module implements anyway must return its input unchanged,
//     and no call may trap, run out of time or say the module does not
//     implement a hook its manifest declares (a hook may refuse an input
//     with a message).
//
// A host plugs in through Host and Module: a thin adapter over its own
// loader (see host/wasm/kithost for Switchyard's). The kit is in the spirit
// of http-wasm's TCK: one guest binary, one runner any host can execute.
package conformance

import (
	"context"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/guestcheck"
)

// Host is the host under test: its module loader.
type Host interface {
	// Load loads a module with its manifest (JSON, docs/abi.md section 4),
	// or refuses it with an error saying why. Refusals happen here, at load,
	// never on a call.
	Load(ctx context.Context, manifest, wasm []byte) (Module, error)
	// Logs returns the lines modules logged through the log host function
	// since the previous call.
	Logs() []Log
	// WithEnv returns ctx carrying the request environment module calls
	// made with it run in: the account kv entries are scoped to, and the
	// function the chat host function runs sub-requests with.
	WithEnv(ctx context.Context, env Env) context.Context
}

// Env is the request environment of the host functions.
type Env struct {
	Account string
	// Chat runs a sub-request; nil means chat is not available (the host
	// answers HostDenied).
	Chat func(ctx context.Context, body []byte) (status int, resp []byte, err error)
	// Reserve holds a plan of sub-requests (chat_reserve); nil means it is
	// not available (HostDenied).
	Reserve func(ctx context.Context, plan []byte) (status int, resp []byte, calls int, err error)
	// Embed runs an embeddings sub-request (the embed host function); nil
	// means it is not available (HostDenied).
	Embed func(ctx context.Context, body []byte) (status int, resp []byte, err error)
}

// Module is a loaded module.
type Module interface {
	// Call runs hook on the input fields (ctx first) and returns the output
	// fields after the status byte. A failed call returns a *Failure.
	Call(ctx context.Context, hook abi.Hook, fields ...[]byte) ([][]byte, error)
	Close(ctx context.Context) error
}

// Failure is what a failed call returns: the HTTP status the gateway
// answers the request with, its message, and whether the call broke (a
// trap or the time limit: a guest check fails for it).
type Failure = guestcheck.Failure

// Log is one line a module logged.
type Log struct {
	Level   int    // 0 debug, 1 info, 2 warn, 3 error
	Module  string // the module's name@version
	Message string
}
