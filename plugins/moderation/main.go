//go:build wasip1

// Command moderation is the spec's moderation plugin (2.3): an input
// guardrail run before routing. Its logic lives in package moderate; this
// is the module's wiring to the host.
package main

import (
	"runtime"

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

// allocated approximates the garbage made since the last collection:
// about a hundred bytes per input byte (measured natively: folded, decoded
// and redacted copies of the texts, regexp state).
var allocated int

func init() {
	sdk.Handle(abi.HookPreRequest, func(in *sdk.In, out *sdk.Out) error {
		err := moderate.PreRequest(host, in, out)
		// A Go reactor's collector only finishes a cycle when the guest
		// blocks (its mark workers are goroutines, and nothing else runs
		// them between exported calls), so a guest that allocates per call
		// grows until it hits memory_pages and traps. Collect explicitly
		// once the garbage since the last collection may reach 16 MB.
		if allocated += 128 * len(in.Field(1)); allocated > 16<<20 {
			allocated = 0
			runtime.GC()
		}
		return err
	})
}
