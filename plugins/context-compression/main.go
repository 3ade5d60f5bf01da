//go:build wasip1

// Command context-compression is the first-party `context-compression`
// module (spec 2.3): the middle-out engine, which fits an over-long
// conversation into the context of the endpoints the request may be routed
// to. The engine lives in package middleout; this is the glue to the ABI
// and to the host's tokenizer.
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/context-compression/middleout"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

func init() {
	m := &middleout.Module{Count: sdk.CountTokens}
	sdk.Handle(abi.HookPreRequest, m.PreRequest)
}
