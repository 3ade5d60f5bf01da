//go:build !wasip1

package fileparsertest

import (
	"context"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/tidwall/gjson"
)

// BenchmarkFileParserModule is the per-call cost of the module's
// pre_request through the Wasm boundary on each test PDF, parsing every
// time (the engine has no kv store, so nothing is cached), reported per
// call and per page.
func BenchmarkFileParserModule(b *testing.B) {
	mod := gatewaytest.BuiltModule(b, "file-parser", nil)
	ctx := context.Background()
	pctx := []byte(`{"config":{"id":"file-parser"},"model":"test/chat","scope":"global"}`)
	for _, file := range []string{"groff.pdf", "ghostscript.pdf", "fpdf-multilingual.pdf", "long.pdf"} {
		body := []byte(fileRequest(file, dataURL(b, file), `{"id":"file-parser"}`))
		b.Run(file, func(b *testing.B) {
			pages := 0
			b.ReportAllocs()
			for b.Loop() {
				out, err := mod.Call(ctx, abi.HookPreRequest, pctx, body)
				if err != nil || len(out.Fields) < 3 || string(out.Field(0)) != abi.ActionContinue {
					b.Fatalf("%v %q", err, out.Field(1))
				}
				pages = int(gjson.GetBytes(out.Field(2), "data.pages").Int())
			}
			if pages > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pages)/1000, "µs/page")
			}
		})
	}
}

// BenchmarkFileParserModuleVision is engine vision's own per-page cost
// inside the module — finding each page's images, converting them,
// building the chat body with their data URLs, reading the answer — with
// the model call answered at once by the host (the model's time and price
// are the vision model's: usage.cost has them per request).
func BenchmarkFileParserModuleVision(b *testing.B) {
	mod := gatewaytest.BuiltModule(b, "file-parser", nil)
	calls := 0
	env := &wasm.CallEnv{ChatCalls: 1 << 30, Chat: func(_ context.Context, body []byte) (int, []byte, error) {
		calls++
		if !gjson.GetBytes(body, `messages.1.content.#(type=="image_url").image_url.url`).Exists() {
			return 400, []byte(`{"error":{"message":"no image"}}`), nil
		}
		return 200, []byte(`{"choices":[{"message":{"role":"assistant","content":"transcribed page text"}}]}`), nil
	}}
	ctx := wasm.WithCallEnv(context.Background(), env)
	pctx := []byte(`{"config":{"id":"file-parser","pdf":{"engine":"vision"}},"model":"test/chat","scope":"global","settings":{"vision":{"model":"test/vision"}}}`)
	for _, file := range []string{"scan-img2pdf.pdf", "scan-gs.pdf", "scan-mixed.pdf"} {
		body := []byte(fileRequest(file, dataURL(b, file), vision))
		b.Run(file, func(b *testing.B) {
			pages := 0
			b.ReportAllocs()
			for b.Loop() {
				out, err := mod.Call(ctx, abi.HookPreRequest, pctx, body)
				if err != nil || len(out.Fields) < 3 || string(out.Field(0)) != abi.ActionContinue {
					b.Fatalf("%v %q", err, out.Field(1))
				}
				pages = int(gjson.GetBytes(out.Field(2), "data.vision.calls").Int())
			}
			if pages > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pages)/1000, "µs/page")
			}
		})
	}
}
