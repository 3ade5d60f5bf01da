//go:build wasip1

package sdk

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"

	"github.com/switchyard/switchyard/abi"
)

// The host functions embed, vector_put and vector_search (docs/abi.md
// section 5, revision 3). embed needs the grant "embed"; the vector
// functions "vector".

//go:wasmimport switchyard embed
func hostEmbed(ptr unsafe.Pointer, n int32) int64

//go:wasmimport switchyard vector_put
func hostVectorPut(ptr unsafe.Pointer, n int32) int64

//go:wasmimport switchyard vector_search
func hostVectorSearch(ptr unsafe.Pointer, n int32) int64

// Embed runs an embeddings request body ({"model": …, "input": …}, the
// OpenAI shape) as a sub-request of the current request: charged to its
// key, counted in its usage and rate limits, and taking one of its chat
// calls. status and resp are the sub-request's HTTP status and body; err
// is a call that did not run. resp is reused by the next host call.
func Embed(body []byte) (status int, resp []byte, err error) {
	hostReq = abi.AppendField(hostReq[:0], body)
	f, err := hostResultOf(hostEmbed(reqPtr(), int32(len(hostReq))))
	if err != nil {
		return 0, nil, err
	}
	if len(f) < 2 {
		return 0, nil, &HostError{Code: abi.HostFailed, Message: "malformed embed result from host"}
	}
	status, _ = strconv.Atoi(string(f[0]))
	return status, f[1], nil
}

// appendFloats appends v as little-endian float32s, the host's wire form.
func appendFloats(dst []byte, v []float32) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

// VectorPut stores vector v under id in partition of the module's vector
// index for the request's account (the host scopes it; the module names a
// partition inside that scope), with tag, for ttlSeconds (0: the index's
// maximum). An empty v deletes id. It answers how many entries the host
// evicted (least recently used) to make room.
func VectorPut(partition, id, tag string, v []float32, ttlSeconds int) (evicted int, err error) {
	hostReq = abi.AppendFieldString(hostReq[:0], partition)
	hostReq = abi.AppendFieldString(hostReq, id)
	hostReq = abi.AppendFieldString(hostReq, tag)
	hostReq = abi.AppendField(hostReq, appendFloats(nil, v))
	hostReq = abi.AppendFieldString(hostReq, strconv.Itoa(ttlSeconds))
	f, err := hostResultOf(hostVectorPut(reqPtr(), int32(len(hostReq))))
	if err != nil {
		return 0, err
	}
	if len(f) > 0 {
		evicted, _ = strconv.Atoi(string(f[0]))
	}
	return evicted, nil
}

// VectorSearch finds the entry of partition with tag whose vector is the
// most similar to v (cosine), if its similarity is at least min. ok is
// false when there is none.
func VectorSearch(partition, tag string, v []float32, min float64) (m VectorMatch, ok bool, err error) {
	hostReq = abi.AppendFieldString(hostReq[:0], partition)
	hostReq = abi.AppendFieldString(hostReq, tag)
	hostReq = abi.AppendField(hostReq, appendFloats(nil, v))
	hostReq = abi.AppendFieldString(hostReq, strconv.FormatFloat(min, 'f', -1, 64))
	f, err := hostResultOf(hostVectorSearch(reqPtr(), int32(len(hostReq))))
	if err != nil {
		if he, _ := err.(*HostError); he != nil && he.Code == abi.HostNotFound {
			return VectorMatch{}, false, nil
		}
		return VectorMatch{}, false, err
	}
	if len(f) < 3 {
		return VectorMatch{}, false, &HostError{Code: abi.HostFailed, Message: "malformed vector_search result from host"}
	}
	m.ID = string(f[0])
	m.Similarity, _ = strconv.ParseFloat(string(f[1]), 64)
	m.AgeSeconds, _ = strconv.ParseInt(string(f[2]), 10, 64)
	return m, true, nil
}
