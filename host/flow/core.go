// Package flow is the gateway's request core: one chat request's life —
// typed request → admission → router plugin → pipeline → pre → (server-tool
// loop | dispatch) → post → settle — with no transport in it. Every entry
// point builds a Request and calls Run: POST /chat/completions
// (host/server, which only parses, calls and writes), and the chat
// sub-requests modules make (chat, chat_batch). A Request owns what its
// life holds (admission, pipelines, credit hold, tool set, context) and
// releases all of it in one idempotent Close.
package flow

import (
	"log/slog"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/pricing"
	"github.com/switchyard/switchyard/host/ratelimit"
	"github.com/switchyard/switchyard/host/route"
)

// Core is what requests run on: one per gateway, shared by every request.
type Core struct {
	Config     *config.Config
	Keys       *keys.Store
	Modules    *modules.Registry
	Router     *route.Router
	Ledger     *billing.Ledger
	Pipeline   *pipeline.Runner
	Dispatcher *dispatch.Dispatcher
	// Limiter and RateDefaults are the rate limits (admission.go); a nil
	// Limiter admits everything.
	Limiter      ratelimit.Limiter
	RateDefaults *ratelimit.Defaults
	Log          *slog.Logger
	// prices are the endpoints' traffic-weighted input prices, for the
	// router plugins (routers.go); nil without a ledger.
	prices *pricing.Weighted
}

// New is c ready to run requests.
func New(c Core) *Core {
	if c.Ledger != nil {
		c.prices = pricing.New(c.Ledger.DB(), weightedWindow, weightedRefresh)
	}
	return &c
}
