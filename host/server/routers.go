package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/pricing"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/wire"
	"github.com/tidwall/gjson"
)

// routerModel is a model id that names no model but a router plugin: a
// request for it is routed by the plugin, which chooses the real model
// (docs/routing.md, "Router models"). The ids sit in the switchyard/
// namespace beside the service: tool names (service:web_search).
type routerModel struct {
	Model  string // the id a request names
	Plugin string // the module that decides
	// Strategy is service_metadata.strategy when the plugin decided (a
	// plugin may name another in its stage summary's "strategy").
	Strategy string
	Name     string // for GET /models
	// Answers marks a router that answers the request itself through
	// sub-requests (fusion) rather than choosing its model: it runs in the
	// request's own pipeline, where a stream can open and keep alive
	// while it works and its sub-requests' usage becomes the answer's, not
	// in the router phase before it.
	Answers bool
}

var routerModels = []routerModel{
	{Model: "switchyard/auto", Plugin: "auto-router", Strategy: "auto", Name: "Auto router: the best allowed model for the task at your cost/quality trade-off"},
	{Model: "switchyard/pareto-code", Plugin: "pareto-router", Strategy: "pareto", Name: "Pareto coding router: the cheapest model of a coding-score tier"},
	{Model: "switchyard/fusion", Plugin: "fusion", Strategy: "fusion", Answers: true, Name: "Fusion: a panel of models answers, a judge compares, the answer is written from both"},
}

// routerOf finds the router entry of a model id or of a plugin id.
func routerOf(model, plugin string) *routerModel {
	for i := range routerModels {
		if r := &routerModels[i]; r.Model == model || r.Plugin == plugin {
			return r
		}
	}
	return nil
}

// Routed is what a router plugin decided for a request: shown in
// service_metadata (requested, strategy) after the dispatcher routed the
// request to the model it chose.
type routed struct {
	requested string // the model the caller asked for (switchyard/auto …)
	strategy  string
}

// The traffic-weighted effective input prices cover the last 7 days. A
// router request reads the records settled since the previous one, and
// the last 15 minutes' afresh (host/pricing): current on a quiet gateway,
// refreshed every few seconds on a busy one.
const (
	weightedWindow  = 7 * 24 * time.Hour
	weightedRefresh = 0
)

// runRouter runs the request's router plugin, if it has one — named by
// its model (switchyard/auto) or listed in its plugins — in a pipeline of
// its own, before the request's other plugins: which endpoints the request
// may go to (context-compression's window, moderation's providers) depends
// on the models it chooses. The plugin gets the models it may choose from
// with their scores and prices (ctx.context.models) and returns the
// request with model and models set, or answers it (fusion). Its stage is
// folded into the request's pipeline later (pipeline.Prepend).
func (s *Server) runRouter(ctx context.Context, req *chatRequest) (*chatRequest, *pipeline.Pipeline, []byte, *apierr.Error) {
	rm, item, index, aerr := s.routerFor(req)
	if aerr != nil {
		return req, nil, nil, aerr
	}
	if rm == nil {
		if r := routerOf(req.Model(), ""); r != nil {
			if r.Answers {
				return s.answeringRouter(req, r)
			}
			// The model names a router the request switched off.
			return req, nil, nil, apierr.BadRequest("model", "model %s is routed by the %s plugin, which this request disables (\"enabled\": false); name a model or drop that entry", r.Model, r.Plugin)
		}
		return req, nil, nil, nil
	}
	rr := req.job(s.Keys, "").Route
	cands := s.Router.Candidates(rr, s.weighted())
	w := s.Router.Window(rr)
	c, err := json.Marshal(struct {
		route.Window
		Models []route.Candidate `json:"models"`
		// SessionID is the request's session (session_id or the
		// X-Session-Id header), for the router's stickiness.
		SessionID string `json:"session_id,omitempty"`
	}{w, cands, req.SessionID})
	if err != nil {
		return req, nil, nil, apierr.From(err)
	}
	p, installed, aerr := s.Pipeline.BuildOne(req.key.AccountID, req.Model(), rm.Plugin, item, index, c)
	switch {
	case aerr != nil:
		return req, nil, nil, aerr
	case !installed && item != "":
		// As for any plugin a request lists that is not installed.
		return req, nil, nil, apierr.BadRequest(fmt.Sprintf("plugins[%d].id", index), "unknown plugin %q: no such plugin is installed for this account", rm.Plugin)
	case !installed:
		// Like a model the catalog does not have: 404, saying why.
		e := apierr.New(http.StatusNotFound, "model %s is not available on this gateway: it is routed by the %s plugin, which is not installed (docs/routing.md, \"Router models\")", rm.Model, rm.Plugin)
		e.Metadata = map[string]any{"plugin": rm.Plugin}
		return req, nil, nil, e
	}
	edited, answer, aerr := s.preRequest(ctx, req, p)
	if aerr != nil || answer != nil {
		// An answer (fusion's) or a refusal is the router's decision too.
		with := *req
		with.routed = &routed{requested: req.Model(), strategy: strategyOf(p, rm)}
		return &with, p, answer, aerr
	}
	if r := routerOf(edited.Model(), ""); r != nil {
		p.Release()
		return req, nil, nil, &apierr.Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("router plugin %s chose no model: the request still names %s", rm.Plugin, r.Model)}
	}
	edited.routed = &routed{requested: req.Model(), strategy: strategyOf(p, rm)}
	edited.routerPlugin = rm.Plugin
	return edited, p, nil, nil
}

// routerFor finds the request's router plugin: the one its model names
// (unless its plugins disable it), else the one its plugins list; with its
// plugins[] item and position when listed. A request takes one router: a
// second (another listed, or one besides the model's) is a 400, since
// each would replace the other's choice.
func (s *Server) routerFor(req *chatRequest) (rm *routerModel, item string, index int, aerr *apierr.Error) {
	disabled := map[string]bool{}
	listedItem := map[string]string{}
	listedAt := map[string]int{}
	var listed []*routerModel
	i := 0
	req.Plugins.ForEach(func(_, p gjson.Result) bool {
		id := p.Get("id").Str
		if e := p.Get("enabled"); e.Exists() && !e.Bool() {
			disabled[id] = true
		} else if r := routerOf("", id); r != nil && !r.Answers {
			if _, seen := listedItem[id]; !seen {
				listedItem[id], listedAt[id] = p.Raw, i
				listed = append(listed, r)
			}
		}
		i++
		return true
	})
	var chosen *routerModel
	if r := routerOf(req.Model(), ""); r != nil && r.Model == req.Model() && !r.Answers {
		if disabled[r.Plugin] {
			return nil, "", 0, nil
		}
		chosen = r
	}
	for _, r := range listed {
		switch {
		case disabled[r.Plugin] || r == chosen:
		case chosen == nil:
			chosen = r
		default:
			return nil, "", 0, apierr.BadRequest(fmt.Sprintf("plugins[%d].id", listedAt[r.Plugin]),
				"a request takes one router plugin, and %s already routes this one (%s); drop one of them", chosen.Plugin, r.Plugin)
		}
	}
	if chosen == nil {
		return nil, "", 0, nil
	}
	if it, ok := listedItem[chosen.Plugin]; ok {
		return chosen, it, listedAt[chosen.Plugin], nil
	}
	return chosen, "", -1, nil
}

// weighted reads the effective input prices for the routers; nil when the
// gateway keeps no records.
func (s *Server) weighted() route.Weighted {
	if s.prices == nil {
		return nil
	}
	prices, err := s.prices.Prices()
	if err != nil {
		s.Log.Warn("weighted prices: reading the generation records failed; routers use list prices", "err", err)
	}
	if len(prices) == 0 {
		return nil
	}
	return func(model, provider string) (float64, int64, bool) {
		p, ok := prices[pricing.Key{Model: model, Provider: provider}]
		return p.USDPerM, p.Tokens, ok
	}
}

// strategyOf is the strategy the router plugin's stage names, or the
// table's for it.
func strategyOf(p *pipeline.Pipeline, rm *routerModel) string {
	if p != nil && len(p.Stages) > 0 {
		if st, ok := p.Stages[0]["strategy"].(string); ok && strategyName(st) {
			return st
		}
	}
	return rm.Strategy
}

// strategyName reports whether a plugin's strategy is a short word
// (auto, pareto, fusion, auto:cheap): anything else keeps the table's.
func strategyName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == ':' || c == '_') {
			return false
		}
	}
	return true
}

// routerMeta completes a routed request's service_metadata: the model the
// caller asked for, and the router's strategy in place of the dispatcher's
// (which only chose among the endpoints of the router's models).
func (req *chatRequest) routerMeta(m *wire.Metadata) *wire.Metadata {
	if m != nil && len(req.unsupported) > 0 {
		m.Unsupported = req.unsupported
	}
	if m != nil && req.openRouterMeta {
		m.Name = "openrouter_metadata"
	}
	if m == nil || req.routed == nil {
		return m
	}
	m.Requested = req.routed.requested
	m.Strategy = req.routed.strategy
	return m
}

// routedMeta is the service_metadata of a request the dispatcher ran: for
// a routed request the plan's strategy is the router's, so the summary
// says it too ("test/claude via anth (auto, attempt 1 of 3)").
func (req *chatRequest) routedMeta(r *dispatch.Result) *wire.Metadata {
	if req.routed != nil && r.Plan != nil {
		r.Plan.Strategy = req.routed.strategy
	}
	return req.routerMeta(r.Metadata(req.Model()))
}

// emptyOr is p, or an empty pipeline for metadata when p is nil.
func emptyOr(p *pipeline.Pipeline) *pipeline.Pipeline {
	if p == nil {
		return &pipeline.Pipeline{Stages: []map[string]any{}}
	}
	return p
}

// answeringRouter prepares a request whose model names a router that
// answers (switchyard/fusion → the fusion plugin): the plugin joins the
// request's own pipeline (buildPipeline), unless the request switches it
// off; not installed, the model is a 404 like any model the gateway
// cannot serve.
func (s *Server) answeringRouter(req *chatRequest, r *routerModel) (*chatRequest, *pipeline.Pipeline, []byte, *apierr.Error) {
	off := false
	req.Plugins.ForEach(func(_, p gjson.Result) bool {
		if p.Get("id").Str == r.Plugin {
			if e := p.Get("enabled"); e.Exists() && !e.Bool() {
				off = true
			}
		}
		return true
	})
	switch {
	case off:
		return req, nil, nil, apierr.BadRequest("model", "model %s is answered by the %s plugin, which this request disables (\"enabled\": false); name a model or drop that entry", r.Model, r.Plugin)
	case !s.Pipeline.Installed(req.key.AccountID, r.Plugin):
		e := apierr.New(http.StatusNotFound, "model %s is not available on this gateway: it is answered by the %s plugin, which is not installed (docs/routing.md, \"Router models\")", r.Model, r.Plugin)
		e.Metadata = map[string]any{"plugin": r.Plugin}
		return req, nil, nil, e
	}
	with := *req
	with.answerPlugin = r.Plugin
	return &with, nil, nil, nil
}

// answeredBy notes, for service_metadata, which answering router (fusion)
// answered or refused a request in its pipeline — by its model id or
// listed in its plugins: the strategy is the router's ("fusion"), or the
// one its stage names.
func (req *chatRequest) answeredBy(pl *pipeline.Pipeline) {
	if req.routed != nil || pl == nil {
		return
	}
	for _, st := range pl.Stages {
		name, _ := st["name"].(string)
		action, _ := st["action"].(string)
		r := routerOf("", name)
		if r == nil || !r.Answers || (action != "respond" && action != "block") {
			continue
		}
		strategy := r.Strategy
		if v, ok := st["strategy"].(string); ok && strategyName(v) {
			strategy = v
		}
		req.routed = &routed{requested: req.Model(), strategy: strategy}
		return
	}
}
