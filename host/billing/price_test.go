package billing

import (
	"math"
	"testing"

	"github.com/switchyard/switchyard/host/catalog"
)

func TestParseUSD(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Nanos
		err  bool
	}{
		{"0", 0, false},
		{"1", NanosPerUSD, false},
		{"0.25", 250_000_000, false},
		{"12.5", 12_500_000_000, false},
		{"1e-3", 1_000_000, false},
		{"0.0000000005", 1, false},   // half a nano rounds away from zero
		{"0.0000000004", 0, false},   // less than half rounds down
		{"-0.0000000015", -2, false}, // symmetric for negatives
		{"0.1", 100_000_000, false},  // exact, no float detour
		{"9223372036.854775807", math.MaxInt64, false},
		{"9223372037", 0, true},
		{"", 0, true},
		{"abc", 0, true},
		{"1/3", 0, true},
	} {
		got, err := ParseUSD(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseUSD(%q) = %d, %v; want %d, err=%v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestUSDFormat(t *testing.T) {
	for _, tc := range []struct {
		n    Nanos
		want string
	}{
		{0, "0"}, {1, "0.000000001"}, {4_200_000, "0.0042"}, {12_500_000_000, "12.5"}, {-1_500_000_000, "-1.5"},
		{NanosPerUSD, "1"}, {math.MinInt64, "-9223372036.854775808"},
	} {
		if got := tc.n.USD(); got != tc.want {
			t.Errorf("%d.USD() = %q, want %q", int64(tc.n), got, tc.want)
		}
		if tc.n != math.MinInt64 {
			if back, err := ParseUSD(tc.want); err != nil || back != tc.n {
				t.Errorf("round trip %q = %d, %v", tc.want, back, err)
			}
		}
	}
}

func TestCompute(t *testing.T) {
	p := catalog.Price{Prompt: 2.5, Completion: 10, CacheRead: 1.25, Reasoning: 0, Request: 0.001, Image: 0.0025}
	r := RatesOf(p)
	if r.Prompt != 2_500_000_000 || r.Reasoning != r.Completion || r.Request != 1_000_000 {
		t.Fatalf("rates %+v", r)
	}
	for _, tc := range []struct {
		name string
		r    Rates
		u    Usage
		want Cost
	}{
		{"plain", r, Usage{PromptTokens: 1000, CompletionTokens: 500, Requests: 1},
			Cost{Total: 2_500_000 + 5_000_000 + 1_000_000, Prompt: 2_500_000, Completion: 5_000_000, Request: 1_000_000}},
		{"cached and reasoning", r, Usage{PromptTokens: 1000, CachedTokens: 400, CompletionTokens: 500, ReasoningTokens: 200},
			Cost{Total: 1_500_000 + 500_000 + 3_000_000 + 2_000_000, Prompt: 1_500_000, CacheRead: 500_000, Completion: 3_000_000, Reasoning: 2_000_000}},
		{"images", r, Usage{Images: 3}, Cost{Total: 7_500_000, Image: 7_500_000}},
		{"inconsistent counts clamp", r, Usage{PromptTokens: 10, CachedTokens: 50, CompletionTokens: -5, ReasoningTokens: 9},
			Cost{Total: 12_500, CacheRead: 12_500}}, // 10 cached tokens at $1.25/Mtok
		{"sub-nano rounds half up", RatesOf(catalog.Price{Prompt: 0.000075}), Usage{PromptTokens: 7},
			Cost{Total: 1, Prompt: 1}}, // 0.525 nanos
		{"sub-nano rounds down", RatesOf(catalog.Price{Prompt: 0.000075}), Usage{PromptTokens: 6},
			Cost{Total: 0, Prompt: 0}}, // 0.45 nanos
		{"free", RatesOf(catalog.Price{}), Usage{PromptTokens: 1e6, CompletionTokens: 1e6, Requests: 1}, Cost{}},
		{"saturates", Rates{Prompt: math.MaxInt64}, Usage{PromptTokens: math.MaxInt64}, Cost{Total: math.MaxInt64, Prompt: math.MaxInt64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Compute(tc.u); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	// Worst case: all output at the dearer of completion and reasoning.
	w := RatesOf(catalog.Price{Prompt: 1, Completion: 2, Reasoning: 3, Request: 0.5}).WorstCase(1_000_000, 1_000_000, 0)
	if want := 4_500_000_000; w != Nanos(want) {
		t.Errorf("WorstCase = %s, want %d", w, want)
	}
}
