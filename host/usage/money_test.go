package usage

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestParseUSDFastPathMatchesRat: the integer fast path reads every amount
// exactly as the big.Rat path does, and amounts round-trip through USD.
func TestParseUSDFastPathMatchesRat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ins := []string{"0", "-0", "1", "0.1", "0.000000001", "999999999.999999999", "-12.5", "007.50", "1.0000000001", "1e-3", "+1", ".5", "1.", "1.2.3", "--1", "1a", "9999999999"}
	for range 2000 {
		n := Nanos(rng.Int64N(2_000_000_000_000_000_000)) - 1_000_000_000_000_000_000
		ins = append(ins, n.USD())
		if back, err := ParseUSD(n.USD()); err != nil || back != n {
			t.Fatalf("ParseUSD(%q) = %d, %v; want %d", n.USD(), back, err, n)
		}
	}
	for _, s := range ins {
		got, ok := ParsePlainUSD(s)
		if !ok {
			continue
		}
		r, rok := new(big.Rat).SetString(s)
		if !rok {
			t.Fatalf("fast path accepted %q, big.Rat does not", s)
		}
		want := new(big.Rat).SetInt64(int64(got)) // exact: no rounding on this path
		want.Quo(want, nanosPerUSDRat)
		if r.Cmp(want) != 0 {
			t.Fatalf("ParsePlainUSD(%q) = %d, want %s", s, got, r.FloatString(9))
		}
	}
}

// BenchmarkParseUSD: an amount as the ledger's records hold it (fast path)
// and the same amount in a form only big.Rat reads (what every amount cost
// before the fast path).
func BenchmarkParseUSD(b *testing.B) {
	for _, in := range []string{"1234.002500013", "1.234002500013e3"} {
		b.Run(in, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseUSD(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendUSD(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 32)
	for b.Loop() {
		buf = Nanos(1234_002500013).AppendUSD(buf[:0])
	}
}

// USD renders exactly, extremes included, in at most one allocation (the
// string's).
func TestUSD(t *testing.T) {
	for _, c := range []struct {
		n    Nanos
		want string
	}{
		{0, "0"}, {4_200_000, "0.0042"}, {12_500_000_000, "12.5"}, {-1, "-0.000000001"},
		{math.MaxInt64, "9223372036.854775807"}, {math.MinInt64, "-9223372036.854775808"},
	} {
		if got := c.n.USD(); got != c.want {
			t.Errorf("%d: %q, want %q", int64(c.n), got, c.want)
		}
	}
	var sink string
	if n := testing.AllocsPerRun(100, func() { sink = Nanos(math.MinInt64).USD() }); n > 1 {
		t.Errorf("USD allocated %v times, want at most once", n)
	}
	_ = sink
}
