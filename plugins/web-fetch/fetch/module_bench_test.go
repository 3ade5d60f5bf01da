//go:build !wasip1

package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/tidwall/gjson"
)

// BenchmarkModuleToolCall is one service:web_fetch call through the built
// module (make wasm): the host's http function fetches a 100 KB page from
// loopback, the module converts it to Markdown and returns the result.
func BenchmarkModuleToolCall(b *testing.B) {
	mod := gatewaytest.BuiltModule(b, "web-fetch", func(_ *manifest.Manifest, c *wasm.Config) { c.AllowPrivateNetworks = true })
	ctx := context.Background()
	page := page100K()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(page)
	}))
	defer srv.Close()
	args := []byte(`{"url":"` + srv.URL + `/page"}`)
	hctx := []byte(`{"config":{"id":"web-fetch"}}`)
	b.SetBytes(int64(len(page)))
	b.ResetTimer()
	for b.Loop() {
		out, err := mod.Call(ctx, abi.HookToolCall, hctx, []byte("web_fetch"), args)
		if err != nil {
			b.Fatal(err)
		}
		if s := gjson.GetBytes(out.Field(0), "status").Str; s != StatusCompleted {
			b.Fatalf("result %.300s", out.Field(0))
		}
	}
}
