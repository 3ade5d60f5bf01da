//go:build wasip1

// Command web-fetch is the spec's web-fetch plugin and the service:web_fetch
// server tool: it fetches web pages through the host's http function and
// gives the model their main content as Markdown. The logic is in package
// fetch; this wires the host functions into it.
package main

import (
	"runtime/debug"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/web-fetch/fetch"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

func init() {
	// HTML conversion allocates many short-lived nodes and strings, and the
	// Go runtime in Wasm collects on one thread: collecting less often
	// during a call is cheaper (the heap may grow to 5× the live set, well
	// inside memory_pages). Between calls the SDK returns the garbage
	// (sdk/exports.go, collect): without that the heap of an instance kept
	// growing over calls until it hit memory_pages (BenchmarkModuleToolCall
	// trapped after some 30 calls of a 100 KB page at 64 MiB).
	debug.SetGCPercent(400)
	m := &fetch.Module{Env: &fetch.Env{
		HTTP:        sdk.HTTP,
		KVGet:       sdk.KVGet,
		KVPut:       sdk.KVPut,
		CountTokens: sdk.CountTokens,
	}}
	sdk.Handle(abi.HookPreRequest, m.PreRequest)
	sdk.Handle(abi.HookToolCall, m.ToolCall)
}
