// Package guestcheck is the guest half of the ABI conformance kit: it
// calls every hook a module's manifest declares on typical inputs and on
// inputs over 64 KiB, and judges each answer against docs/abi.md. It needs
// no testing package, so the gateway runs it when a module is published
// (host/modules) and `syctl plugin test` runs it with no gateway; the kit
// (abi/conformance.CheckGuest) runs it inside a test.
package guestcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/abi"
)

// Module is a loaded module, as the check calls it.
type Module interface {
	// Call runs hook on the input fields (ctx first) and returns the output
	// fields after the status byte. A failed call returns a *Failure.
	Call(ctx context.Context, hook abi.Hook, fields ...[]byte) ([][]byte, error)
}

// MemoryCaller is a Module that also says the size in bytes of its
// memory when a call returned (0: not known); Check reports it per call.
type MemoryCaller interface {
	CallMemory(ctx context.Context, hook abi.Hook, fields ...[]byte) ([][]byte, uint32, error)
}

// Failure is what a failed call returns: the HTTP status the gateway
// answers the request with, and its message.
type Failure struct {
	Status  int
	Message string
	// Broke says the call trapped or ran out of time (the instance broke)
	// rather than the hook answering with an error: the check fails it.
	Broke bool
}

func (f *Failure) Error() string { return fmt.Sprintf("%d: %s", f.Status, f.Message) }

// Typical inputs of each hook, the way the gateway sends them.
var (
	sampleCtx     = []byte(`{"model":"kit-model","provider":"kit","stream":false,"drop":[]}`)
	sampleChat    = []byte(`{"model":"kit/model","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}],"max_tokens":16}`)
	sampleResult  = []byte(`{"id":"chatcmpl-kit","object":"chat.completion","created":1700000000,"model":"kit-model","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
	sampleChunk   = []byte(`{"id":"chatcmpl-kit","object":"chat.completion.chunk","created":1700000000,"model":"kit-model","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`)
	sampleEmbed   = []byte(`{"model":"kit/embed","input":["Hello"]}`)
	sampleVectors = []byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"kit-embed","usage":{"prompt_tokens":1,"total_tokens":1}}`)
	sampleError   = []byte(`{"error":{"message":"rate limited","type":"rate_limit_error"}}`)
)

// The ctx of a plugin's hooks (docs/plugins.md, "ctx") and of a server
// tool's tool_call (docs/server-tools.md): what the gateway passes them,
// as sampleCtx is an adapter's.
var (
	pluginCtx = []byte(`{"config":{"id":"kit"},"model":"kit/model","scope":"account"}`)
	toolCtx   = []byte(`{"request_id":"gen-kit","account":"acct_kit","model":"kit/model","now":"2026-11-29T12:00:00Z","tool":{"type":"service:web_search","name":"web_search"},"calls":0,"parameters":{},"config":{}}`)
)

// ctxFor is the ctx the gateway passes hook.
func ctxFor(hook abi.Hook) []byte {
	switch hook {
	case abi.HookPreRequest, abi.HookPostResponse, abi.HookPostChunk:
		return pluginCtx
	case abi.HookToolCall:
		return toolCtx
	}
	return sampleCtx
}

// sampleInput is what the gateway would pass hook, after ctx.
func sampleInput(hook abi.Hook) [][]byte {
	switch hook {
	case abi.HookChatRequest, abi.HookPreRequest:
		return [][]byte{sampleChat}
	case abi.HookChatResponse, abi.HookPostResponse:
		return [][]byte{sampleResult}
	case abi.HookChatStreamEvent:
		return [][]byte{sampleChunk, {}}
	case abi.HookPostChunk:
		return [][]byte{sampleChunk}
	case abi.HookEmbedRequest:
		return [][]byte{sampleEmbed}
	case abi.HookEmbedResponse:
		return [][]byte{sampleVectors}
	case abi.HookError:
		return [][]byte{[]byte("429"), sampleError}
	case abi.HookToolCall:
		return [][]byte{[]byte("web_search"), []byte(`{"query":"switchyard gateway"}`)}
	}
	return nil
}

// Result is the verdict on one call of the check.
type Result struct {
	Hook  string
	Input string // "typical" or "large" (over 64 KiB)
	Bytes int    // the input's size
	// Problem is what is wrong ("" when the call passed); Note is worth
	// showing even so (the hook refused the sample input).
	Problem, Note string
	Time          time.Duration
	Memory        uint32 // the module's memory in bytes after the call (0: not known)
}

// Check calls every hook the manifest (JSON, docs/abi.md section 4)
// declares on m, a module loaded with it, once with typical input and once
// with input over 64 KiB, and returns a verdict per call. Every answer must
// have its hook's output shape; a hook may fail (status byte 1) on input
// it does not accept, with a message (the host then answers 502), but a
// call must not trap, run out of time, panic, or say the module does not
// implement a hook the manifest declares. A passthrough hook is skipped by
// the host, so a module need not implement it, but if it does, it must
// return its input unchanged. An error means the manifest could not be read.
func Check(ctx context.Context, m Module, manifestJSON []byte) ([]Result, error) {
	var mf struct {
		Hooks       []string `json:"hooks"`
		Passthrough []string `json:"passthrough"`
	}
	if err := json.Unmarshal(manifestJSON, &mf); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	passthrough := map[string]bool{}
	for _, h := range mf.Passthrough {
		passthrough[h] = true
	}
	var out []Result
	for _, name := range mf.Hooks {
		hook, ok := abi.HookByName(name)
		if !ok {
			out = append(out, Result{Hook: name, Problem: fmt.Sprintf("unknown hook %q", name)})
			continue
		}
		for _, size := range []string{"typical", "large"} {
			in := sampleInput(hook)
			if size == "large" {
				in = largeInput(hook)
			}
			start := time.Now()
			var mem uint32
			problem, note := callProblem(ctx, memoryOf(m, &mem), hook, in, passthrough[name])
			out = append(out, Result{Hook: name, Input: size, Bytes: inputSize(in), Problem: problem, Note: note, Time: time.Since(start), Memory: mem})
		}
	}
	return out, nil
}

// memoryOf is m, recording its memory after each call in *mem when it
// can say it.
func memoryOf(m Module, mem *uint32) Module {
	if mc, ok := m.(MemoryCaller); ok {
		return memoryRecorder{mc, mem}
	}
	return m
}

type memoryRecorder struct {
	m   MemoryCaller
	mem *uint32
}

func (r memoryRecorder) Call(ctx context.Context, hook abi.Hook, fields ...[]byte) ([][]byte, error) {
	out, mem, err := r.m.CallMemory(ctx, hook, fields...)
	*r.mem = mem
	return out, err
}

// FirstProblem is the first failed call of results, as one line naming the
// hook and the input ("" when every call passed): what a publish refused
// for.
func FirstProblem(results []Result) string {
	for _, r := range results {
		if r.Problem == "" {
			continue
		}
		if r.Input == "" {
			return r.Problem
		}
		return fmt.Sprintf("%s on the %s input (%d bytes): %s", r.Hook, r.Input, r.Bytes, r.Problem)
	}
	return ""
}

// callProblem calls hook on in and judges the answer. The hook may
// refuse the input with a message (status byte 1, a 502); it must not
// trap, run out of time, or say it does not implement a hook its manifest
// declares. It returns what is wrong ("" if nothing), and a note worth
// showing (a refusal of the sample input).
func callProblem(ctx context.Context, m Module, hook abi.Hook, in [][]byte, passthrough bool) (problem, note string) {
	out, err := m.Call(ctx, hook, append([][]byte{ctxFor(hook)}, in...)...)
	var f *Failure
	switch {
	case errors.As(err, &f):
		// "not implemented": the Go SDK's answer for a hook with no
		// handler; "unknown function": Extism's, for a missing export.
		missing := strings.Contains(f.Message, "not implemented") || strings.Contains(f.Message, "unknown function")
		switch {
		case missing && passthrough:
			return "", "" // the host never calls a passthrough hook: it need not exist
		case missing:
			return fmt.Sprintf("the manifest declares %s, which the module does not implement: %s", hook, f.Message), ""
		case f.Broke:
			return fmt.Sprintf("the call broke (a trap or the time limit) on %d bytes of input: %s", inputSize(in), f.Message), ""
		case panicked(f.Message):
			// The Go SDK recovers a handler's panic into the hook's error
			// so that its text reaches the log, but a panic on the kit's
			// input is a bug, not a refusal.
			return fmt.Sprintf("the hook panicked on %d bytes of input: %s", inputSize(in), f.Message), ""
		case f.Status != http.StatusBadGateway || f.Message == "":
			return fmt.Sprintf("a failed hook must give 502 and a message, got %d %q", f.Status, f.Message), ""
		case !passthrough:
			return "", "refused the sample input: " + f.Message
		}
		return "", ""
	case err != nil:
		return fmt.Sprintf("call: %v", err), ""
	}
	if passthrough {
		if hook == abi.HookChatStreamEvent {
			if len(out) != 2 || !bytes.Equal(out[1], in[0]) {
				return "passthrough hook changed its input: got " + Show(out), ""
			}
		} else if len(out) != 1 || !bytes.Equal(out[0], in[0]) {
			return "passthrough hook changed its input: got " + Show(out), ""
		}
		return "", ""
	}
	if msg := checkOutput(hook, out); msg != "" {
		return msg + ": " + Show(out), ""
	}
	return "", ""
}

// panicked says a failure's message is a recovered panic: the Go SDK
// answers "panic: <value> (at file.go:42)", which the host reports as
// "module <id> failed in <hook>: panic: …".
func panicked(msg string) bool {
	if _, rest, ok := strings.Cut(msg, " failed in "); ok {
		if _, m, ok := strings.Cut(rest, ": "); ok {
			msg = m
		}
	}
	return strings.HasPrefix(msg, "panic: ")
}

func inputSize(in [][]byte) int {
	n := 0
	for _, f := range in {
		n += len(f)
	}
	return n
}

// largeText is the text of the large inputs: past 64 KiB, so a guest that
// misreads a frame's length (one byte of it, or two) reads garbage, and
// every byte a JSON string may carry unescaped (UTF-8 of 2, 3 and 4
// bytes), with the escapes it must keep (the text goes into JSON strings
// as it is: it is already escaped).
// Built on first use, not at package init: every gateway links this
// package (publishes run the check), and most never publish.
var largeText = sync.OnceValue(func() string {
	unit := `Lorem ipsum — «ÿ» 漢字 🙂 \"quoted\" back\\slash tab\t. `
	return strings.Repeat(unit, (80<<10)/len(unit)+1)
})

// largeInput is sampleInput with a text of over 64 KiB where the hook's
// input has one (a message, a completion, a chunk, an error message).
func largeInput(hook abi.Hook) [][]byte {
	in := sampleInput(hook)
	grow := func(b []byte, small string) []byte {
		return bytes.Replace(b, []byte(small), []byte(largeText()), 1)
	}
	out := make([][]byte, len(in))
	copy(out, in)
	switch hook {
	case abi.HookChatRequest, abi.HookPreRequest:
		out[0] = grow(in[0], "Hello")
	case abi.HookChatResponse, abi.HookPostResponse, abi.HookChatStreamEvent, abi.HookPostChunk:
		out[0] = grow(in[0], "Hi")
	case abi.HookEmbedRequest:
		out[0] = grow(in[0], "Hello")
	case abi.HookError:
		out[1] = grow(in[1], "rate limited")
	case abi.HookToolCall:
		out[1] = grow(in[1], "switchyard gateway")
	}
	return out
}

// checkOutput says what is wrong with a hook's output fields ("" if
// nothing is).
func checkOutput(hook abi.Hook, out [][]byte) string {
	isObject := func(b []byte) bool {
		var v map[string]json.RawMessage
		return json.Unmarshal(b, &v) == nil && v != nil
	}
	has := func(b []byte, member string) bool {
		var v map[string]json.RawMessage
		_ = json.Unmarshal(b, &v)
		_, ok := v[member]
		return ok
	}
	switch hook {
	case abi.HookChatRequest, abi.HookEmbedRequest:
		if len(out) != 4 {
			return "want 4 fields: method, path, headers, body"
		}
		if method := string(out[0]); method == "" || strings.ToUpper(method) != method || strings.ContainsAny(method, " \r\n") {
			return "the method must be an upper-case HTTP method"
		}
		if !strings.HasPrefix(string(out[1]), "/") && len(out[1]) > 0 {
			return "the path is appended to the provider's base URL: it must be empty or start with /"
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(out[2]), "\n"), "\n") {
			if k, _, ok := strings.Cut(line, ":"); line != "" && (!ok || strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \r")) {
				return "headers must be \"Name: value\" lines separated by \\n"
			}
		}
	case abi.HookChatResponse:
		if len(out) != 1 || !isObject(out[0]) || !has(out[0], "choices") {
			return "want one field: a unified chat result (a JSON object with choices)"
		}
	case abi.HookEmbedResponse:
		if len(out) != 1 || !isObject(out[0]) || !has(out[0], "data") {
			return "want one field: a unified embeddings response (a JSON object with data)"
		}
	case abi.HookChatStreamEvent:
		if len(out) < 1 {
			return "want the stream state, then zero or more chunks"
		}
		for _, c := range out[1:] {
			if !isObject(c) {
				return "every chunk must be a JSON object"
			}
		}
	case abi.HookError:
		if len(out) != 2 {
			return "want 2 fields: status, message"
		}
		if s, err := strconv.Atoi(string(out[0])); err != nil || s < 400 || s > 599 {
			return "the status must be a decimal HTTP error status"
		}
	case abi.HookToolCall:
		if len(out) != 2 {
			return "want 2 fields: result, cost"
		}
		if !json.Valid(out[0]) {
			return "the result must be JSON text (the model reads it)"
		}
		if c := string(out[1]); c != "" {
			if f, err := strconv.ParseFloat(c, 64); err != nil || f < 0 || strings.ContainsAny(c, "eE") {
				return "the cost must be empty or a non-negative decimal number of dollars"
			}
		}
	case abi.HookPreRequest, abi.HookPostResponse, abi.HookPostChunk:
		if len(out) < 1 {
			return "want an action first"
		}
		action := string(out[0])
		switch {
		case action == abi.ActionContinue && hook == abi.HookPostChunk:
			for _, c := range out[1:] {
				if !isObject(c) {
					return "every chunk must be a JSON object"
				}
			}
		case action == abi.ActionContinue:
			if len(out) > 1 && len(out[1]) > 0 && !isObject(out[1]) {
				return "a replacement body must be a JSON object"
			}
		case action == abi.ActionRespond && hook == abi.HookPreRequest:
			if len(out) < 2 || !has(out[1], "choices") {
				return "respond needs a complete chat result (with choices)"
			}
		case action == abi.ActionBlock:
			if len(out) < 2 || !has(out[1], "message") {
				return `block needs {"code":…,"message":…}`
			}
		default:
			return "unknown action " + strconv.Quote(action) + " for " + hook.String()
		}
	}
	return ""
}

// Show prints fields for a message, shortening long ones.
func Show(fields [][]byte) string {
	var b strings.Builder
	b.WriteString("[")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		if len(f) > 80 {
			fmt.Fprintf(&b, "%q…(%d bytes)", f[:80], len(f))
		} else {
			fmt.Fprintf(&b, "%q", f)
		}
	}
	return b.String() + "]"
}
