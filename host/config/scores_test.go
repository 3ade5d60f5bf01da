package config

import (
	"strings"
	"testing"
)

// The default catalog's scores: every chat model a router may pick offline
// has an overall score, the demo figures say they are invented, and every
// real model's figure names the benchmark it is.
func TestDefaultScores(t *testing.T) {
	c, err := Parse(Default())
	if err != nil {
		t.Fatal(err)
	}
	all := func(string) string { return "key" }
	cat, err := c.Catalog("http://127.0.0.1:1/v1", all)
	if err != nil {
		t.Fatal(err)
	}
	benchmarks := []string{"GPQA Diamond", "SWE-bench Verified", "MATH", "MGSM", "MMMU"}
	scored := 0
	for id, m := range cat.Models {
		for fam, sc := range m.Scores {
			scored++
			demo := strings.HasPrefix(id, "demo/")
			if demo && !strings.Contains(sc.Source, "invented") {
				t.Errorf("%s %s: a demo figure must say it is invented: %q", id, fam, sc.Source)
			}
			if !demo && !containsAny(sc.Source, benchmarks) {
				t.Errorf("%s %s: source %q names no benchmark", id, fam, sc.Source)
			}
		}
	}
	for _, id := range []string{"demo/echo", "demo/echo-mini", "demo/echo-coder", "demo/echo-pro", "openai/gpt-4o", "anthropic/claude-sonnet-4", "google/gemini-2.5-flash"} {
		if _, ok := cat.Model(id).Scores["overall"]; !ok {
			t.Errorf("%s has no overall score", id)
		}
	}
	if scored < 40 {
		t.Fatalf("only %d scores in the default catalog", scored)
	}
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

func TestScoresRejected(t *testing.T) {
	base := `providers: [{slug: p, adapter: openai, base_url: "http://x"}]
models:
  - id: a/b
    endpoints: [{provider: p}]
    scores: {`
	for _, tc := range []struct{ scores, want string }{
		{`codng: {value: 0.5, source: s, date: 2025-01}`, "unknown family"},
		{`coding: {value: 55, source: s, date: 2025-01}`, "between 0 and 1"},
		{`coding: {value: 0.5, date: 2025-01}`, "needs a source"},
		{`coding: {value: 0.5, source: s, date: last year}`, "YYYY-MM"},
	} {
		c, err := Parse([]byte(base + tc.scores + "}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Catalog("", func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.scores, err, tc.want)
		}
	}
}
