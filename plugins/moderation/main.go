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
	// Chat (the llama-guard engine) is wired to sdk.Chat once the chat host
	// function is in the SDK; until then the engine reports that it cannot
	// run in this build.
}

func init() {
	sdk.Handle(abi.HookPreRequest, func(in *sdk.In, out *sdk.Out) error {
		return moderate.PreRequest(host, in, out)
	})
}
