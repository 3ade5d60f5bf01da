package wasm

import (
	"errors"
	"strconv"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/vecindex"
)

// hostEmbed runs one embeddings request body as a sub-request of the
// call's request (CallEnv.Embed: the request core's, charged and
// rate-limited like a chat sub-request). It takes one call of the
// request's chat budget: an embedding is a priced upstream call, and one
// budget bounds what a module can spend of a request.
func hostEmbed(r hostRequest, dst []byte) ([]byte, int64) {
	env := r.env
	if env.Embed == nil {
		return fail(dst, abi.HostDenied, "embed is not available to this call (no request to run it under)")
	}
	limit := env.chatLimit(r.engine.chatCalls())
	if !spend(&env.chatUsed, limit) {
		return fail(dst, abi.HostBudget, "this request's budget of "+strconv.Itoa(limit)+" chat and embed calls is spent")
	}
	status, resp, err := env.Embed(r.ctx, append([]byte(nil), r.field(0)...))
	if err != nil {
		return fail(dst, abi.HostFailed, "embed: "+err.Error())
	}
	dst = abi.AppendFieldString(dst, strconv.Itoa(status))
	dst = abi.AppendField(dst, resp)
	return dst, int64(len(dst))
}

// hostVectorPut stores (or, with an empty vector, deletes) a vector in the
// module's index for the request's account: the scope is kv's (kvScope),
// filled by the host, so a module can name partitions only inside it.
func hostVectorPut(r hostRequest, dst []byte) ([]byte, int64) {
	ix := r.engine.cfg.Vectors
	if ix == nil {
		return fail(dst, abi.HostFailed, "this gateway has no vector index")
	}
	if len(r.fields) < 4 {
		return fail(dst, abi.HostFailed, "vector_put takes [partition, id, tag, vector, ttl]")
	}
	if len(r.field(3))%4 != 0 {
		return fail(dst, abi.HostFailed, "vector_put: the vector is little-endian float32s (a multiple of 4 bytes)")
	}
	ttl := int64(0)
	if t := r.field(4); len(t) > 0 {
		var err error
		if ttl, err = strconv.ParseInt(string(t), 10, 64); err != nil || ttl < 0 {
			return fail(dst, abi.HostFailed, "vector_put: the ttl must be a decimal number of seconds (0: the index's maximum)")
		}
	}
	evicted, err := ix.Put(r.kvScope(), string(r.field(0)), string(r.field(1)), string(r.field(2)),
		vecindex.Floats(r.field(3)), time.Duration(min(ttl, 1<<32))*time.Second)
	switch {
	case errors.Is(err, vecindex.ErrBadVector), errors.Is(err, vecindex.ErrBadName):
		return fail(dst, abi.HostFailed, "vector_put: "+err.Error())
	case err != nil:
		return fail(dst, abi.HostFailed, err.Error())
	}
	dst = abi.AppendFieldString(dst, strconv.Itoa(evicted))
	return dst, int64(len(dst))
}

// hostVectorSearch finds the entry of a partition of the module's index
// for the request's account, of the same tag, most similar to a vector,
// if at least as similar as asked.
func hostVectorSearch(r hostRequest, dst []byte) ([]byte, int64) {
	ix := r.engine.cfg.Vectors
	if ix == nil {
		return fail(dst, abi.HostFailed, "this gateway has no vector index")
	}
	if len(r.fields) < 3 || len(r.field(2))%4 != 0 {
		return fail(dst, abi.HostFailed, "vector_search takes [partition, tag, vector (little-endian float32s), min similarity]")
	}
	minSim := float64(-1)
	if t := r.field(3); len(t) > 0 {
		var err error
		if minSim, err = strconv.ParseFloat(string(t), 32); err != nil {
			return fail(dst, abi.HostFailed, "vector_search: the min similarity must be a decimal number")
		}
	}
	m, ok := ix.Search(r.kvScope(), string(r.field(0)), string(r.field(1)), vecindex.Floats(r.field(2)), float32(minSim))
	if !ok {
		return fail(dst, abi.HostNotFound, "no entry that similar")
	}
	age := max(int64(ix.Now().Sub(m.Created)/time.Second), 0)
	dst = abi.AppendFieldString(dst, m.ID)
	dst = abi.AppendFieldString(dst, strconv.FormatFloat(float64(m.Similarity), 'f', 4, 32))
	dst = abi.AppendFieldString(dst, strconv.FormatInt(age, 10))
	return dst, int64(len(dst))
}
