package route

import (
	"sort"

	"github.com/switchyard/switchyard/host/catalog"
)

// Candidate is a chat model a router plugin (auto-router, pareto-router)
// may choose for a request: what it ranks by — the model's quality scores
// with their sources, its input modalities and context, and its price —
// handed to the plugin as ctx.context.models (docs/plugins.md, "Routers").
type Candidate struct {
	ID              string                   `json:"id"`
	ContextLength   int                      `json:"context_length"`
	InputModalities []string                 `json:"input_modalities"`
	Scores          map[string]catalog.Score `json:"scores"`
	Price           CandidatePrice           `json:"price"`
	// Demo: served only by the offline demo provider (canned answers).
	// Routers leave such models out of their default lists when a real
	// one is available.
	Demo bool `json:"demo,omitempty"`
}

// CandidatePrice is in USD per million tokens: the list prices of the
// model's cheapest eligible endpoint (by prompt price), and the
// traffic-weighted effective input price over its eligible endpoints'
// recent traffic — nil when none had traffic (the router then uses the
// list price: spec 2.3, pareto-router price_source).
type CandidatePrice struct {
	Prompt      float64  `json:"prompt"`
	Completion  float64  `json:"completion"`
	WeightedAvg *float64 `json:"weighted_avg"`
}

// Weighted is an endpoint's effective input price (USD per million) and
// the prompt tokens it averages; ok is false for an endpoint without
// traffic.
type Weighted func(model, provider string) (usdPerM float64, tokens int64, ok bool)

// Candidates lists, sorted by id, the chat models with at least one
// endpoint that passes every preference of req (provider lists, data
// policy, prices, parameters, the prompt's size): the models a router may
// put in the request's model and models. req.Models is ignored.
func (r *Router) Candidates(req Request, weighted Weighted) []Candidate {
	t := r.tab.Load()
	out := []Candidate{}
	for _, st := range t.models {
		m := st.m
		if m.Kind != catalog.KindChat {
			continue
		}
		var cheapest *catalog.Endpoint
		demo := true
		var wCost float64
		var wTokens int64
		for _, ep := range m.Endpoints {
			if ep == nil || ep.Provider == nil || check(m, ep, &req) != 0 {
				continue
			}
			if cheapest == nil || ep.Price.Prompt < cheapest.Price.Prompt {
				cheapest = ep
			}
			demo = demo && ep.Provider.Demo
			if weighted != nil {
				if p, n, ok := weighted(m.ID, ep.Provider.Slug); ok && n > 0 {
					wCost += p * float64(n)
					wTokens += n
				}
			}
		}
		if cheapest == nil {
			continue
		}
		c := Candidate{ID: m.ID, ContextLength: contextOf(m, cheapest), InputModalities: m.InputModalities, Scores: m.Scores,
			Price: CandidatePrice{Prompt: cheapest.Price.Prompt, Completion: cheapest.Price.Completion}, Demo: demo}
		if c.Scores == nil {
			c.Scores = map[string]catalog.Score{}
		}
		if wTokens > 0 {
			avg := wCost / float64(wTokens)
			c.Price.WeightedAvg = &avg
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
