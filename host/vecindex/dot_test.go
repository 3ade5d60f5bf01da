package vecindex

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The dot product the index uses (assembly where the CPU has it) against
// the portable one, at every length around its steps (32, 8, 1).
func TestDotMatchesPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for n := 0; n <= 300; n++ {
		a, b := make([]float32, n), make([]float32, n+3) // b longer: only len(a) is read
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		got, want := dot(a, b), dotGo(a, b)
		if math.Abs(float64(got-want)) > 1e-4*math.Sqrt(float64(n)+1) {
			t.Fatalf("n=%d: dot %v, portable %v", n, got, want)
		}
	}
}

func BenchmarkDot256(b *testing.B) {
	x, y := make([]float32, 256), make([]float32, 256)
	for i := range x {
		x[i], y[i] = float32(i), float32(256-i)
	}
	var s float32
	for _, c := range []struct {
		name string
		f    func(a, b []float32) float32
	}{{"index", dot}, {"portable", dotGo}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				s += c.f(x, y)
			}
		})
	}
	_ = s
}
