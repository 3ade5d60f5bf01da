package pareto

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/plugins/internal/routing"
)

func cand(id string, coding, prompt float64, weighted *float64) routing.Candidate {
	c := routing.Candidate{ID: id, Scores: map[string]routing.Score{}, Price: routing.Price{Prompt: prompt, Completion: 4 * prompt, WeightedAvg: weighted}}
	if coding >= 0 {
		c.Scores["coding"] = routing.Score{Value: coding, Source: "test"}
	}
	return c
}

func f(x float64) *float64 { return &x }

func TestRoute(t *testing.T) {
	// Percentiles of the five scored models: 0, .25, .5, .75, 1 → low,
	// low, medium, high, high. x/unscored has no coding score.
	full := []routing.Candidate{
		cand("a/top", 0.9, 3, nil),
		cand("a/good", 0.8, 1, f(1.5)),
		cand("a/mid", 0.6, 0.5, f(0.2)),
		cand("a/weak", 0.3, 0.1, nil),
		cand("a/weakest", 0.1, 0.2, nil),
		cand("x/unscored", -1, 0.01, nil),
	}
	tests := []struct {
		name   string
		cfg    string
		cands  []routing.Candidate
		chosen []string
		used   string
	}{
		{"omitted: high tier, cheapest first", `{}`, full, []string{"a/good", "a/top"}, High},
		{"0.66 is high", `{"min_coding_score":0.66}`, full, []string{"a/good", "a/top"}, High},
		{"medium", `{"min_coding_score":0.5}`, full, []string{"a/mid"}, Medium},
		{"0.33 is medium", `{"min_coding_score":0.33}`, full, []string{"a/mid"}, Medium},
		{"low", `{"min_coding_score":0.1}`, full, []string{"a/weak", "a/weakest"}, Low},
		{"weighted_avg where the tier had traffic", `{"price_source":"weighted_avg"}`, full, []string{"a/good", "a/top"}, High},
		{"weighted_avg falls back to the list price", `{"min_coding_score":0,"price_source":"weighted_avg"}`, full, []string{"a/weak", "a/weakest"}, Low},
		{"an empty medium tier falls to low", `{"min_coding_score":0.5}`, []routing.Candidate{full[0], full[3]}, []string{"a/weak"}, Low},
		{"an empty low tier falls to medium, then high", `{"min_coding_score":0}`, []routing.Candidate{full[0]}, []string{"a/top"}, High},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, _ := json.Marshal(map[string]any{"config": json.RawMessage(tt.cfg), "context": map[string]any{"models": tt.cands}})
			out, d, blocked := Route(routing.KV{}, ctx, []byte(`{"model":"switchyard/pareto-code","messages":[{"role":"user","content":"hi"}]}`))
			if blocked != nil {
				t.Fatalf("blocked: %s", blocked)
			}
			got := append([]string{d.Chosen}, d.Fallbacks...)
			if strings.Join(got, ",") != strings.Join(tt.chosen, ",") || d.Used != tt.used {
				t.Fatalf("chose %v in %s, want %v in %s (%+v)", got, d.Used, tt.chosen, tt.used, d.Candidates)
			}
			var req struct {
				Model  string   `json:"model"`
				Models []string `json:"models"`
			}
			_ = json.Unmarshal(out, &req)
			if req.Model != tt.chosen[0] || strings.Join(req.Models, ",") != strings.Join(tt.chosen, ",") {
				t.Fatalf("request %s", out)
			}
		})
	}
	// weighted_avg with traffic: a/good's effective price (1.5) is above
	// its list price (1) but still below a/top's list price (3); a
	// cheaper effective price than list moves a model up.
	cheap := []routing.Candidate{cand("a/top", 0.9, 3, f(0.5)), cand("a/good", 0.8, 1, nil), cand("a/low", 0.1, 0.1, nil)}
	ctx, _ := json.Marshal(map[string]any{"config": map[string]any{"price_source": "weighted_avg"}, "context": map[string]any{"models": cheap}})
	if _, d, _ := Route(routing.KV{}, ctx, []byte(`{"messages":[]}`)); d.Chosen != "a/top" {
		t.Fatalf("weighted_avg: chose %s (%+v)", d.Chosen, d.Candidates)
	}
	// Nothing scored: 404.
	ctx, _ = json.Marshal(map[string]any{"config": map[string]any{}, "context": map[string]any{"models": []routing.Candidate{cand("x/y", -1, 1, nil)}}})
	if _, _, blocked := Route(routing.KV{}, ctx, []byte(`{}`)); !strings.Contains(string(blocked), `"code":404`) {
		t.Fatalf("want 404, got %s", blocked)
	}
}

// A session keeps its choice while the store holds it (the host's TTL:
// five minutes), unless its model is no longer a candidate.
func TestSticky(t *testing.T) {
	store := map[string][]byte{}
	ttls := []int{}
	kv := routing.KV{
		Get: func(k string) ([]byte, bool, error) { v, ok := store[k]; return v, ok, nil },
		Put: func(k string, v []byte, ttl int) error { store[k] = v; ttls = append(ttls, ttl); return nil },
	}
	body := []byte(`{"session_id":"s1","messages":[]}`)
	ctxOf := func(cs []routing.Candidate) []byte {
		b, _ := json.Marshal(map[string]any{"config": map[string]any{}, "context": map[string]any{"models": cs}})
		return b
	}
	first := []routing.Candidate{cand("a/top", 0.9, 3, nil), cand("a/good", 0.8, 1, nil), cand("a/low", 0.1, 0.1, nil)}
	_, d1, _ := Route(kv, ctxOf(first), body)
	// A cheaper high-tier model appears: the session keeps its choice.
	second := append(first, cand("a/new", 0.95, 0.05, nil))
	_, d2, _ := Route(kv, ctxOf(second), body)
	// Its model gone: routed afresh.
	_, d3, _ := Route(kv, ctxOf(second[1:]), body)
	if d1.Sticky || !d2.Sticky || d2.Chosen != d1.Chosen || d3.Sticky || d3.Chosen != "a/new" {
		t.Fatalf("sticky: %+v / %+v / %+v", d1, d2, d3)
	}
	if len(ttls) == 0 || ttls[0] != 300 {
		t.Fatalf("ttl %v, want 300 s", ttls)
	}
}
