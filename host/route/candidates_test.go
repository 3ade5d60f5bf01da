package route

import (
	"testing"
)

func TestCandidates(t *testing.T) {
	c := testCatalog()
	r := New(c, Options{Rand: seeded(1)})
	// together sent 1M tokens of gpt-4o at $1.2/M, azure 3M at $2/M.
	weighted := func(model, provider string) (float64, int64, bool) {
		switch {
		case model == gpt && provider == "together":
			return 1.2, 1_000_000, true
		case model == gpt && provider == "azure":
			return 2, 3_000_000, true
		}
		return 0, 0, false
	}
	tests := []struct {
		name     string
		provider string
		prompt   int
		want     map[string][2]float64 // id → list prompt price, weighted (-1: none)
	}{
		{name: "every chat model, its cheapest endpoint", want: map[string][2]float64{gpt: {1, 1.8}, llama: {0, -1}}},
		{name: "preferences drop endpoints and their traffic", provider: `{"only":["azure","groq"]}`, want: map[string][2]float64{gpt: {2.5, 2}, llama: {0.6, -1}}},
		{name: "a prompt too long for a model drops it", prompt: 20000, want: map[string][2]float64{gpt: {1, 1.8}}},
		{name: "nothing left", provider: `{"only":["nope"]}`, want: map[string][2]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prov := tt.provider
			if prov == "" {
				prov = `{}`
			}
			got := r.Candidates(Request{Prefs: prefs(t, prov), PromptTokens: tt.prompt}, weighted)
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %v", got, tt.want)
			}
			for _, cd := range got {
				w, ok := tt.want[cd.ID]
				if !ok || cd.Price.Prompt != w[0] {
					t.Fatalf("%s: %+v, want %v", cd.ID, cd.Price, w)
				}
				if (w[1] < 0) != (cd.Price.WeightedAvg == nil) || (w[1] >= 0 && abs(*cd.Price.WeightedAvg-w[1]) > 1e-9) {
					t.Fatalf("%s weighted: %v, want %v", cd.ID, cd.Price.WeightedAvg, w[1])
				}
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
