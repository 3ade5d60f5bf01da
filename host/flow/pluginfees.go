package flow

import (
	"fmt"
	"sync"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/pipeline"
)

// pluginFees is what a request's plugins may charge and how it is held.
// Plugin hooks run before the upstream's reservation exists, so their
// fees are held ahead of them: bound is the most the pipeline's hooks
// can report (Pipeline.FeeBound), and env holds it together with the
// upstream's worst case before any hook runs. The request's first
// dispatch then reserves both (Job.Fees, drawn from env) and the fees
// reported come out of that hold (Reservation.AddFees) — never beyond
// the credit, never lost.
type pluginFees struct {
	mu      sync.Mutex
	bound   billing.Nanos
	env     *billing.Envelope
	taken   bool
	charged int // how many of the pipeline's Fees were charged
	// perPlugin is what each plugin was charged so far: no more than its
	// FeeCeiling in a request.
	perPlugin map[string]billing.Nanos
}

// take hands the held fees and their envelope to the request's first
// dispatch; later dispatches (the server-tool loop's next turns) get
// nothing.
func (f *pluginFees) take() (billing.Nanos, *billing.Envelope) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.taken {
		return 0, nil
	}
	f.taken = true
	return f.bound, f.env
}

// holdPluginFees holds what the request's pipeline may charge before it
// runs, with the upstream's worst case at the endpoint routing would try
// first (as the dispatcher will hold it): an account that cannot cover
// both gets the 402 before any plugin runs, and nothing is charged. A
// pipeline whose plugins charge nothing (max_fee 0) holds nothing here.
//
// A sub-request (a module's chat call) holds its fees with its own
// reservation only (Job.Fees), its upstream being covered by its group's
// hold; and a router plugin's hook ran before this hold exists, so what
// it reported is held here with the rest, but after it ran
// (docs/plugins.md, "Fees").
func (r *Request) holdPluginFees() *apierr.Error {
	s := r.core
	bound := r.pl.FeeBound(s.feeCeiling(), !r.Stream && !r.ServerTools)
	for _, f := range r.pl.Fees { // a router's, already reported
		if n, err := billing.ParseUSD(f.Cost); err == nil && n > 0 {
			bound += min(n, pipeline.FeeCeiling(f.Max, s.feeCeiling()))
		}
	}
	r.fees.bound = bound
	if bound == 0 || r.parent != nil {
		return nil
	}
	j := r.job(r.ID)
	r.fees.taken = false // job took them: give them back to the real dispatch
	worst, aerr := s.Dispatcher.WorstCase(j)
	if aerr != nil {
		// Routing fails the same way at dispatch unless a plugin
		// changes the model: hold the fees alone meanwhile.
		worst = bound
	}
	env, aerr := s.Ledger.Hold(r.Key, worst)
	if aerr != nil {
		out := *aerr
		out.Message = fmt.Sprintf("%s (the request's plugins may charge up to %s in fees, held with the model's worst case before they run; nothing was charged)", aerr.Message, bound.USD())
		return &out
	}
	r.fees.env = env
	return nil
}

// chargePluginFees charges the fees plugins reported since it last ran
// (a paid search engine's) on res, itemised on the generation as
// "plugin:<id>": the pre_request hooks' after the first dispatch, the
// post_response hooks' before settlement. They come out of the hold taken
// for them (holdPluginFees), and are charged with the request's
// generation, so only when a model answered: a request that failed costs
// nothing. A cost that is not a non-negative dollar amount is a broken
// module: logged and not charged. A plugin is charged at most its
// ceiling in a request (the lower of its manifest's max_fee and
// limits.max_tool_fee_per_call, what was held for it): more is charged up
// to the ceiling, logged and noted on the record.
func (r *Request) chargePluginFees(res *dispatch.Result) {
	if r.pl == nil {
		return
	}
	s := r.core
	r.fees.mu.Lock()
	defer r.fees.mu.Unlock()
	reported := r.pl.Fees[min(r.fees.charged, len(r.pl.Fees)):]
	r.fees.charged = len(r.pl.Fees)
	var fees []billing.Fee
	for _, f := range reported {
		n, err := billing.ParseUSD(f.Cost)
		if err != nil || n < 0 {
			s.Log.Warn("a plugin reported a cost that is not a dollar amount; not charged", "plugin", f.Plugin, "cost", f.Cost)
			continue
		}
		if r.fees.perPlugin == nil {
			r.fees.perPlugin = map[string]billing.Nanos{}
		}
		left := max(pipeline.FeeCeiling(f.Max, s.feeCeiling())-r.fees.perPlugin[f.Plugin], 0)
		if n = s.capFee(res, "plugin "+f.Plugin, n, left); n > 0 {
			r.fees.perPlugin[f.Plugin] += n
			fees = append(fees, billing.Fee{Tool: "plugin:" + f.Plugin, Calls: 1, Cost: n})
		}
	}
	if len(fees) > 0 {
		res.AddFees(fees...)
	}
}
