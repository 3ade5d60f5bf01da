package autoroute

import (
	"math"
	"sort"

	"github.com/switchyard/switchyard/plugins/internal/routing"
)

// Ranked is one allowed model with what it was ranked by.
type Ranked struct {
	Model   string  `json:"model"`
	Quality float64 `json:"quality"`
	// ScoreFamily is the family the quality is for ("overall" when the
	// model has no figure for the task's family) and Source its citation.
	ScoreFamily string  `json:"score_family"`
	Source      string  `json:"source"`
	Price       float64 `json:"price"` // blended USD per million tokens
	Utility     float64 `json:"utility"`
}

// Rank orders models for a task family at a cost/quality trade-off t
// (0 pure quality … 10 cheapest). Quality is the family score and price
// the blended list price, both put on 0–1 over the models ranked (price
// on a log scale: prices span orders of magnitude). A model without a
// figure for the family is placed by its overall score on the overall
// scale instead: family figures come from another benchmark than overall
// ones, so raw values of the two are not compared. Utility = (1−t/10)·quality − (t/10)·price. Utility is
// linear in t, so the chosen model's price never rises as t rises (a
// cheaper choice at a lower t would beat it at any higher t as well);
// ties go to the cheaper model, then the id. Models without any score
// are not ranked.
func Rank(cands []routing.Candidate, family string, t int) []Ranked {
	var out []Ranked
	for i := range cands {
		c := &cands[i]
		s, fam, ok := c.Quality(family)
		if !ok {
			continue
		}
		out = append(out, Ranked{Model: c.ID, Quality: s.Value, ScoreFamily: fam, Source: s.Source, Price: c.Price.Blended()})
	}
	if len(out) == 0 {
		return nil
	}
	type span struct{ lo, hi float64 }
	scale := map[string]*span{}
	widen := func(fam string, v float64) {
		s := scale[fam]
		if s == nil {
			s = &span{v, v}
			scale[fam] = s
		}
		s.lo, s.hi = min(s.lo, v), max(s.hi, v)
	}
	pMin, pMax := math.Inf(1), math.Inf(-1)
	for i := range out {
		widen(out[i].ScoreFamily, out[i].Quality)
		lp := logPrice(out[i].Price)
		pMin, pMax = min(pMin, lp), max(pMax, lp)
	}
	// A family figure only one model has (or all share) ranks nothing:
	// those models are placed by their overall score too.
	if sc := scale[family]; family != "overall" && sc != nil && sc.hi <= sc.lo {
		for i := range out {
			if out[i].ScoreFamily != family {
				continue
			}
			for j := range cands {
				if s, ok := cands[j].Scores["overall"]; ok && cands[j].ID == out[i].Model {
					out[i].Quality, out[i].ScoreFamily, out[i].Source = s.Value, "overall", s.Source
				}
			}
		}
	}
	for i := range cands { // the overall scale spans every ranked model's overall score
		for _, r := range out {
			if r.Model == cands[i].ID {
				if s, ok := cands[i].Scores["overall"]; ok {
					widen("overall", s.Value)
				}
			}
		}
	}
	a := float64(t) / 10
	for i := range out {
		sc := scale[out[i].ScoreFamily]
		q := norm(out[i].Quality, sc.lo, sc.hi)
		p := norm(logPrice(out[i].Price), pMin, pMax)
		out[i].Utility = math.Round(((1-a)*q-a*p)*1e6) / 1e6
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Utility != y.Utility {
			return x.Utility > y.Utility
		}
		if x.Price != y.Price {
			return x.Price < y.Price
		}
		return x.Model < y.Model
	})
	return out
}

// logPrice keeps free models (price 0) on the scale: a cent per million
// tokens is as cheap as it gets.
func logPrice(p float64) float64 { return math.Log(max(p, 0.01)) }

func norm(x, lo, hi float64) float64 {
	if hi <= lo {
		return 0
	}
	return (x - lo) / (hi - lo)
}
