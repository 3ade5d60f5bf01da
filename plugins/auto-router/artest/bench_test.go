//go:build !wasip1

// Package artest measures the built auto-router module through the Wasm
// boundary.
package artest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/route"
)

// BenchmarkAutoRouterModule is one routing decision's cost: the ctx with
// the default catalog's candidates (all providers on) and a short coding
// question, through the module's pre_request hook.
func BenchmarkAutoRouterModule(b *testing.B) {
	mod := gatewaytest.BuiltModule(b, "auto-router", nil)
	c, err := config.Parse(config.Default())
	if err != nil {
		b.Fatal(err)
	}
	cat, err := c.Catalog("http://127.0.0.1:1/v1", func(string) string { return "key" })
	if err != nil {
		b.Fatal(err)
	}
	cands := route.New(cat, route.Options{}).Candidates(route.Request{}, nil)
	pctx, _ := json.Marshal(map[string]any{"config": map[string]any{"id": "auto-router"}, "model": "switchyard/auto", "scope": "global",
		"context": map[string]any{"models": cands}})
	body := []byte(`{"model":"switchyard/auto","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Why does my Go program panic with 'assignment to entry in nil map' when I fill a map in a loop?"}]}`)
	ctx := context.Background()
	if out, err := mod.Call(ctx, abi.HookPreRequest, pctx, body); err != nil || string(out.Field(0)) != abi.ActionContinue {
		b.Fatalf("%v %s", err, out.Field(2))
	}
	for _, c := range []struct {
		name      string
		ctx, body []byte
	}{
		{"decide", pctx, body},
		// The same without candidates: what classifying and the call cost.
		{"classify-only", []byte(`{"config":{"id":"auto-router"},"context":{"models":[]}}`), body},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if _, err := mod.Call(ctx, abi.HookPreRequest, c.ctx, c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
