//go:build wasip1

// Command web is the first-party `web` module: the spec's web plugin
// (search once, inject the results, cite them) and the service:web_search
// server tool, over the demo engine, SearXNG, Exa, Brave or Tavily, or the
// provider's own search (native). The translation lives in package
// websearch; this is the glue to the ABI and to the host's outbound HTTP.
package main

import (
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

func init() {
	m := &websearch.Module{HTTP: hostHTTP, Uses: uses}
	sdk.Handle(abi.HookPreRequest, m.PreRequest)
	sdk.Handle(abi.HookPostResponse, m.PostResponse)
	sdk.Handle(abi.HookPostChunk, m.PostChunk)
	sdk.Handle(abi.HookToolCall, m.ToolCall)
}
