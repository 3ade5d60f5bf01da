// Package abi is the contract between the Switchyard host and its WebAssembly
// modules, ABI version 1. It is imported by both sides (the host in host/wasm,
// guests through sdk/), so it depends on nothing but the standard library.
//
// The full contract, with the memory protocol and every hook's fields, is in
// docs/abi.md. In short: the guest exports
//
//	switchyard_abi_v1()                    marker; its presence declares ABI 1
//	sy_input(size i32) -> ptr i32          a guest buffer of at least size bytes
//	sy_handle(hook i32, size i32) -> i64   run a hook on the input; (ptr<<32)|len of the output
//
// and the host copies one frame in and one frame out per call.
package abi

import (
	"encoding/binary"
	"errors"
)

// Version is the ABI version this host implements.
const Version = 1

// Export names.
const (
	ExportMarker = "switchyard_abi_v1"
	ExportPrefix = "switchyard_abi_v" // any marker; the suffix is the version
	ExportInput  = "sy_input"
	ExportHandle = "sy_handle"
	ExportMemory = "memory"
	// ExportInit is what Go (wasip1 c-shared) and other reactor-style guests
	// export to run their runtime and package initialisers.
	ExportInit = "_initialize"
)

// ImportModule is the module name of the host functions a guest may import.
const ImportModule = "switchyard"

// Host functions, importable under ImportModule only when the manifest grants them.
const (
	HostLog = "log" // log(level i32, ptr i32, len i32)
	// HostHTTPRequest makes an outbound HTTP call through the host:
	// http_request(ptr i32, len i32) -> i64 takes a frame [method, url,
	// headers, body] and returns the size of the response frame [status,
	// headers, body], or a negative code (see HTTPDenied) whose message is
	// the response. The guest reads it with http_response(ptr i32, limit i32)
	// -> i32, which copies at most limit bytes and returns the full size, so
	// a guest whose buffer was too small asks again.
	HostHTTPRequest  = "http_request"
	HostHTTPResponse = "http_response"

	// The functions below share one calling convention: fn(ptr i32, len i32)
	// -> i64 takes an input frame and returns the size of the result frame
	// (>= 0), or a negative code (HostDenied…HostBudget) whose message is the
	// result. The guest copies the result of the last call with
	// result(ptr i32, limit i32) -> i32 (at most limit bytes; returns the full
	// size, so a guest whose buffer was too small asks again).
	//
	// chat: in [request body]; out [status, response body]. Runs a chat
	// request through routing, billing and the pipeline as a sub-request of
	// the current request (charged to its key, counted in its usage).
	HostChat = "chat"
	// chat_batch: in [body 1, …, body N] (1 ≤ N ≤ MaxChatBatch); out
	// [status 1, response 1, …, status N, response N]. Runs the N chat
	// sub-requests concurrently (a module's instance is single-threaded,
	// so N chat calls would run one after another); each counts one call of
	// the request's chat budget, and a batch that does not fit in what is
	// left is refused whole (HostBudget). Added in ABI 1 revision 2
	// (additive: a module that does not import it is unaffected; one that
	// does fails to load on an older host, naming the import).
	HostChatBatch = "chat_batch"
	// chat_reserve: in [plan JSON]; out [status, body]. Holds, before any
	// of them runs, the worst-case cost of the chat sub-requests a module
	// plans, so a group of calls (a fusion's panel, judge and final answer)
	// either starts covered or not at all. The plan is
	// {"calls":[{"model","prompt_tokens","max_tokens","turns"?}, …]}
	// (at most MaxChatReserve calls); the body is {"held":"<USD>",
	// "calls":N} with status 200, or an error body (402 insufficient
	// credits, 400 a bad plan). The sub-requests then draw their holds
	// from it; what is left returns to the account when the request ends.
	// A reserved plan also raises the request's chat budget to cover its
	// calls. Revision 2, like chat_batch.
	HostChatReserve = "chat_reserve"
	// count_tokens: in [model, text]; out [decimal token count].
	HostCountTokens = "count_tokens"
	// kv_get: in [key]; out [value], or HostNotFound.
	HostKVGet = "kv_get"
	// kv_put: in [key, value, ttl seconds (decimal; "0" = the store's
	// maximum)]; out []. An empty value deletes the key.
	HostKVPut = "kv_put"
	// embed: in [embeddings request body JSON]; out [status, body]. Runs
	// the body (an OpenAI embeddings request: model, input) as a
	// sub-request of the current request, like chat: routed, held and
	// settled under its own generation, charged to the request's key and
	// counted against its rate limits and its budget of chat calls.
	// Revision 3.
	HostEmbed = "embed"
	// vector_put: in [partition, id, tag, vector, ttl seconds]; out
	// [evicted]. Stores a vector (little-endian float32s; the host
	// normalises it) under id in the module's vector index for the
	// request's account, in the named partition; an empty vector deletes
	// id. A full partition or index evicts the least recently used entries
	// and answers how many. Revision 3.
	HostVectorPut = "vector_put"
	// vector_search: in [partition, tag, vector, min similarity (decimal)];
	// out [id, similarity, age seconds], or HostNotFound. The entry of the
	// partition with the same tag most similar to the vector (cosine), if
	// at least min. Revision 3.
	HostVectorSearch = "vector_search"
	// result copies the result frame of the last call above.
	HostResult = "result"
	// HostMetric adds to a counter, or observes a value in a histogram,
	// that the module's manifest declares (metrics[]): [name, value
	// (decimal)] → [] (revision 4; docs/abi.md, "metric").
	HostMetric = "metric"
)

// Grant names of manifest grants.host_functions.
const (
	GrantLog  = "log"
	GrantHTTP = "http" // http_request and http_response, to grants.http_domains only
	// GrantChat grants chat, chat_batch and chat_reserve (and result).
	GrantChat = "chat"
	// GrantCountTokens grants count_tokens (and result).
	GrantCountTokens = "count_tokens"
	// GrantKV grants kv_get and kv_put (and result), scoped to the module
	// and the calling account.
	GrantKV = "kv"
	// GrantEmbed grants embed (and result).
	GrantEmbed = "embed"
	// GrantVector grants vector_put and vector_search (and result), scoped
	// like kv to the module and the calling account.
	GrantVector = "vector"
	// GrantMetrics grants metric (and result), for the metrics the
	// manifest declares.
	GrantMetrics = "metrics"
)

// Limits of chat_batch and chat_reserve.
const (
	MaxChatBatch   = 8
	MaxChatReserve = 16
)

// Revision is the revision of ABI Version this host implements: additions
// that leave every older module working (revision 2: chat_batch and
// chat_reserve; revision 3: embed, vector_put and vector_search; revision
// 4: metric).
const Revision = 4

// Host call failure codes of chat, count_tokens, kv_get, kv_put (and the
// first two are shared with http_request).
const (
	HostDenied   int64 = -1 // not granted, or refused by policy (depth, destination)
	HostFailed   int64 = -2 // the call failed
	HostNotFound int64 = -3 // kv_get: no such key (or expired)
	HostQuota    int64 = -4 // kv_put: the module's store quota is full
	HostBudget   int64 = -5 // the request's budget for this function is spent
)

// http_request failure codes.
const (
	HTTPDenied int64 = -1         // the URL's host is not granted, or resolves to a private address
	HTTPFailed int64 = -2         // the call failed (connection, timeout, size)
	HTTPBudget int64 = HostBudget // the request's budget of outbound calls is spent
)

// Hook identifies what a call asks the module to do.
type Hook uint32

const (
	HookChatRequest     Hook = 1 // in: ctx, body           out: method, path, headers, body
	HookChatResponse    Hook = 2 // in: ctx, body           out: body
	HookChatStreamEvent Hook = 3 // in: ctx, event data, state   out: state, zero or more chunk bodies
	HookEmbedRequest    Hook = 4 // in: ctx, body           out: method, path, headers, body
	HookEmbedResponse   Hook = 5 // in: ctx, body           out: body
	HookError           Hook = 6 // in: ctx, status, body   out: status, message

	// Request-pipeline plugin hooks (docs/abi.md section 3, "Plugin hooks";
	// actions and fields in docs/plugins.md).
	HookPreRequest   Hook = 7 // in: ctx, request body   out: action, body, summary
	HookPostResponse Hook = 8 // in: ctx, result body    out: action, body, summary
	HookPostChunk    Hook = 9 // in: ctx, chunk          out: action, zero or more chunks

	// HookToolCall runs one server tool the module declares in its
	// manifest's "tools": in: ctx, tool name, arguments (JSON object text)
	// out: result (JSON text the model sees), cost in dollars (decimal
	// string; empty = free). A failed tool returns a result such as
	// {"error":"…"} rather than failing the hook, so the model can react.
	HookToolCall Hook = 10
)

// Plugin actions, the first output field of the pipeline hooks.
const (
	ActionContinue = "continue" // go on; a non-empty body field replaces the body
	ActionRespond  = "respond"  // answer now with body (a complete chat result); no upstream call
	ActionBlock    = "block"    // refuse: body is {"code":403,"message":…,"metadata":{…}}
	// ActionContinueState is continue for post_chunk with the plugin's new
	// state first: fields [action, state, chunks…]. The host hands the
	// latest state a plugin returned (pre_request's optional fourth field,
	// or this) to its later hooks of the same request in ctx.state, so a
	// pooled, memoryless instance can follow a stream.
	ActionContinueState = "continue_state"
)

var hookNames = map[Hook]string{
	HookChatRequest:     "chat_request",
	HookChatResponse:    "chat_response",
	HookChatStreamEvent: "chat_stream_event",
	HookEmbedRequest:    "embed_request",
	HookEmbedResponse:   "embed_response",
	HookError:           "error",
	HookPreRequest:      "pre_request",
	HookPostResponse:    "post_response",
	HookPostChunk:       "post_chunk",
	HookToolCall:        "tool_call",
}

func (h Hook) String() string {
	if n, ok := hookNames[h]; ok {
		return n
	}
	return "unknown"
}

// HookByName returns the hook with the manifest name, or false.
func HookByName(name string) (Hook, bool) {
	for h, n := range hookNames {
		if n == name {
			return h, true
		}
	}
	return 0, false
}

// Output status, the first byte of every output.
const (
	StatusOK    byte = 0 // fields follow
	StatusError byte = 1 // the rest is a UTF-8 message; the hook failed
)

// APIKeyPlaceholder is what an adapter writes where the upstream secret goes
// (in a header value or the query string). The host substitutes the secret
// after the module has returned, so modules never see provider keys.
const APIKeyPlaceholder = "${API_KEY}"

// ErrFrame reports a malformed frame.
var ErrFrame = errors.New("abi: malformed frame")

// A frame is a sequence of fields, each a little-endian uint32 length and
// that many bytes. It is the only encoding that crosses the boundary: cheap to
// write and to read without allocation in any language.

// FrameSize is the encoded size of fields.
func FrameSize(fields ...[]byte) int {
	n := 0
	for _, f := range fields {
		n += 4 + len(f)
	}
	return n
}

// AppendField appends one field to dst.
func AppendField(dst, field []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(field)))
	return append(dst, field...)
}

// AppendFieldString appends one string field to dst.
func AppendFieldString(dst []byte, field string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(field)))
	return append(dst, field...)
}

// Fields splits a frame into dst (reused, so decoding allocates nothing when
// dst has capacity). The fields alias frame.
func Fields(dst [][]byte, frame []byte) ([][]byte, error) {
	dst = dst[:0]
	for len(frame) > 0 {
		if len(frame) < 4 {
			return dst, ErrFrame
		}
		n := binary.LittleEndian.Uint32(frame)
		frame = frame[4:]
		if uint64(n) > uint64(len(frame)) {
			return dst, ErrFrame
		}
		dst = append(dst, frame[:n:n])
		frame = frame[n:]
	}
	return dst, nil
}
