// Package pareto is the pareto-router module's logic (spec 2.3,
// pareto-router): a min_coding_score picks a tier of the models with a
// coding score — by the score's percentile among them: ≥ 0.66 high,
// ≥ 0.33 medium, below low; omitted, high — and within the tier the
// cheapest by price_source (the list prompt price, or the
// traffic-weighted effective input price where the model had traffic)
// becomes the model, the next two of the tier its fallbacks. An empty tier
// falls to the neighbouring one (down first, then up). A session keeps its
// choice for five minutes.
package pareto

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/internal/routing"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// Tiers, by coding-score percentile.
const (
	High   = "high"
	Medium = "medium"
	Low    = "low"
)

// stickyTTL is how long a session keeps its choice (seconds).
const stickyTTL = 5 * 60

// Fallbacks is how many same-tier models follow the choice.
const Fallbacks = 2

// TierOf is the tier a min_coding_score asks for.
func TierOf(minScore float64) string {
	switch {
	case minScore >= 0.66:
		return High
	case minScore >= 0.33:
		return Medium
	}
	return Low
}

// neighbours are the tiers tried, in order, when a tier is empty.
var neighbours = map[string][]string{High: {High, Medium, Low}, Medium: {Medium, Low, High}, Low: {Low, Medium, High}}

// Member is a model of a tier with what placed and priced it.
type Member struct {
	Model      string  `json:"model"`
	Coding     float64 `json:"coding_score"`
	Source     string  `json:"source"`
	Percentile float64 `json:"percentile"`
	Tier       string  `json:"tier"`
	Price      float64 `json:"price"` // USD per million input tokens
	PriceFrom  string  `json:"price_from"`
}

// Decision is what the router decided, shown in its stage.
type Decision struct {
	MinCodingScore *float64 `json:"min_coding_score"`
	PriceSource    string   `json:"price_source"`
	Tier           string   `json:"tier_requested"`
	Used           string   `json:"tier_used"`
	Candidates     []Member `json:"candidates"`
	Chosen         string   `json:"chosen"`
	Fallbacks      []string `json:"fallbacks"`
	Sticky         bool     `json:"sticky"`
}

// Tiers places the candidates with a coding score into tiers, each sorted
// cheapest first by price source ("prompt" or "weighted_avg").
func Tiers(cands []routing.Candidate, priceSource string) []Member {
	defaults := routing.DefaultList(cands, "coding")
	values := map[string]float64{}
	for _, c := range cands {
		if defaults[c.ID] {
			values[c.ID] = c.Scores["coding"].Value
		}
	}
	pct := routing.Percentiles(values)
	var out []Member
	for _, c := range cands {
		if !defaults[c.ID] {
			continue
		}
		m := Member{Model: c.ID, Coding: values[c.ID], Source: c.Scores["coding"].Source, Percentile: round(pct[c.ID]),
			Tier: TierOf(pct[c.ID]), Price: c.Price.Prompt, PriceFrom: "prompt"}
		if priceSource == "weighted_avg" {
			if w := c.Price.WeightedAvg; w != nil {
				m.Price, m.PriceFrom = *w, "weighted_avg"
			} else {
				m.PriceFrom = "prompt (no traffic)"
			}
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Price != out[j].Price {
			return out[i].Price < out[j].Price
		}
		if out[i].Coding != out[j].Coding {
			return out[i].Coding > out[j].Coding
		}
		return out[i].Model < out[j].Model
	})
	return out
}

func round(x float64) float64 { return float64(int(x*1000+0.5)) / 1000 }

// Route decides: the edited request and the decision, or a block body.
func Route(kv routing.KV, ctx, body []byte) ([]byte, Decision, []byte) {
	cfg := gjson.GetBytes(ctx, "config")
	d := Decision{PriceSource: "prompt", Tier: High}
	if s := cfg.Get("min_coding_score"); s.Exists() {
		v := s.Float()
		d.MinCodingScore = &v
		d.Tier = TierOf(v)
	}
	if p := cfg.Get("price_source").Str; p != "" {
		d.PriceSource = p
	}
	cands, err := routing.Candidates(ctx)
	if err != nil {
		return nil, d, block(502, "pareto-router: the host's candidate models are not readable: "+err.Error())
	}
	d.Candidates = Tiers(cands, d.PriceSource)
	key := ""
	if s := routing.SessionID(ctx, body); s != "" {
		h := sha256.Sum256([]byte(s + "\x00" + d.Tier + "\x00" + d.PriceSource))
		key = "pareto:" + hex.EncodeToString(h[:12])
	}
	inTiers := func(c *routing.Candidate) bool {
		for _, m := range d.Candidates {
			if m.Model == c.ID {
				return true
			}
		}
		return false
	}
	if s, ok := kv.Load(key); ok && s.Available(cands, inTiers) {
		d.Sticky, d.Used = true, s.Family
		d.Chosen, d.Fallbacks = s.Models[0], s.Models[1:]
		b, err := routing.SetModels(body, s.Models)
		if err != nil {
			return nil, d, block(400, "pareto-router: "+err.Error())
		}
		return b, d, nil
	}
	var ids []string
	for _, tier := range neighbours[d.Tier] {
		for _, m := range d.Candidates {
			if m.Tier == tier && len(ids) <= Fallbacks {
				ids = append(ids, m.Model)
			}
		}
		if len(ids) > 0 {
			d.Used = tier
			break
		}
	}
	if len(ids) == 0 {
		return nil, d, block(404, "pareto-router: no model with a coding score is available for this request (the catalog has none, or the request's provider preferences exclude them all)")
	}
	d.Chosen, d.Fallbacks = ids[0], ids[1:]
	b, err := routing.SetModels(body, ids)
	if err != nil {
		return nil, d, block(400, "pareto-router: "+err.Error())
	}
	_ = kv.Save(key, routing.Sticky{Models: ids, Family: d.Used}, stickyTTL)
	return b, d, nil
}

// PreRequest is the hook: in ctx and body; out action, body, stage.
func PreRequest(kv routing.KV, in *sdk.In, out *sdk.Out) error {
	edited, d, blocked := Route(kv, in.Field(0), in.Field(1))
	if blocked != nil {
		out.FieldString(abi.ActionBlock)
		out.Field(blocked)
		out.Field(routing.Stage("pareto", "pareto-router: no model to route to", d))
		return nil
	}
	summary := "pareto: " + d.Used + " coding tier → " + d.Chosen + " (cheapest by " + d.PriceSource + " of " + strconv.Itoa(len(d.Candidates)) + " scored models"
	if d.Used != d.Tier {
		summary += "; the " + d.Tier + " tier is empty"
	}
	if d.Sticky {
		summary += ", sticky session"
	}
	summary += ")"
	out.FieldString(abi.ActionContinue)
	out.Field(edited)
	out.Field(routing.Stage("pareto", summary, d))
	return nil
}

func block(code int, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"code": code, "message": msg})
	return b
}
