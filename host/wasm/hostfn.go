package wasm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/switchyard/switchyard/host/kv"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/host/wasm/rewrite"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The host functions chat, count_tokens, kv_get and kv_put (docs/abi.md
// section 5; embed, vector_put and vector_search are in vector.go). They share one calling convention: fn(ptr, len) -> i64 reads
// an input frame from guest memory and returns the size of the result frame,
// or a negative code whose message is the result; the guest copies the
// result with result(ptr, limit) (the same code as http_response). What
// each does is runtime-independent (hostCall), so Extism modules could get
// them through another shim.

// DefaultChatCalls is the default budget of chat calls of one request.
const DefaultChatCalls = 8

// nativeHostFunc is host function name for native modules.
func (e *Engine) nativeHostFunc(name string) func(ctx context.Context, m api.Module, ptr, n uint32) int64 {
	return func(ctx context.Context, m api.Module, ptr, n uint32) int64 {
		in := e.instanceOf(m)
		if in == nil {
			return abi.HostFailed
		}
		frame, ok := m.Memory().Read(ptr, n)
		if !ok {
			in.pending = abi.AppendFieldString(in.pending[:0], "input outside module memory")
			return abi.HostFailed
		}
		var err error
		if in.fields, err = abi.Fields(in.fields, frame); err != nil {
			in.pending = abi.AppendFieldString(in.pending[:0], "malformed input frame")
			return abi.HostFailed
		}
		var code int64
		in.pending, code = e.hostCall(ctx, in.owner, name, in.fields, in.pending[:0])
		return code
	}
}

// hostCall runs host function name for mod on the input fields. It appends
// the result frame to dst and returns it with its size, or a frame holding
// one message and a negative code.
func (e *Engine) hostCall(ctx context.Context, mod *Module, name string, fields [][]byte, dst []byte) ([]byte, int64) {
	// Refused at load already; checked again so no path around the load
	// check (a host module shared by runtimes) grants anything.
	if !mod.Manifest.GrantsHostFunction(name) {
		return fail(dst, abi.HostDenied, name+" is not granted to this module")
	}
	h, ok := hostHandlers[name]
	if !ok {
		return fail(dst, abi.HostFailed, "unknown host function "+name)
	}
	switch name {
	case abi.HostChat, abi.HostChatBatch, abi.HostChatReserve, abi.HostEmbed:
		defer waitedSince(ctx, clockOf(ctx)) // a sub-request: not module time
	}
	return h.serve(hostRequest{ctx: ctx, engine: e, mod: mod, env: envOf(ctx), fields: fields}, dst)
}

// hostRequest is one call of a host function, as its handler sees it.
// Passed by value: a handler is called through an interface, and a pointer
// would make every call allocate.
type hostRequest struct {
	ctx    context.Context
	engine *Engine
	mod    *Module
	env    *CallEnv // the request's (envOf), never nil
	fields [][]byte // the input frame's fields, views of guest memory
}

// field is input field i, nil when the frame has fewer.
func (r hostRequest) field(i int) []byte {
	if i < len(r.fields) {
		return r.fields[i]
	}
	return nil
}

// hostHandler is one host function of the frame convention (above): it
// appends its result frame to dst and returns it with the frame's size, or
// fail's message frame and a negative code.
type hostHandler interface {
	serve(r hostRequest, dst []byte) ([]byte, int64)
}

// handlerFunc is a hostHandler that is a function.
type handlerFunc func(r hostRequest, dst []byte) ([]byte, int64)

func (f handlerFunc) serve(r hostRequest, dst []byte) ([]byte, int64) { return f(r, dst) }

// hostHandlers are the host functions of the frame convention, by import
// name. instantiateHost exports each, and hostFunctions (the imports a
// manifest may grant) is built from them.
var hostHandlers = map[string]hostHandler{
	abi.HostChat:         handlerFunc(hostChat),
	abi.HostChatBatch:    handlerFunc(hostChatBatch),
	abi.HostChatReserve:  handlerFunc(hostChatReserve),
	abi.HostCountTokens:  handlerFunc(hostCountTokens),
	abi.HostKVGet:        handlerFunc(hostKVGet),
	abi.HostKVPut:        handlerFunc(hostKVPut),
	abi.HostEmbed:        handlerFunc(hostEmbed),
	abi.HostVectorPut:    handlerFunc(hostVectorPut),
	abi.HostVectorSearch: handlerFunc(hostVectorSearch),
	abi.HostMetric:       handlerFunc(hostMetric),
}

// fail is a host function's failure: a frame of one message, and code.
func fail(dst []byte, code int64, msg string) ([]byte, int64) {
	return abi.AppendFieldString(dst, msg), code
}

// hostChat runs one chat request body as a sub-request of the call's
// request, within its budget of chat calls.
func hostChat(r hostRequest, dst []byte) ([]byte, int64) {
	env := r.env
	if env.Chat == nil {
		return fail(dst, abi.HostDenied, "chat is not available to this call (no request to run it under)")
	}
	limit := env.chatLimit(r.engine.chatCalls())
	if !spend(&env.chatUsed, limit) {
		return fail(dst, abi.HostBudget, "this request's budget of "+strconv.Itoa(limit)+" chat calls is spent")
	}
	// A copy: the sub-request may outlive this view of guest memory's
	// contents (the instance is reused once the call returns).
	status, resp, err := env.Chat(r.ctx, append([]byte(nil), r.field(0)...))
	if err != nil {
		return fail(dst, abi.HostFailed, "chat: "+err.Error())
	}
	dst = abi.AppendFieldString(dst, strconv.Itoa(status))
	dst = abi.AppendField(dst, resp)
	return dst, int64(len(dst))
}

// hostChatBatch runs every field as a chat sub-request, concurrently, and
// answers a status and a body for each, in order.
func hostChatBatch(r hostRequest, dst []byte) ([]byte, int64) {
	env, fields := r.env, r.fields
	if env.Chat == nil {
		return fail(dst, abi.HostDenied, "chat_batch is not available to this call (no request to run it under)")
	}
	if len(fields) < 1 || len(fields) > abi.MaxChatBatch {
		return fail(dst, abi.HostFailed, "chat_batch takes 1 to "+strconv.Itoa(abi.MaxChatBatch)+" request bodies, got "+strconv.Itoa(len(fields)))
	}
	limit := env.chatLimit(r.engine.chatCalls())
	if !spendN(&env.chatUsed, len(fields), limit) {
		return fail(dst, abi.HostBudget, "this request's budget of "+strconv.Itoa(limit)+" chat calls cannot take "+strconv.Itoa(len(fields))+" more")
	}
	type answer struct {
		status int
		resp   []byte
		err    error
	}
	out := make([]answer, len(fields))
	var wg sync.WaitGroup
	for i, f := range fields {
		// Copies: the fields view the instance's buffers, reused once
		// this call returns.
		body := append([]byte(nil), f...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].status, out[i].resp, out[i].err = env.Chat(r.ctx, body)
		}()
	}
	wg.Wait()
	for _, a := range out {
		if a.err != nil {
			// A call that could not run at all reads like an error
			// response, so the others' results are kept.
			a.status, a.resp = 500, []byte(`{"error":{"code":500,"message":`+jsonstr.Quote("chat: "+a.err.Error())+`}}`)
		}
		dst = abi.AppendFieldString(dst, strconv.Itoa(a.status))
		dst = abi.AppendField(dst, a.resp)
	}
	return dst, int64(len(dst))
}

// hostChatReserve holds the cost of the chat calls a module plans; the
// calls reserved raise the request's chat budget.
func hostChatReserve(r hostRequest, dst []byte) ([]byte, int64) {
	env := r.env
	if env.Chat == nil || env.Reserve == nil {
		return fail(dst, abi.HostDenied, "chat_reserve is not available to this call (no request to run it under)")
	}
	status, resp, calls, err := env.Reserve(r.ctx, append([]byte(nil), r.field(0)...))
	if err != nil {
		return fail(dst, abi.HostFailed, "chat_reserve: "+err.Error())
	}
	if status == 200 && calls > 0 {
		// The reserved calls are paid for: the budget covers them.
		env.raiseChatLimit(int(env.chatUsed.Load()) + calls)
	}
	dst = abi.AppendFieldString(dst, strconv.Itoa(status))
	dst = abi.AppendField(dst, resp)
	return dst, int64(len(dst))
}

// hostCountTokens counts the tokens of a text for a model, as the server
// does.
func hostCountTokens(r hostRequest, dst []byte) ([]byte, int64) {
	if len(r.fields) < 2 {
		return fail(dst, abi.HostFailed, "count_tokens takes [model, text]")
	}
	// Within the call's time limit: a module that counts a 10 MB text
	// near its deadline is stopped between two segments, not after the
	// whole count (1.45 s past a 500 ms limit, issue 31 item 18).
	n, err := tokenize.CountWithin(r.ctx, string(r.fields[0]), unsafeString(r.fields[1]))
	if err != nil {
		return fail(dst, abi.HostFailed, "count_tokens: "+err.Error())
	}
	dst = abi.AppendFieldString(dst, strconv.FormatInt(n, 10))
	return dst, int64(len(dst))
}

// kvScope is where the calling module's entries live for this request:
// its publisher's, its own, the request's account's.
func (r hostRequest) kvScope() kv.Scope {
	return kv.Scope{Owner: r.mod.account, Module: r.mod.Manifest.Name, Account: r.env.Account}
}

// hostKVGet reads a key of the module store.
func hostKVGet(r hostRequest, dst []byte) ([]byte, int64) {
	store := r.engine.cfg.KV
	if store == nil {
		return fail(dst, abi.HostFailed, "this gateway has no module store")
	}
	v, ok, err := store.Get(r.kvScope(), string(r.field(0)))
	switch {
	case err != nil:
		return fail(dst, abi.HostFailed, err.Error())
	case !ok:
		return fail(dst, abi.HostNotFound, "no such key")
	}
	dst = abi.AppendField(dst, v)
	return dst, int64(len(dst))
}

// hostKVPut writes a key of the module store, with a ttl in seconds (0 or
// none: the store's maximum).
func hostKVPut(r hostRequest, dst []byte) ([]byte, int64) {
	store := r.engine.cfg.KV
	if store == nil {
		return fail(dst, abi.HostFailed, "this gateway has no module store")
	}
	ttl := int64(0)
	if t := r.field(2); len(t) > 0 {
		var err error
		if ttl, err = strconv.ParseInt(string(t), 10, 64); err != nil || ttl < 0 {
			return fail(dst, abi.HostFailed, "kv_put: the ttl must be a decimal number of seconds (0: the store's maximum)")
		}
	}
	d := time.Duration(min(ttl, 1<<32)) * time.Second
	// A fourth field "evict": a cache's put, which makes room by evicting
	// the entries that expire soonest, and answers how many it evicted.
	evict := string(r.field(3)) == "evict"
	var err error
	evicted := 0
	if evict {
		evicted, err = store.PutEvicting(r.kvScope(), string(r.field(0)), r.field(1), d)
	} else {
		err = store.Put(r.kvScope(), string(r.field(0)), r.field(1), d)
	}
	switch {
	case errors.Is(err, kv.ErrQuota):
		return fail(dst, abi.HostQuota, err.Error())
	case err != nil:
		return fail(dst, abi.HostFailed, err.Error())
	}
	if evict {
		dst = abi.AppendFieldString(dst, strconv.Itoa(evicted))
		return dst, int64(len(dst))
	}
	return dst, 0
}

func (e *Engine) chatCalls() int {
	if e.cfg.ChatCallsPerRequest > 0 {
		return e.cfg.ChatCallsPerRequest
	}
	return DefaultChatCalls
}

// envOf is the env of the call ctx belongs to (an empty one outside a
// Module.Call, which host functions never are).
func envOf(ctx context.Context) *CallEnv {
	if c := logOf(ctx); c != nil {
		return c.env
	}
	if env := CallEnvFrom(ctx); env != nil {
		return env
	}
	return &CallEnv{}
}

// unsafeString views b as a string without copying, for reads that do not
// keep it.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// instantiateHost defines the "switchyard" host module. Every function is
// defined for every module; grants are enforced at load by refusing modules
// that import what their manifest does not grant.
func (e *Engine) instantiateHost(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().WithFunc(e.hostHTTPRequest).Export(abi.HostHTTPRequest).
		NewFunctionBuilder().WithFunc(e.hostHTTPResponse).Export(abi.HostHTTPResponse).
		NewFunctionBuilder().WithFunc(e.hostHTTPResponse).Export(abi.HostResult).
		NewFunctionBuilder().WithFunc(hostYield).Export(rewrite.YieldImport).
		NewFunctionBuilder().
		WithFunc(func(ctx context.Context, m api.Module, level, ptr, n uint32) {
			if b, ok := m.Memory().Read(ptr, min(n, maxLogLine)); ok {
				e.moduleLog(ctx, int32(level), b, moduleTag(m.Name()))
			}
		}).
		Export(abi.HostLog)
	for name := range hostHandlers {
		b = b.NewFunctionBuilder().WithFunc(e.nativeHostFunc(name)).Export(name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("wasm: host module: %w", err)
	}
	return nil
}
