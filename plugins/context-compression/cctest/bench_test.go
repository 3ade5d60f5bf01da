//go:build !wasip1

package cctest_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/tidwall/gjson"
)

// load loads the built module (make wasm) in an engine of its own.
func load(b *testing.B) *wasm.Module { return gatewaytest.BuiltModule(b, "context-compression", nil) }

// sized is a conversation of about size bytes: a system prompt, turns of
// about 1 KB, and a last question.
func sized(size int) []byte {
	ms := []map[string]any{{"role": "system", "content": "You keep the minutes."}}
	for i := 0; ; i++ {
		b, _ := json.Marshal(map[string]any{"model": "test/small", "messages": ms})
		if len(b) >= size-200 {
			break
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		n := min(size-len(b)-200, 1000)
		ms = append(ms, map[string]any{"role": role, "content": words("t"+strconv.Itoa(i), max(n/8, 1))[:n]})
	}
	ms = append(ms, map[string]any{"role": "user", "content": "What did we decide?"})
	b, _ := json.Marshal(map[string]any{"model": "test/small", "messages": ms})
	return b
}

// BenchmarkContextCompressionModule is the module's per-call cost through
// the Wasm boundary (count_tokens on the host's tokenizer included) at 1
// KB, 10 KB and 100 KB requests: "fits" counts and leaves the request
// alone; "compress" must fit it into about a quarter of its tokens.
func BenchmarkContextCompressionModule(b *testing.B) {
	mod := load(b)
	ctx := context.Background()
	for _, size := range []int{1 << 10, 10 << 10, 100 << 10} {
		body := sized(size)
		tokens := len(body) / 4 // about
		for _, c := range []struct{ name, window string }{
			{"fits", `{"min_context":1048576,"max_context":1048576}`},
			{"compress", `{"min_context":` + strconv.Itoa(tokens/4) + `,"max_context":` + strconv.Itoa(tokens/4) + `}`},
		} {
			pctx := []byte(`{"config":{"id":"context-compression"},"model":"test/small","scope":"global","context":` + c.window + `}`)
			b.Run(strconv.Itoa(size>>10)+"KB/"+c.name, func(b *testing.B) {
				out, err := mod.Call(ctx, abi.HookPreRequest, pctx, body)
				if err != nil || string(out.Field(0)) != abi.ActionContinue || (c.name == "compress") != (len(out.Field(1)) > 0) {
					b.Fatalf("%v %s %s", err, out.Field(0), out.Field(2))
				}
				b.Logf("%d bytes, %s", len(body), gjson.GetBytes(out.Field(2), "summary").Str)
				b.SetBytes(int64(len(body)))
				b.ResetTimer()
				for range b.N {
					if _, err := mod.Call(ctx, abi.HookPreRequest, pctx, body); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
