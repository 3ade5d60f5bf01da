package gateway

import (
	"sort"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/admin"
	"github.com/switchyard/switchyard/host/keys"
)

// endpointHealth is one endpoint's live routing statistics as the
// provider health endpoint shows them.
type endpointHealth struct {
	Model         string  `json:"model"`
	UpstreamModel string  `json:"upstream_model"`
	PromptPrice   float64 `json:"prompt_price"`     // USD per million tokens
	CompletePrice float64 `json:"completion_price"` // USD per million tokens
	Samples       int     `json:"samples"`
	Failures      int     `json:"failures"`
	ErrorRate     float64 `json:"error_rate"`
	// LatencyP50/P90 are the time to first token in seconds, throughput
	// in output tokens per second; 0 without data.
	LatencyP50          float64    `json:"latency_p50"`
	LatencyP90          float64    `json:"latency_p90"`
	ThroughputP50       float64    `json:"throughput_p50"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	Down                bool       `json:"down"`
	DownUntil           *time.Time `json:"down_until"`
}

type providerHealth struct {
	Slug      string           `json:"slug"`
	Name      string           `json:"name"`
	Adapter   string           `json:"adapter"`
	Region    string           `json:"region"`
	BaseURL   string           `json:"base_url,omitempty"` // the operator's keys only
	Status    string           `json:"status"`             // ok | degraded (some endpoints down) | down (all) | idle (no samples)
	Endpoints []endpointHealth `json:"endpoints"`
}

// mountProviders adds GET /api/v1/admin/providers (management keys): each
// provider of the live catalog with the routing statistics of its
// endpoints (the router's health window: error rate, latency, outages).
func (g *Gateway) mountProviders(api fiber.Router) {
	api.Get("/admin/providers", admin.ManagementOnly, func(c *fiber.Ctx) error {
		k, _ := c.Locals(admin.LocalsKey).(*keys.Key)
		return c.JSON(fiber.Map{"data": g.providerHealth(g.Keys.IsOperator(k))})
	})
}

func (g *Gateway) providerHealth(operator bool) []providerHealth {
	cat := g.Router.Catalog()
	byProvider := map[string]*providerHealth{}
	for slug, p := range cat.Providers {
		ph := &providerHealth{Slug: slug, Name: p.Name, Adapter: p.Adapter, Region: p.Region, Endpoints: []endpointHealth{}}
		if operator {
			ph.BaseURL = p.BaseURL
		}
		byProvider[slug] = ph
	}
	for _, m := range cat.Models {
		for _, ep := range m.Endpoints {
			ph := byProvider[ep.Provider.Slug]
			if ph == nil {
				continue
			}
			s := g.Router.Stats(ep)
			eh := endpointHealth{
				Model: m.ID, UpstreamModel: ep.UpstreamModel, PromptPrice: ep.Price.Prompt, CompletePrice: ep.Price.Completion,
				Samples: s.Samples, Failures: s.Failures, ErrorRate: s.ErrorRate,
				LatencyP50: s.Latency.P50, LatencyP90: s.Latency.P90, ThroughputP50: s.Throughput.P50,
				ConsecutiveFailures: s.ConsecutiveFailures, Down: s.Down,
			}
			if s.Down {
				t := s.DownUntil.UTC()
				eh.DownUntil = &t
			}
			ph.Endpoints = append(ph.Endpoints, eh)
		}
	}
	out := make([]providerHealth, 0, len(byProvider))
	for _, ph := range byProvider {
		sort.Slice(ph.Endpoints, func(i, j int) bool { return ph.Endpoints[i].Model < ph.Endpoints[j].Model })
		ph.Status = status(ph.Endpoints)
		out = append(out, *ph)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

func status(eps []endpointHealth) string {
	down, samples := 0, 0
	for _, e := range eps {
		if e.Down {
			down++
		}
		samples += e.Samples
	}
	switch {
	case len(eps) > 0 && down == len(eps):
		return "down"
	case down > 0:
		return "degraded"
	case samples == 0:
		return "idle"
	}
	return "ok"
}
