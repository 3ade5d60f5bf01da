//go:build wasip1

// Command pareto-router is the first-party `pareto-router` module (spec
// 2.3), also run for the model id switchyard/pareto-code: the cheapest
// model of the coding-score tier a request asks for. The logic lives in
// package pareto.
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/internal/routing"
	"github.com/switchyard/switchyard/plugins/pareto-router/pareto"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

var kv = routing.KV{Get: sdk.KVGet, Put: sdk.KVPut}

func init() {
	sdk.Handle(abi.HookPreRequest, func(in *sdk.In, out *sdk.Out) error {
		return pareto.PreRequest(kv, in, out)
	})
}
