package tokenize

import (
	"encoding/base64"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// adversarialInputs are texts that cost a naive BPE far more than their
// size: one regex piece that is very long (a run of one character, a long
// base64 string), random bytes, and ordinary English for comparison.
func adversarialInputs(sizes ...int) []struct {
	name string
	text string
} {
	var out []struct {
		name string
		text string
	}
	add := func(name, text string) {
		out = append(out, struct {
			name string
			text string
		}{name, text})
	}
	for _, n := range sizes {
		label := sizeLabel(n)
		add("run_x_"+label, strings.Repeat("x", n))
		add("run_space_"+label, strings.Repeat(" ", n))
		add("run_digit_"+label, strings.Repeat("7", n))
	}
	r := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, 100_000)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	add("random_bytes_100k", strings.ToValidUTF8(string(raw), "?"))
	add("base64_100k", base64.StdEncoding.EncodeToString(raw[:75_000]))
	add("english_100k", strings.Repeat("The quick brown fox jumps over the lazy dog, and then it rests. ", 100_000/64))
	return out
}

func sizeLabel(n int) string {
	switch {
	case n >= 1_000_000:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// BenchmarkCountAdversarial reports the tokenizer's cost on inputs chosen to
// be slow. Run: go test -run '^$' -bench CountAdversarial ./host/tokenize
func BenchmarkCountAdversarial(b *testing.B) {
	e, err := Get(CL100K)
	if err != nil {
		b.Fatal(err)
	}
	for _, in := range adversarialInputs(10_000, 100_000, 1_000_000) {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			for b.Loop() {
				e.Count(in.text)
			}
		})
	}
}
