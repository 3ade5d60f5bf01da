package moderate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type evalRow struct {
	ID     string   `json:"id"`
	Group  string   `json:"group"`
	Text   string   `json:"text"`
	Labels []string `json:"labels"`
}

func loadEval(t testing.TB) []evalRow {
	f, err := os.Open(filepath.Join("..", "testdata", "eval.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []evalRow
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r evalRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// evalScore is one category's confusion counts over the set.
type evalScore struct{ tp, fp, fn int }

func (s evalScore) precision() float64 {
	if s.tp+s.fp == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fp)
}

func (s evalScore) recall() float64 {
	if s.tp+s.fn == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fn)
}

// TestEvalSet runs the local engine over the labelled set (testdata) and
// holds it to the targets: recall >= 0.95 on each kind of personal data,
// >= 0.8 on prompt injection, and >= 0.95 of benign texts passing
// untouched (with precision >= 0.95 on every category). `make bench`
// prints the table (-v).
func TestEvalSet(t *testing.T) {
	rows := loadEval(t)
	if len(rows) < 300 {
		t.Fatalf("the set has %d rows; it must have at least 300", len(rows))
	}
	scores := map[string]*evalScore{}
	for _, c := range LocalCategories {
		scores[c] = &evalScore{}
	}
	benign, benignClean := 0, 0
	var misses []string
	for _, r := range rows {
		got := map[string]bool{}
		for _, f := range Local(r.Text) {
			got[f.Category] = true
		}
		if len(r.Labels) == 0 {
			benign++
			if len(got) == 0 {
				benignClean++
			}
		}
		for _, c := range LocalCategories {
			want := slices.Contains(r.Labels, c)
			switch {
			case want && got[c]:
				scores[c].tp++
			case want:
				scores[c].fn++
				misses = append(misses, fmt.Sprintf("missed %s in %s: %q", c, r.ID, r.Text))
			case got[c]:
				scores[c].fp++
				misses = append(misses, fmt.Sprintf("false %s in %s: %q", c, r.ID, r.Text))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "moderation local engine on %d labelled inputs (plugins/moderation/testdata):\n", len(rows))
	fmt.Fprintf(&b, "%-17s %5s %5s %5s %9s %7s\n", "category", "tp", "fp", "fn", "precision", "recall")
	for _, c := range LocalCategories {
		s := scores[c]
		fmt.Fprintf(&b, "%-17s %5d %5d %5d %9.3f %7.3f\n", c, s.tp, s.fp, s.fn, s.precision(), s.recall())
	}
	benignRate := float64(benignClean) / float64(benign)
	fmt.Fprintf(&b, "benign texts passed untouched: %d/%d = %.3f\n", benignClean, benign, benignRate)
	t.Log("\n" + b.String())
	for _, m := range misses {
		t.Log(m)
	}
	for _, c := range LocalCategories {
		s := scores[c]
		min := 0.95
		if c == CatInjection {
			min = 0.8
		}
		if s.recall() < min {
			t.Errorf("%s: recall %.3f < %.2f", c, s.recall(), min)
		}
		if s.precision() < 0.95 {
			t.Errorf("%s: precision %.3f < 0.95", c, s.precision())
		}
	}
	if benignRate < 0.95 {
		t.Errorf("benign: %.3f passed untouched < 0.95", benignRate)
	}
}
