package wasm

import (
	"context"

	"github.com/tetratelabs/wazero/api"
)

// hostYield is switchyard.__yield (rewrite.YieldImport), which a module
// instrumented by rewrite.Preempt calls every rewrite.YieldEvery loop
// iterations. Past the call's deadline it fails the call (wazero turns the
// panic into the call's error); otherwise it returns, and the goroutine has
// passed through Go.
func hostYield(ctx context.Context, _ api.Module) {
	if err := ctx.Err(); err != nil {
		panic(err)
	}
}
