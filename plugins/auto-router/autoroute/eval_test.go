package autoroute

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

type labelled struct {
	Family string `json:"family"`
	Prompt string `json:"prompt"`
	Image  bool   `json:"image"`
	Tools  bool   `json:"tools"`
}

func loadSet(t testing.TB) []labelled { return loadFile(t, "../testdata/prompts.jsonl") }

// loadFile reads a labelled set, one JSON object a line.
func loadFile(t testing.TB, path string) []labelled {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []labelled
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l labelled
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// body is the chat request a prompt becomes: an image part for the vision
// prompts, a tool offered for the tool-use ones.
func (l labelled) body() []byte {
	msg := map[string]any{"role": "user", "content": l.Prompt}
	if l.Image {
		msg["content"] = []map[string]any{{"type": "text", "text": l.Prompt}, {"type": "image_url", "image_url": map[string]string{"url": "data:image/png;base64,iVBORw0KGgo="}}}
	}
	req := map[string]any{"model": "switchyard/auto", "messages": []any{msg}}
	if l.Tools {
		req["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "do", "parameters": map[string]any{"type": "object"}}}}
	}
	b, _ := json.Marshal(req)
	return b
}

// minTextAccuracy is what the local classifier must reach on the text-only
// prompts (the ones it has to read; images and tools decide the others
// by structure). Measured: 86.4% as first written; 89.1% after two general
// additions (a % sign as a math signal, letters of non-English Latin
// alphabets); 90.8% after the keyword lists were rewritten as word sets
// for speed, when a few words that misclassified prompts of the set use
// were added ("slogans", "why might", "keyerror"). The set was in view for
// all of that, so it is not a held-out figure. The threshold leaves room
// to move one family against another, not for a regression.
const minTextAccuracy = 0.85

// minHeldOutAccuracy is what it must reach on the held-out prompts
// (testdata/heldout.jsonl, written before the classifier's 2026-11-29
// changes and not used to tune them; see testdata/README.md): 66.7%
// (28/42) before those changes, 95.2% (40/42) after. The same author
// wrote both sets, after reading issue 34's examples: read it as a
// regression gate more than as the accuracy on users' prompts.
const minHeldOutAccuracy = 0.85

// TestEvalSet checks the local classifier against the labelled set (the
// development set) and the held-out set, and prints the confusion per
// family (make bench shows it).
func TestEvalSet(t *testing.T) {
	set := loadSet(t)
	if len(set) < 200 {
		t.Fatalf("the labelled set has %d prompts, want at least 200", len(set))
	}
	if ta := evalReport(t, "development", set); ta < minTextAccuracy {
		t.Fatalf("text-only accuracy %.3f below %.2f", ta, minTextAccuracy)
	}
	if ta := evalReport(t, "held-out", loadFile(t, "../testdata/heldout.jsonl")); ta < minHeldOutAccuracy {
		t.Fatalf("held-out text-only accuracy %.3f below %.2f", ta, minHeldOutAccuracy)
	}
}

// evalReport classifies set, logs the confusion per family under name and
// returns the accuracy on the text-only prompts.
func evalReport(t *testing.T, name string, set []labelled) float64 {
	type tally struct{ n, ok int }
	per := map[string]*tally{}
	wrong := map[string]map[string]int{}
	total, text := tally{}, tally{}
	for _, l := range set {
		got, _ := Classify(l.body())
		if per[l.Family] == nil {
			per[l.Family] = &tally{}
		}
		per[l.Family].n++
		total.n++
		structural := l.Image || l.Tools
		if !structural {
			text.n++
		}
		if got == l.Family {
			per[l.Family].ok++
			total.ok++
			if !structural {
				text.ok++
			}
		} else {
			if wrong[l.Family] == nil {
				wrong[l.Family] = map[string]int{}
			}
			wrong[l.Family][got]++
			if testing.Verbose() && os.Getenv("EVAL_MISSES") != "" {
				t.Logf("miss (%s) %s → %s: %q", name, l.Family, got, l.Prompt)
			}
		}
	}
	fams := make([]string, 0, len(per))
	for f := range per {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	var b strings.Builder
	fmt.Fprintf(&b, "auto-router local classifier on %d labelled prompts (%s set)\n", total.n, name)
	for _, f := range fams {
		p := per[f]
		fmt.Fprintf(&b, "  %-13s %3d/%3d  %5.1f%%  misclassified as %v\n", f, p.ok, p.n, 100*float64(p.ok)/float64(p.n), wrong[f])
	}
	ta := float64(text.ok) / float64(text.n)
	fmt.Fprintf(&b, "  all prompts   %3d/%3d  %5.1f%%\n", total.ok, total.n, 100*float64(total.ok)/float64(total.n))
	fmt.Fprintf(&b, "  text-only     %3d/%3d  %5.1f%%\n", text.ok, text.n, 100*ta)
	t.Log("\n" + b.String())
	return ta
}
