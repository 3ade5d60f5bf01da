//go:build wasip1

// Command auto-router is the first-party `auto-router` module (spec 2.3),
// also run for the model id switchyard/auto: it classifies the
// conversation and routes it to the best allowed model at the request's
// cost/quality trade-off. The logic lives in package autoroute.
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/auto-router/autoroute"
	"github.com/switchyard/switchyard/plugins/internal/routing"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

var host = autoroute.Host{
	Chat: sdk.Chat, // the optional classifier model
	KV:   routing.KV{Get: sdk.KVGet, Put: sdk.KVPut},
}

func init() {
	sdk.Handle(abi.HookPreRequest, func(in *sdk.In, out *sdk.Out) error {
		return autoroute.PreRequest(host, in, out)
	})
}
