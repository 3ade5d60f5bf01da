package flow

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/switchyard/switchyard/host/route"
)

// windowJSON is what encoding/json makes of a route.Window (its tags are
// the names plugins read in ctx.context).
func TestWindowJSON(t *testing.T) {
	for _, w := range []route.Window{{}, {MinContext: 4096, MaxContext: 128000, MaxOutput: 16384, MaxMessages: 100, NativeFiles: true},
		{MinContext: -1, MaxContext: 1 << 40}} {
		want, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		if got := windowJSON(w); string(got) != string(want) {
			t.Errorf("windowJSON(%+v) = %s, want %s", w, got, want)
		}
	}
}

func BenchmarkWindowJSON(b *testing.B) {
	w := route.Window{MinContext: 4096, MaxContext: 128000, MaxOutput: 16384, MaxMessages: 100}
	b.Run("byhand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = windowJSON(w)
		}
	})
	b.Run("appendf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = fmt.Appendf(nil, `{"min_context":%d,"max_context":%d,"max_output":%d,"max_messages":%d,"native_files":%t}`,
				w.MinContext, w.MaxContext, w.MaxOutput, w.MaxMessages, w.NativeFiles)
		}
	})
}
