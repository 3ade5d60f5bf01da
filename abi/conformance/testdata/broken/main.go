//go:build wasip1

// Command broken is a plugin the guest check must fail, built the ways a
// newcomer broke one (issue 37): its post_response panics on every call
// (an index past the end of an empty slice), and it has no post_chunk
// handler, so a manifest declaring post_chunk lies (lacking.json). The
// Makefile also builds it without -buildmode=c-shared, a build whose
// every call traps (the Go runtime is never initialised).
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

func init() {
	sdk.Handle(abi.HookPreRequest, func(in *sdk.In, out *sdk.Out) error {
		out.FieldString(abi.ActionContinue)
		return nil
	})
	sdk.Handle(abi.HookPostResponse, func(in *sdk.In, out *sdk.Out) error {
		var choices []int
		out.FieldString(abi.ActionContinue)
		sink = choices[len(in.Field(1))%7+3] // always out of range
		return nil
	})
}

var sink int
