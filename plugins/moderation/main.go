//go:build wasip1

// Command moderation is the spec's moderation plugin (2.3): an input
// guardrail run before routing. Its logic lives in package moderate; this
// is the module's wiring to the host.
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/moderation/moderate"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

var host = moderate.Host{
	HTTP: func(method, url, headers string, body []byte) (int, []byte, error) {
		status, _, resp, err := sdk.HTTP(method, url, headers, body)
		return status, resp, err
	},
	Chat: sdk.Chat, // the llama-guard engine
}

func init() {
	// The SDK collects garbage between calls (sdk/exports.go, collect).
	sdk.Handle(abi.HookPreRequest, func(in *sdk.In, out *sdk.Out) error {
		return moderate.PreRequest(host, in, out)
	})
}
