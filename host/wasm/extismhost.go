package wasm

// Switchyard's host functions for Extism guests. The native ABI's calling
// convention (fn(ptr, len) -> size, then result(ptr, limit)) reads and
// writes guest memory directly; an Extism guest has its data in Extism
// memory blocks (the kernel's allocator), so the same functions take and
// return blocks instead:
//
//	extism:host/user NAME(input i64) -> i64
//
// input is the offset of a block holding the native input frame (each
// field a little-endian u32 length and its bytes); the result is the
// offset of a new block holding one status byte and a frame: 0 and the
// native result frame, or the native negative code negated (1 denied,
// 2 failed, 3 not found, 4 quota, 5 budget) and a frame of one message.
// What each function does is the native one's code (hostCall, httpCall):
// one implementation, two calling conventions. http_request here is the
// host's guarded client (public addresses only, no redirects, the
// response cap, secrets), unlike Extism's own extism:host/env
// http_request, which stays a development-only import (checkExtismImports).

import (
	"context"

	extism "github.com/extism/go-sdk"
	"github.com/switchyard/switchyard/abi"
)

// extismUserFuncs are the frame-convention host functions an Extism guest
// may import from extism:host/user (log, whose signature differs, aside).
func extismUserFunc(name string) bool {
	if name == abi.HostHTTPRequest {
		return true
	}
	_, ok := hostHandlers[name]
	return ok
}

// extismHostFuncs are the extism:host/user functions mod's manifest
// grants, bound to mod (its grants, its account's kv scope, its http
// client). mod is filled in by the caller before any call runs.
func (e *Engine) extismHostFuncs(mod *Module) []extism.HostFunction {
	var funcs []extism.HostFunction
	if mod.Manifest.GrantsHostFunction(abi.HostHTTPRequest) {
		funcs = append(funcs, e.extismHostFunc(mod, abi.HostHTTPRequest))
	}
	for name := range hostHandlers {
		if mod.Manifest.GrantsHostFunction(name) {
			funcs = append(funcs, e.extismHostFunc(mod, name))
		}
	}
	return funcs
}

func (e *Engine) extismHostFunc(mod *Module, name string) extism.HostFunction {
	return extism.NewHostFunctionWithStack(name, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		stack[0] = e.extismHostCall(ctx, p, mod, name, stack[0])
	}, []extism.ValueType{extism.ValueTypeI64}, []extism.ValueType{extism.ValueTypeI64})
}

// extismHostCall runs host function name on the frame in block in and
// returns the block of its status byte and result frame. It panics (a trap
// of the call, as a native guest's out-of-memory would be) only when the
// kernel cannot allocate that block.
func (e *Engine) extismHostCall(ctx context.Context, p *extism.CurrentPlugin, mod *Module, name string, in uint64) uint64 {
	var frame []byte
	n, err := p.LengthWithContext(ctx, in)
	inMemory := err == nil
	if inMemory && n > 0 {
		frame, inMemory = p.Memory().Read(uint32(in), uint32(n))
	}
	out := []byte{0}
	var code int64
	switch {
	case name == abi.HostHTTPRequest:
		defer waitedSince(ctx, clockOf(ctx)) // the network: not module time
		out, code = e.httpCall(ctx, mod, frame, inMemory)
		out = append([]byte{0}, out...)
	case !inMemory:
		out, code = fail(out, abi.HostFailed, "input is not an Extism memory block")
	default:
		fields, err := abi.Fields(nil, frame)
		if err != nil {
			out, code = fail(out, abi.HostFailed, "malformed input frame")
			break
		}
		out, code = e.hostCall(ctx, mod, name, fields, out)
	}
	if code < 0 {
		out[0] = byte(-code)
	}
	off, err := p.AllocWithContext(ctx, uint64(len(out)))
	if err != nil || off == 0 || !p.Memory().Write(uint32(off), out) {
		panic("extism:host/user " + name + ": cannot allocate the result block")
	}
	return off
}
