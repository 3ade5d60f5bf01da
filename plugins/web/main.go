//go:build wasip1

// Command web is the first-party `web` module: the spec's web plugin
// (search once, inject the results, cite them) and the service:web_search
// server tool, over the demo engine, SearXNG, Exa, Brave or Tavily, or the
// provider's own search (native). The translation lives in package
// websearch; this is the glue to the ABI and to the host's outbound HTTP.
package main

import (
	"runtime"
	"runtime/metrics"
	"strconv"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/web/websearch"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

func hostHTTP(method, url, headers string, body []byte) (int, []byte, error) {
	status, _, resp, err := sdk.HTTP(method, url, headers, body)
	return status, resp, err
}

// uses counts the searches of one request in the module's kv store (scoped
// to the module and the account). Parallel calls of one turn may each read
// the count before the others write it, so they can overrun max_uses by
// the calls of that turn.
func uses(requestID string) (int, error) {
	key := "uses/" + requestID
	v, ok, err := sdk.KVGet(key)
	if err != nil {
		return 0, err
	}
	n := 0
	if ok {
		n, _ = strconv.Atoi(string(v))
	}
	return n, sdk.KVPut(key, []byte(strconv.Itoa(n+1)), 3600)
}

// gcAfter is how many bytes the module allocates before it forces a
// collection (see collected).
const gcAfter = 8 << 20

var (
	allocs    = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	lastAlloc uint64
)

// collected runs h, then a full garbage collection once the module has
// allocated gcAfter bytes since the last one. A Go reactor module's
// collector only advances while an export runs, and its background workers
// are not scheduled between calls, so cycles do not finish on their own:
// without this the heap grows call after call until it reaches
// limits.memory_pages and the instance traps (after a few thousand
// pre_request calls). Calls that allocate little never pay for it.
func collected(h sdk.Handler) sdk.Handler {
	return func(in *sdk.In, out *sdk.Out) error {
		err := h(in, out)
		metrics.Read(allocs)
		if a := allocs[0].Value.Uint64(); a-lastAlloc > gcAfter {
			runtime.GC()
			metrics.Read(allocs)
			lastAlloc = allocs[0].Value.Uint64()
		}
		return err
	}
}

func init() {
	m := &websearch.Module{HTTP: hostHTTP, Uses: uses}
	sdk.Handle(abi.HookPreRequest, collected(m.PreRequest))
	sdk.Handle(abi.HookPostResponse, collected(m.PostResponse))
	sdk.Handle(abi.HookPostChunk, collected(m.PostChunk))
	sdk.Handle(abi.HookToolCall, collected(m.ToolCall))
}
