//go:build wasip1

// Command failing is a test module whose every hook fails: the gateway must
// report it, not fall back to a Go path.
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

func fail(in *sdk.In, out *sdk.Out) error { return sdk.Error("deliberate failure") }

func init() {
	for h := abi.HookChatRequest; h <= abi.HookError; h++ {
		sdk.Handle(h, fail)
	}
}
