package moderate

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/anchor"
)

// The local engine beside its anchor on the same inputs. Presidio (the
// issue's anchor for personal data) is a Python package and PyPI is not
// reachable from this project's machines, so it cannot run here; the
// anchors that do run are npm packages: @presidio-dev/hai-guardrails, a
// guardrails library with pattern guards of the same jobs: prompt
// injection (its injection and leakage guards), personal data and secrets,
// and @andersmyrmel/vard, a prompt-injection detector
// (examples/clients/node/moderation/anchor.mjs says which modes, and why
// not its heuristic one).
//
// The comparison is per input, because the two name their categories
// differently: an injection row is caught when flagged as injection, a row
// labelled with personal data or a secret when anything of it is found (by
// the local engine: a finding of any non-injection category; by the
// anchor: its PII or secret guard rewrote the text), and a false finding
// is one on a row with no such label. That is lenient to both (a row
// caught for the wrong kind counts as caught).

// anchorVerdict is the anchor's answer for one input.
type anchorVerdict struct {
	ID        string `json:"id"`
	Injection bool   `json:"injection"`
	PII       bool   `json:"pii"`
	Secret    bool   `json:"secret"`
	Vard      bool   `json:"vard"`
}

// runModerationAnchor runs anchor.mjs over rows; why says why it could not.
func runModerationAnchor(t *testing.T, rows []evalRow) (map[string]anchorVerdict, string) {
	var in []any
	for _, r := range rows {
		in = append(in, map[string]string{"id": r.ID, "text": r.Text})
	}
	res, why, err := anchor.Run[anchorVerdict](filepath.Join("..", "..", "..", "examples", "clients", "node", "moderation"), "anchor.mjs",
		[]string{"@presidio-dev/hai-guardrails"}, in)
	if err != nil {
		t.Fatalf("moderation anchor: %v", err)
	}
	if why == "" && len(res) != len(rows) {
		t.Fatalf("moderation anchor answered %d of %d inputs", len(res), len(rows))
	}
	return res, why
}

// sideScore is one detector's per-input counts on one split.
type sideScore struct {
	inj, injCaught, injFalse     int // injection rows, caught, flagged rows without the label
	pii, piiCaught, piiFalse     int // rows with personal data or a secret, caught, false findings
	sec, secCaught               int // rows with a secret, caught
	benign, benignOK             int // rows with no label, passed with no finding
	byKind                       map[string][2]int
	nonInj, nonPII               int // rows without the injection label, without personal data
	injMisses, falseInj, falsePI []string
}

func (s *sideScore) add(r evalRow, inj, found bool) {
	hasInj := slices.Contains(r.Labels, CatInjection)
	hasPII := slices.ContainsFunc(r.Labels, func(l string) bool { return l != CatInjection })
	if hasInj {
		s.inj++
		if inj {
			s.injCaught++
		} else {
			s.injMisses = append(s.injMisses, r.ID)
		}
	} else {
		s.nonInj++
		if inj {
			s.injFalse++
			s.falseInj = append(s.falseInj, r.ID)
		}
	}
	if hasPII {
		s.pii++
		if found {
			s.piiCaught++
		}
		for _, l := range r.Labels {
			if l == CatInjection {
				continue
			}
			k := s.byKind[l]
			k[0]++
			if found {
				k[1]++
			}
			s.byKind[l] = k
		}
	} else {
		s.nonPII++
		if found {
			s.piiFalse++
			s.falsePI = append(s.falsePI, r.ID)
		}
	}
	if slices.Contains(r.Labels, CatSecret) {
		s.sec++
		if found {
			s.secCaught++
		}
	}
	if len(r.Labels) == 0 {
		s.benign++
		if !inj && !found {
			s.benignOK++
		}
	}
}

func frac(a, b int) string {
	if b == 0 {
		return "      n/a"
	}
	return fmt.Sprintf("%3d/%-3d %.3f", a, b, float64(a)/float64(b))
}

func prec(tp, fp int) string {
	if tp+fp == 0 {
		return "      n/a"
	}
	return fmt.Sprintf("        %.3f", float64(tp)/float64(tp+fp))
}

// TestAnchorSideBySide prints the local engine's figures beside the
// anchor's on every split (make bench), and fails if the local engine
// catches fewer injections or less personal data than the anchor on the
// held-out split, or flags more benign texts there.
func TestAnchorSideBySide(t *testing.T) {
	base := loadEval(t, "eval.jsonl")
	real := loadEval(t, "real.jsonl")
	splits := []struct {
		name string
		rows []evalRow
	}{{"eval.jsonl, first set", base}}
	for _, sp := range []struct{ key, name string }{{"dev", "real.jsonl dev"}, {"heldout", "real.jsonl held-out"}, {"fresh", "real.jsonl fresh"}} {
		var rows []evalRow
		for _, r := range real {
			if r.Split == sp.key || (sp.key == "dev" && r.Split == "") {
				rows = append(rows, r)
			}
		}
		splits = append(splits, struct {
			name string
			rows []evalRow
		}{sp.name, rows})
	}
	all := append(slices.Clone(base), real...)
	anchor, why := runModerationAnchor(t, all)
	if why != "" {
		t.Skip("the anchor cannot run: " + why)
	}
	var b strings.Builder
	fmt.Fprintln(&b, "moderation: local engine beside @presidio-dev/hai-guardrails 1.12.0 (pattern guards) and @andersmyrmel/vard 1.2.0 (moderate preset; injection only), same inputs, per input:")
	var held [3]*sideScore
	for _, sp := range splits {
		ours, theirs, vardS := &sideScore{byKind: map[string][2]int{}}, &sideScore{byKind: map[string][2]int{}}, &sideScore{byKind: map[string][2]int{}}
		for _, r := range sp.rows {
			var inj, found bool
			for _, f := range Local(r.Text) {
				if f.Category == CatInjection {
					inj = true
				} else {
					found = true
				}
			}
			ours.add(r, inj, found)
			v := anchor[r.ID]
			theirs.add(r, v.Injection, v.PII || v.Secret)
			vardS.add(r, v.Vard, false)
		}
		fmt.Fprintf(&b, "%-38s %-17s %-17s %s\n", fmt.Sprintf("%s (%d inputs)", sp.name, len(sp.rows)), "local engine", "hai-guardrails", "vard")
		row := func(name, a, c string, v ...string) {
			fmt.Fprintf(&b, "  %-36s %-17s %-17s %s\n", name, a, c, strings.Join(v, ""))
		}
		row("prompt injection caught", frac(ours.injCaught, ours.inj), frac(theirs.injCaught, theirs.inj), frac(vardS.injCaught, vardS.inj))
		row("  precision", prec(ours.injCaught, ours.injFalse), prec(theirs.injCaught, theirs.injFalse), prec(vardS.injCaught, vardS.injFalse))
		row("  flagged without the label", frac(ours.injFalse, ours.nonInj), frac(theirs.injFalse, theirs.nonInj), frac(vardS.injFalse, vardS.nonInj))
		row("personal data or secret found", frac(ours.piiCaught, ours.pii), frac(theirs.piiCaught, theirs.pii))
		row("  precision", prec(ours.piiCaught, ours.piiFalse), prec(theirs.piiCaught, theirs.piiFalse))
		for _, k := range LocalCategories {
			if c, ok := ours.byKind[k]; ok {
				row("  "+k, frac(c[1], c[0]), frac(theirs.byKind[k][1], theirs.byKind[k][0]))
			}
		}
		row("benign texts passed untouched", frac(ours.benignOK, ours.benign), frac(theirs.benignOK, theirs.benign), "(injection only:) ", frac(vardS.benignOK, vardS.benign))
		if strings.HasSuffix(sp.name, "held-out") {
			held = [3]*sideScore{ours, theirs, vardS}
			t.Logf("held-out, anchor: injections missed %v; flagged as injection %v; false personal data %v", theirs.injMisses, theirs.falseInj, theirs.falsePI)
		}
	}
	fmt.Fprintln(&b, "end of moderation anchor table")
	t.Log("\n" + b.String())
	ours, theirs, vardS := held[0], held[1], held[2]
	if ours.injCaught < theirs.injCaught || ours.piiCaught < theirs.piiCaught || ours.benignOK < theirs.benignOK {
		t.Errorf("held-out: the local engine is behind hai-guardrails (injection %d vs %d, personal data %d vs %d, benign untouched %d vs %d)",
			ours.injCaught, theirs.injCaught, ours.piiCaught, theirs.piiCaught, ours.benignOK, theirs.benignOK)
	}
	if ours.injCaught < vardS.injCaught || ours.injFalse > vardS.injFalse {
		t.Errorf("held-out: the local engine is behind vard on prompt injection (caught %d vs %d, false %d vs %d)",
			ours.injCaught, vardS.injCaught, ours.injFalse, vardS.injFalse)
	}
}
