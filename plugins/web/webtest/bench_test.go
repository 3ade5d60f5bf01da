//go:build !wasip1

package webtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/tidwall/gjson"
)

// loadWeb loads the built web module (make wasm) in an engine of its own.
func loadWeb(b *testing.B) *wasm.Module {
	return gatewaytest.BuiltModule(b, "web", func(m *manifest.Manifest, _ *wasm.Config) {
		if os.Getenv("WEB_BENCH_NO_TIMEOUT") != "" {
			m.Limits.TimeoutMS = 0
		}
	})
}

// BenchmarkWebModule is the per-call cost of the web module's hooks through
// the Wasm boundary, with the demo engine (no network): pre_request (search
// the embedded index, inject), post_response (annotate), post_chunk (one
// content chunk) and tool_call (search, result JSON).
func BenchmarkWebModule(b *testing.B) {
	mod := loadWeb(b)
	ctx := context.Background()
	body := []byte(`{"model":"test/chat","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"How does the gateway bill a stream that the client abandons?"}],"plugins":[{"id":"web"}]}`)
	pctx := []byte(`{"config":{"id":"web"},"model":"test/chat","scope":"global"}`)
	out, err := mod.Call(ctx, abi.HookPreRequest, pctx, body)
	if err != nil || len(out.Fields) < 4 {
		b.Fatal(err)
	}
	sctx := []byte(`{"config":{"id":"web"},"model":"test/chat","scope":"global","state":` + string(out.Field(3)) + `}`)
	url := gjson.GetBytes(out.Field(3), "results.0.url").Str
	result := []byte(`{"id":"g","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Streams are settled at their end; see [docs](` + url + `) for details."},"finish_reason":"stop"}]}`)
	chunk := []byte(`{"id":"g","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Streams are settled at their end, "},"finish_reason":null}]}`)
	cases := []struct {
		name   string
		hook   abi.Hook
		fields [][]byte
	}{
		{"pre_request/demo", abi.HookPreRequest, [][]byte{pctx, body}},
		{"post_response", abi.HookPostResponse, [][]byte{sctx, result}},
		{"post_response/no-search", abi.HookPostResponse, [][]byte{pctx, result}},
		{"tool_call/bad-engine", abi.HookToolCall, [][]byte{[]byte(`{"parameters":{"engine":"x"}}`), []byte("web_search"), []byte(`{"query":"stream billing abandoned client"}`)}},
		{"tool_call/no-results", abi.HookToolCall, [][]byte{[]byte(`{"parameters":{}}`), []byte("web_search"), []byte(`{"query":"zzzqqq"}`)}},
		{"post_chunk", abi.HookPostChunk, [][]byte{sctx, chunk}},
		{"tool_call/demo", abi.HookToolCall, [][]byte{[]byte(`{"parameters":{}}`), []byte("web_search"), []byte(`{"query":"stream billing abandoned client"}`)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := mod.Call(ctx, c.hook, c.fields...)
				if err != nil || len(out.Fields) < 2 {
					b.Fatal(err)
				}
			}
		})
	}
}
