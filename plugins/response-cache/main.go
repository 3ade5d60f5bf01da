//go:build wasip1

// Command response-cache is the response cache plugin (issue 35): an
// answered chat request's result is kept in the kv store of the request's
// account, and the same request again is answered from it without an
// upstream call. The logic is in package cache; this is its wiring to the
// host. See docs/response-cache.md.
package main

import (
	"errors"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/response-cache/cache"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

var hooks = cache.Hooks{Env: cache.Env{
	KVGet: sdk.KVGet,
	KVPut: func(key string, val []byte, ttl int) (int, error) {
		n, err := sdk.KVPutEvicting(key, val, ttl)
		var he *sdk.HostError
		if errors.As(err, &he) && he.Code == abi.HostQuota {
			return 0, cache.ErrFull
		}
		return n, err
	},
	Now:          time.Now,
	Embed:        sdk.Embed,
	VectorPut:    sdk.VectorPut,
	VectorSearch: sdk.VectorSearch,
}}

func init() {
	sdk.Handle(abi.HookPreRequest, hooks.PreRequest)
	sdk.Handle(abi.HookPostResponse, hooks.PostResponse)
}
