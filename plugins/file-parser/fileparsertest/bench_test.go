//go:build !wasip1

package fileparsertest

import (
	"context"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/gatewaytest"
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
