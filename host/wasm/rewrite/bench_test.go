package rewrite

import (
	"os"
	"testing"
)

// BenchmarkRewrite is what the engine does to a Go guest's binary before
// compiling it (the OpenAI adapter: ~40,000 data segments, every loop
// instrumented): MergeData, then Preempt.
func BenchmarkRewrite(b *testing.B) {
	bin, err := os.ReadFile("../../../build/wasm/openai.wasm")
	if err != nil {
		b.Skipf("%v (run make wasm)", err)
	}
	b.Run("MergeData", func(b *testing.B) {
		b.SetBytes(int64(len(bin)))
		for b.Loop() {
			MergeData(bin)
		}
	})
	merged := MergeData(bin)
	b.Run("Preempt", func(b *testing.B) {
		b.SetBytes(int64(len(merged)))
		for b.Loop() {
			if _, _, err := Preempt(merged); err != nil {
				b.Fatal(err)
			}
		}
	})
}
