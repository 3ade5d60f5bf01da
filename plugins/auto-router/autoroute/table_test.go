package autoroute

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/plugins/internal/routing"
)

// TestTradeoffTable routes every prompt of the labelled set over the
// default catalog's real models (every provider on; the demo models left
// out as the default list does) at each trade-off, and prints the average
// blended price of the chosen models and their average quality for the
// prompt's true family (make bench shows it). The price column must not
// rise.
func TestTradeoffTable(t *testing.T) {
	var cands []routing.Candidate
	for _, c := range defaultCandidates(t) {
		if _, ok := c.Scores["overall"]; ok && !c.Demo {
			cands = append(cands, c)
		}
	}
	set := loadSet(t)
	var b strings.Builder
	fmt.Fprintf(&b, "auto-router over the default catalog's %d scored models, %d prompts\n", len(cands), len(set))
	fmt.Fprintf(&b, "  trade-off  avg price $/M (blended)  avg quality (true family)  most chosen\n")
	prev := -1.0
	for tr := 0; tr <= 10; tr++ {
		price, quality := 0.0, 0.0
		count := map[string]int{}
		for _, l := range set {
			fam, f := Classify(l.body())
			var eligible []routing.Candidate
			for _, c := range cands {
				if !f.Images || c.Accepts("image") {
					eligible = append(eligible, c)
				}
			}
			r := Rank(eligible, fam, tr)[0]
			price += r.Price
			for _, c := range eligible {
				if c.ID == r.Model {
					s, _, _ := c.Quality(l.Family)
					quality += s.Value
				}
			}
			count[r.Model]++
		}
		n := float64(len(set))
		top, topN := "", 0
		for m, k := range count {
			if k > topN || (k == topN && m < top) {
				top, topN = m, k
			}
		}
		fmt.Fprintf(&b, "  %9d  %23.3f  %25.3f  %s (%d)\n", tr, price/n, quality/n, top, topN)
		if prev >= 0 && price/n > prev+1e-9 {
			t.Errorf("average price rose at trade-off %d", tr)
		}
		prev = price / n
	}
	t.Log("\n" + b.String())
}
