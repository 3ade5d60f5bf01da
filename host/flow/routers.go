package flow

import (
	"encoding/json"
	"fmt"
	"github.com/switchyard/switchyard/host/modules"
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

// RouterModel is a model id that names no model but a router plugin: a
// request for it is routed by the plugin, which chooses the real model, or
// answered by it (docs/routing.md, "Router models"). Plugins declare the
// role in their manifests (manifest.Router); the registry's table follows
// the active modules, so an account's own router serves its keys.
type RouterModel = modules.RouterRole

// routerOf finds the router a request may use whose model id is model or
// whose plugin id is plugin ("" matches neither); nil when none is.
func (r *Request) routerOf(model, plugin string) *RouterModel {
	if rr, ok := r.core.Modules.Router(r.Key.AccountID, model, plugin); ok {
		return &rr
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
func (r *Request) runRouter() ([]byte, *apierr.Error) {
	s := r.core
	rm, item, index, aerr := s.routerFor(r)
	if aerr != nil {
		return nil, aerr
	}
	if rm == nil {
		if m := r.routerOf(r.Model(), ""); m != nil {
			if m.Answers {
				return nil, s.answeringRouter(r, m)
			}
			// The model names a router the request switched off.
			return nil, apierr.BadRequest("model", "model %s is routed by the %s plugin, which this request disables (\"enabled\": false); name a model or drop that entry", m.Model, m.Plugin)
		}
		return nil, nil
	}
	rr := r.routeRequest()
	cands := s.Router.Candidates(rr, s.weighted())
	w := s.Router.Window(rr)
	c, err := json.Marshal(struct {
		route.Window
		Models []route.Candidate `json:"models"`
		// SessionID is the request's session (session_id or the
		// X-Session-Id header), for the router's stickiness.
		SessionID string `json:"session_id,omitempty"`
	}{w, cands, r.SessionID})
	if err != nil {
		return nil, apierr.From(err)
	}
	p, installed, aerr := s.Pipeline.BuildOne(r.Key.AccountID, r.Model(), rm.Plugin, item, index, c)
	switch {
	case aerr != nil:
		return nil, aerr
	case !installed && item != "":
		// As for any plugin a request lists that is not installed.
		return nil, apierr.BadRequest(fmt.Sprintf("plugins[%d].id", index), "unknown plugin %q: no such plugin is installed for this account", rm.Plugin)
	case !installed:
		// Like a model the catalog does not have: 404, saying why.
		e := apierr.New(http.StatusNotFound, "model %s is not available on this gateway: it is routed by the %s plugin, which is not installed (docs/routing.md, \"Router models\")", rm.Model, rm.Plugin)
		e.Metadata = map[string]any{"plugin": rm.Plugin}
		return nil, e
	}
	// The router's pipeline is the request's until buildPipeline folds it
	// into the request's own: Close releases it either way.
	r.pl = p
	if aerr := r.holdRouter(p, rm.Plugin); aerr != nil {
		return nil, aerr
	}
	requested := r.Model()
	answer, aerr := r.preRequest(p)
	r.routed = &routed{requested: requested, strategy: strategyOf(p, rm)}
	if aerr != nil || answer != nil {
		// An answer (fusion's) or a refusal is the router's decision too.
		return answer, aerr
	}
	if m := r.routerOf(r.Model(), ""); m != nil {
		return nil, &apierr.Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("router plugin %s chose no model: the request still names %s", rm.Plugin, m.Model)}
	}
	r.routerPlugin = rm.Plugin
	return nil, nil
}

// routerFor finds the request's router plugin: the one its model names
// (unless its plugins disable it), else the one its plugins list; with its
// plugins[] item and position when listed. A request takes one router: a
// second (another listed, or one besides the model's) is a 400, since
// each would replace the other's choice.
func (s *Core) routerFor(req *Request) (rm *RouterModel, item string, index int, aerr *apierr.Error) {
	disabled := map[string]bool{}
	listedItem := map[string]string{}
	listedAt := map[string]int{}
	var listed []*RouterModel
	i := 0
	req.Plugins.ForEach(func(_, p gjson.Result) bool {
		id := p.Get("id").Str
		if e := p.Get("enabled"); e.Exists() && !e.Bool() {
			disabled[id] = true
		} else if r := req.routerOf("", id); r != nil && !r.Answers {
			if _, seen := listedItem[id]; !seen {
				listedItem[id], listedAt[id] = p.Raw, i
				listed = append(listed, r)
			}
		}
		i++
		return true
	})
	var chosen *RouterModel
	if r := req.routerOf(req.Model(), ""); r != nil && !r.Answers {
		if disabled[r.Plugin] {
			return nil, "", 0, nil
		}
		chosen = r
	}
	for _, r := range listed {
		switch {
		case disabled[r.Plugin] || (chosen != nil && r.Plugin == chosen.Plugin):
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
func (s *Core) weighted() route.Weighted {
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
func strategyOf(p *pipeline.Pipeline, rm *RouterModel) string {
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
func (req *Request) routerMeta(m *wire.Metadata) *wire.Metadata {
	if m != nil && len(req.Unsupported) > 0 {
		m.Unsupported = req.Unsupported
	}
	if m != nil && req.OpenRouterMeta {
		m.Name = "openrouter_metadata"
	}
	if m != nil {
		m.Cache = req.cacheData()
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
func (req *Request) routedMeta(r *dispatch.Result) *wire.Metadata {
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
func (s *Core) answeringRouter(req *Request, r *RouterModel) *apierr.Error {
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
		return apierr.BadRequest("model", "model %s is answered by the %s plugin, which this request disables (\"enabled\": false); name a model or drop that entry", r.Model, r.Plugin)
	case !s.Pipeline.Installed(req.Key.AccountID, r.Plugin):
		e := apierr.New(http.StatusNotFound, "model %s is not available on this gateway: it is answered by the %s plugin, which is not installed (docs/routing.md, \"Router models\")", r.Model, r.Plugin)
		e.Metadata = map[string]any{"plugin": r.Plugin}
		return e
	}
	req.answerPlugin = r.Plugin
	return nil
}

// answeredBy notes, for service_metadata, which answering router (fusion)
// answered or refused a request in its pipeline — by its model id or
// listed in its plugins: the strategy is the router's id, or the
// one its stage names.
func (req *Request) answeredBy(pl *pipeline.Pipeline) {
	if req.routed != nil || pl == nil {
		return
	}
	for _, st := range pl.Stages {
		name, _ := st["name"].(string)
		action, _ := st["action"].(string)
		r := req.routerOf("", name)
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
