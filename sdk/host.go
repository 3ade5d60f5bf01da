//go:build wasip1

package sdk

import (
	"strconv"
	"unsafe"

	"github.com/switchyard/switchyard/abi"
)

// The host functions chat, count_tokens, kv_get and kv_put (docs/abi.md
// section 5). Each needs its grant in the manifest's grants.host_functions
// ("chat", "count_tokens", "kv"); a module that calls one without the grant
// is refused at load. The request and result buffers are reused across
// calls, so a call allocates nothing once they have grown.

//go:wasmimport switchyard chat
func hostChat(ptr unsafe.Pointer, n int32) int64

//go:wasmimport switchyard chat_batch
func hostChatBatch(ptr unsafe.Pointer, n int32) int64

//go:wasmimport switchyard chat_reserve
func hostChatReserve(ptr unsafe.Pointer, n int32) int64

//go:wasmimport switchyard count_tokens
func hostCountTokens(ptr unsafe.Pointer, n int32) int64

//go:wasmimport switchyard kv_get
func hostKVGet(ptr unsafe.Pointer, n int32) int64

//go:wasmimport switchyard kv_put
func hostKVPut(ptr unsafe.Pointer, n int32) int64

//go:wasmimport switchyard result
func hostResult(ptr unsafe.Pointer, limit int32) int32

var (
	hostReq  []byte
	hostRes  []byte
	hostFlds [][]byte
)

// HostError is a host function that failed: Code is one of abi.HostDenied
// (not granted or refused by policy), abi.HostFailed, abi.HostNotFound,
// abi.HostQuota (the module's kv store is full) and abi.HostBudget (the
// request's budget for the function is spent).
type HostError struct {
	Code    int64
	Message string
}

func (e *HostError) Error() string { return e.Message }

// hostResultOf copies the result of a call that returned n into the reused
// buffer and splits it into fields; a negative n becomes a *HostError.
func hostResultOf(n int64) ([][]byte, error) {
	size := n
	if size < 0 {
		size = int64(hostResult(nil, 0))
	}
	if int(size) > cap(hostRes) {
		hostRes = make([]byte, size)
	}
	hostRes = hostRes[:size]
	if size > 0 {
		hostResult(unsafe.Pointer(&hostRes[0]), int32(size))
	}
	hostFlds, _ = abi.Fields(hostFlds, hostRes)
	if n < 0 {
		msg := "host function failed"
		if len(hostFlds) > 0 {
			msg = string(hostFlds[0])
		}
		return nil, &HostError{Code: n, Message: msg}
	}
	return hostFlds, nil
}

func reqPtr() unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(hostReq)) }

// Chat runs a chat request (an OpenAI-style body; the model is routed like
// any request's) as a sub-request of the current request: charged to its
// key and counted in its usage. status and resp are the sub-request's HTTP
// status and body, an error body included; err is a call that did not run
// (not available here, budget spent, depth limit). resp is reused by the
// next host call.
func Chat(body []byte) (status int, resp []byte, err error) {
	hostReq = abi.AppendField(hostReq[:0], body)
	f, err := hostResultOf(hostChat(reqPtr(), int32(len(hostReq))))
	if err != nil {
		return 0, nil, err
	}
	if len(f) < 2 {
		return 0, nil, &HostError{Code: abi.HostFailed, Message: "malformed chat result from host"}
	}
	status, _ = strconv.Atoi(string(f[0]))
	return status, f[1], nil
}

// ChatResult is one answer of ChatBatch: the sub-request's HTTP status and
// body (its own copy, kept across host calls).
type ChatResult struct {
	Status int
	Body   []byte
}

// ChatBatch runs up to abi.MaxChatBatch chat requests as sub-requests of
// the current request, concurrently (Chat runs one at a time: the module's
// instance waits for each). The results are in the order of bodies; a
// sub-request that failed is an error status and body, like Chat's. err is
// a batch that did not run (not available here, budget spent).
func ChatBatch(bodies [][]byte) ([]ChatResult, error) {
	hostReq = hostReq[:0]
	for _, b := range bodies {
		hostReq = abi.AppendField(hostReq, b)
	}
	f, err := hostResultOf(hostChatBatch(reqPtr(), int32(len(hostReq))))
	if err != nil {
		return nil, err
	}
	if len(f) != 2*len(bodies) {
		return nil, &HostError{Code: abi.HostFailed, Message: "malformed chat_batch result from host"}
	}
	out := make([]ChatResult, len(bodies))
	for i := range out {
		out[i].Status, _ = strconv.Atoi(string(f[2*i]))
		out[i].Body = append([]byte(nil), f[2*i+1]...)
	}
	return out, nil
}

// ChatReserve holds the worst-case cost of the chat sub-requests the module
// is about to make (plan: {"calls":[{"model","prompt_tokens","max_tokens",
// "turns"}]}, docs/abi.md) before any of them runs. status 200: held (resp
// {"held","calls"}); 402: the account cannot cover them (resp is the error
// body, nothing was held or charged).
func ChatReserve(plan []byte) (status int, resp []byte, err error) {
	hostReq = abi.AppendField(hostReq[:0], plan)
	f, err := hostResultOf(hostChatReserve(reqPtr(), int32(len(hostReq))))
	if err != nil {
		return 0, nil, err
	}
	if len(f) < 2 {
		return 0, nil, &HostError{Code: abi.HostFailed, Message: "malformed chat_reserve result from host"}
	}
	status, _ = strconv.Atoi(string(f[0]))
	return status, f[1], nil
}

// CountTokens counts text with the host's tokenizer for model.
func CountTokens(model, text string) (int, error) {
	hostReq = abi.AppendFieldString(hostReq[:0], model)
	hostReq = abi.AppendFieldString(hostReq, text)
	f, err := hostResultOf(hostCountTokens(reqPtr(), int32(len(hostReq))))
	if err != nil {
		return 0, err
	}
	if len(f) < 1 {
		return 0, &HostError{Code: abi.HostFailed, Message: "malformed count_tokens result from host"}
	}
	return strconv.Atoi(string(f[0]))
}

// KVGet reads key from the module's store (scoped to the module and the
// request's account). ok is false when the key is absent or expired. val
// is reused by the next host call.
func KVGet(key string) (val []byte, ok bool, err error) {
	hostReq = abi.AppendFieldString(hostReq[:0], key)
	f, err := hostResultOf(hostKVGet(reqPtr(), int32(len(hostReq))))
	if err != nil {
		if he, _ := err.(*HostError); he != nil && he.Code == abi.HostNotFound {
			return nil, false, nil
		}
		return nil, false, err
	}
	if len(f) < 1 {
		return nil, false, &HostError{Code: abi.HostFailed, Message: "malformed kv_get result from host"}
	}
	return f[0], true, nil
}

// KVPut stores val under key for ttlSeconds (0: the store's maximum). An
// empty val deletes the key. A full store is a *HostError with Code
// abi.HostQuota.
func KVPut(key string, val []byte, ttlSeconds int) error {
	hostReq = abi.AppendFieldString(hostReq[:0], key)
	hostReq = abi.AppendField(hostReq, val)
	hostReq = abi.AppendFieldString(hostReq, strconv.Itoa(ttlSeconds))
	_, err := hostResultOf(hostKVPut(reqPtr(), int32(len(hostReq))))
	return err
}

// KVPutEvicting is KVPut for a cache: when the module's store for this
// account is full, the host evicts the entries that expire soonest until
// val fits, and says how many it evicted (docs/abi.md section 5). It fails
// with abi.HostQuota only for an entry larger than the whole quota.
func KVPutEvicting(key string, val []byte, ttlSeconds int) (evicted int, err error) {
	hostReq = abi.AppendFieldString(hostReq[:0], key)
	hostReq = abi.AppendField(hostReq, val)
	hostReq = abi.AppendFieldString(hostReq, strconv.Itoa(ttlSeconds))
	hostReq = abi.AppendFieldString(hostReq, "evict")
	f, err := hostResultOf(hostKVPut(reqPtr(), int32(len(hostReq))))
	if err != nil {
		return 0, err
	}
	if len(f) > 0 {
		evicted, _ = strconv.Atoi(string(f[0]))
	}
	return evicted, nil
}
