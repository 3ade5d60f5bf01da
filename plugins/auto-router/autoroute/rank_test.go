package autoroute

import (
	"encoding/json"
	"testing"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/plugins/internal/routing"
)

// defaultCandidates are the default catalog's chat models with every
// provider switched on (as the host hands them to the module).
func defaultCandidates(t testing.TB) []routing.Candidate {
	c, err := config.Parse(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := c.Catalog("http://127.0.0.1:1/v1", func(string) string { return "key" })
	if err != nil {
		t.Fatal(err)
	}
	var out []routing.Candidate
	for _, m := range cat.ModelsOfKind("chat") {
		cd := routing.Candidate{ID: m.ID, ContextLength: m.ContextLength, InputModalities: m.InputModalities, Scores: map[string]routing.Score{}}
		for f, s := range m.Scores {
			cd.Scores[f] = routing.Score{Value: s.Value, Source: s.Source, Date: s.Date}
		}
		cheapest := m.Endpoints[0]
		for _, ep := range m.Endpoints {
			if ep.Price.Prompt < cheapest.Price.Prompt {
				cheapest = ep
			}
		}
		cd.Price = routing.Price{Prompt: cheapest.Price.Prompt, Completion: cheapest.Price.Completion}
		cd.Demo = cheapest.Provider.Demo
		out = append(out, cd)
	}
	return out
}

// The chosen model's price never rises as the trade-off rises, for every
// family and for subsets of the catalog (the allowed lists a request may
// give); 0 picks the best scored model for the family and 10 the cheapest.
func TestTradeoffMonotone(t *testing.T) {
	all := defaultCandidates(t)
	var scored []routing.Candidate
	for _, c := range all {
		if _, ok := c.Scores["overall"]; ok {
			scored = append(scored, c)
		}
	}
	if len(scored) < 8 {
		t.Fatalf("only %d scored models in the default catalog", len(scored))
	}
	// Every subset of up to 2^10 of the scored models with at least 2.
	n := min(len(scored), 10)
	subsets := 0
	for mask := 1; mask < 1<<n; mask++ {
		var set []routing.Candidate
		for i := 0; i < n; i++ {
			if mask&(1<<i) != 0 {
				set = append(set, scored[i])
			}
		}
		if len(set) < 2 {
			continue
		}
		subsets++
		for _, fam := range Families {
			prev := -1.0
			for tr := 0; tr <= 10; tr++ {
				r := Rank(set, fam, tr)
				p := r[0].Price
				if prev >= 0 && p > prev+1e-12 {
					t.Fatalf("%s over %v: trade-off %d chose %s at $%.3f/M, more than $%.3f/M at %d", fam, ids(set), tr, r[0].Model, p, prev, tr-1)
				}
				prev = p
			}
			best, cheapest := Rank(set, fam, 0)[0], Rank(set, fam, 10)[0]
			for _, c := range set {
				// At 0 no model beats the choice on the figure both have.
				s, f, _ := c.Quality(fam)
				if f == best.ScoreFamily && s.Value > best.Quality {
					t.Fatalf("%s over %v: trade-off 0 chose %s (%s %.3f), %s has %.3f", fam, ids(set), best.Model, f, best.Quality, c.ID, s.Value)
				}
				if c.Price.Blended() < cheapest.Price {
					t.Fatalf("%s: trade-off 10 chose %s ($%.3f), %s costs $%.3f", fam, cheapest.Model, cheapest.Price, c.ID, c.Price.Blended())
				}
			}
		}
	}
	t.Logf("%d subsets × %d families × 11 trade-offs", subsets, len(Families))
}

func ids(cs []routing.Candidate) []string { return routing.IDs(cs) }

// Route: allowed_models patterns, images need a model that takes them,
// fallbacks follow the choice, nothing allowed is a 404, and a session
// sticks to its models.
func TestRoute(t *testing.T) {
	cands := defaultCandidates(t)
	ctxOf := func(cfg string) []byte {
		b, _ := json.Marshal(map[string]any{"config": json.RawMessage(cfg), "context": map[string]any{"models": cands}})
		return b
	}
	store := map[string][]byte{}
	kv := routing.KV{
		Get: func(k string) ([]byte, bool, error) { v, ok := store[k]; return v, ok, nil },
		Put: func(k string, v []byte, _ int) error { store[k] = v; return nil },
	}
	h := Host{KV: kv}
	code := `{"model":"switchyard/auto","messages":[{"role":"user","content":"Fix this Python traceback: KeyError in my function"}]}`
	tests := []struct {
		name, cfg, body string
		chosen          string // "" when blocked
		family          string
	}{
		{"quality first: the best coder", `{"id":"auto-router","cost_quality_tradeoff":0}`, code, "anthropic/claude-sonnet-4", Coding},
		{"cheapest; no demo model while real ones are there", `{"id":"auto-router","cost_quality_tradeoff":10}`, code, "openai/gpt-4o-mini", Coding},
		{"demo models when allowed by name", `{"id":"auto-router","allowed_models":["demo/*"],"cost_quality_tradeoff":10}`, code, "demo/echo-mini", Coding},
		{"vendor pattern", `{"id":"auto-router","allowed_models":["openai/*"],"cost_quality_tradeoff":0}`, code, "openai/gpt-4o", Coding},
		{"name pattern", `{"id":"auto-router","allowed_models":["*/gpt-4o-mini","*/claude-*"],"cost_quality_tradeoff":10}`, code, "openai/gpt-4o-mini", Coding},
		{"images need a vision model", `{"id":"auto-router","allowed_models":["meta-llama/*","openai/gpt-4o-mini"],"cost_quality_tradeoff":0}`,
			`{"model":"switchyard/auto","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]}`, "openai/gpt-4o-mini", Vision},
		{"nothing allowed", `{"id":"auto-router","allowed_models":["nobody/*"]}`, code, "", Coding},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, d, blocked := Route(h, ctxOf(tt.cfg), []byte(tt.body))
			if tt.chosen == "" {
				if blocked == nil || !json.Valid(blocked) || !contains(string(blocked), `"code":404`) {
					t.Fatalf("want a 404 block, got %s / %s", blocked, out)
				}
				return
			}
			if blocked != nil {
				t.Fatalf("blocked: %s", blocked)
			}
			if d.Chosen != tt.chosen || d.Family != tt.family {
				t.Fatalf("chose %s for %s, want %s for %s (%+v)", d.Chosen, d.Family, tt.chosen, tt.family, d.Candidates)
			}
			var req struct {
				Model  string   `json:"model"`
				Models []string `json:"models"`
			}
			_ = json.Unmarshal(out, &req)
			if req.Model != tt.chosen || len(req.Models) == 0 || req.Models[0] != tt.chosen || len(req.Models) > 1+Fallbacks {
				t.Fatalf("request %s", out)
			}
		})
	}
	// Sticky: a session keeps its models even when the conversation turns
	// to another family; another session is routed afresh.
	withSession := func(s, content string) []byte {
		b, _ := json.Marshal(map[string]any{"model": "switchyard/auto", "session_id": s, "messages": []any{map[string]any{"role": "user", "content": content}}})
		return b
	}
	cfg := ctxOf(`{"id":"auto-router","cost_quality_tradeoff":0}`)
	_, d1, _ := Route(h, cfg, withSession("s1", "Write a Go function that reverses a string"))
	_, d2, _ := Route(h, cfg, withSession("s1", "Write a haiku about rain"))
	_, d3, _ := Route(h, cfg, withSession("s2", "Write a haiku about rain"))
	if d1.Sticky || !d2.Sticky || d2.Chosen != d1.Chosen || d3.Sticky {
		t.Fatalf("sticky: %+v / %+v / %+v", d1, d2, d3)
	}
}

func contains(s, sub string) bool { return len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0) }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// The operator's classifier model decides the family when it answers with
// one; anything else leaves it to the local classifier, noted.
func TestClassifierModel(t *testing.T) {
	cands := defaultCandidates(t)
	ctx, _ := json.Marshal(map[string]any{"config": map[string]any{"id": "auto-router"}, "settings": map[string]any{"classifier": map[string]any{"model": "demo/echo-mini"}},
		"context": map[string]any{"models": cands}})
	body := []byte(`{"model":"switchyard/auto","messages":[{"role":"user","content":"Fix this Python traceback: KeyError in my function"}]}`)
	for _, tc := range []struct {
		answer, family, classifier string
		status                     int
	}{
		{"Math.", Math, "model:demo/echo-mini", 200},
		{"tool use", ToolUse, "model:demo/echo-mini", 200},
		{"I think it is about code", Coding, "local", 200},
		{"", Coding, "local", 502},
	} {
		var sent []byte
		h := Host{Chat: func(b []byte) (int, []byte, error) {
			sent = b
			out, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": tc.answer}}}})
			return tc.status, out, nil
		}}
		_, d, blocked := Route(h, ctx, body)
		if blocked != nil || d.Family != tc.family || d.Classifier != tc.classifier || (tc.classifier == "local") != (d.Note != "") {
			t.Fatalf("%q: %+v %s", tc.answer, d, blocked)
		}
		if !contains(string(sent), `"model":"demo/echo-mini"`) || !contains(string(sent), "KeyError") {
			t.Fatalf("classifier request %s", sent)
		}
	}
}
