package flow

import (
	"fmt"
	"sync"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
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
	// ahead are fees held before the code that reports them ran but not
	// handed to a dispatch with the model's worst case: the router
	// plugin's ceiling (held before it runs), and in a JSON server-tool
	// loop the whole pipeline's (its post_response hooks run after the
	// last turn settled). Charging draws from them (DrawFees); Close
	// releases what is left.
	ahead []*billing.Envelope
}

// release returns what is left of the fees held ahead.
func (f *pluginFees) release() {
	for _, e := range f.ahead {
		e.Release()
	}
}

// holdAhead holds fees and sub (the allowance for sub-requests) for
// stages that are about to run — the router's — refusing with the 402
// that says what was held and that nothing was charged. what names them
// in that message.
func (r *Request) holdAhead(fees, sub billing.Nanos, what string) *apierr.Error {
	if fees <= 0 && sub <= 0 {
		return nil
	}
	s := r.core
	fe, aerr := s.Ledger.Hold(r.Key, fees)
	if aerr == nil {
		var se *billing.Envelope
		if se, aerr = s.Ledger.Hold(r.Key, sub); aerr == nil {
			r.fees.ahead = append(r.fees.ahead, fe)
			r.group.setAllowance(se)
			return nil
		}
		fe.Release()
	}
	out := *aerr
	out.Message = fmt.Sprintf("%s (%s may charge up to %s in fees and make sub-requests of up to %s, held before it runs; nothing was charged)", aerr.Message, what, fees.USD(), sub.USD())
	return &out
}

// holdRouter holds, before a router plugin runs (its pipeline p), the
// most it may charge and what its sub-requests (a classifier's chat
// call) may cost: a router runs before the request's model is known, so
// its fees cannot wait for the hold of the rest of the pipeline.
func (r *Request) holdRouter(p *pipeline.Pipeline, plugin string) *apierr.Error {
	if r.parent != nil {
		return nil // its parent's hold covers a sub-request; it has no chat of its own
	}
	s := r.core
	return r.holdAhead(p.FeeBound(s.feeCeiling(), false), p.SubCostBound(s.subCeiling()), "the router plugin "+plugin)
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
// first (as the dispatcher will hold it), and the allowance for the
// sub-requests its plugins may make (Pipeline.SubCostBound): an account
// that cannot cover all of it gets the 402 before any plugin runs, and
// nothing is charged. A pipeline whose plugins charge nothing (max_fee 0)
// and make no sub-requests holds nothing here.
//
// A sub-request (a module's chat call) holds its fees with its own
// reservation only (Job.Fees), within its parent's allowance or
// reservation. A router plugin's fees and sub-requests were held before
// it ran (holdRouter). In a JSON server-tool loop the fees are held
// apart from the first turn (fees.ahead): the post_response hooks run
// after the last turn settled, and their fees are charged then
// (chargeLoopPostFees).
func (r *Request) holdPluginFees() *apierr.Error {
	s := r.core
	loop := r.ServerTools && !r.Stream
	bound := r.pl.FeeBound(s.feeCeiling(), !r.Stream)
	sub := r.pl.SubCostBound(s.subCeiling())
	if r.parent != nil {
		r.fees.bound = bound
		return nil
	}
	if bound == 0 && sub == 0 {
		return nil
	}
	if !loop {
		r.fees.bound = bound
	}
	j := r.job(r.ID)
	r.fees.taken = false // job took them: give them back to the real dispatch
	worst, aerr := s.Dispatcher.WorstCase(j)
	if aerr != nil {
		// Routing fails the same way at dispatch unless a plugin
		// changes the model: hold the fees alone meanwhile.
		worst = r.fees.bound
	}
	env, aerr := s.Ledger.Hold(r.Key, worst)
	if aerr == nil {
		if aerr = r.holdAhead(bound-r.fees.bound, sub, "the request's plugins"); aerr != nil {
			env.Release()
			return aerr
		}
	}
	if aerr != nil {
		out := *aerr
		out.Message = fmt.Sprintf("%s (the request's plugins may charge up to %s in fees and make sub-requests of up to %s, held with the model's worst case before they run; nothing was charged)", aerr.Message, bound.USD(), sub.USD())
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
	if fees := r.reportedFees(res.Note); len(fees) > 0 {
		r.drawAhead(func(e *billing.Envelope, n billing.Nanos) billing.Nanos { return res.DrawFees(e, n) }, sumFees(fees))
		res.AddFees(fees...)
	}
}

// reportedFees are the fees plugins reported since it last ran, as they
// are charged (note records a fee charged at its ceiling).
func (r *Request) reportedFees(note func(string)) []billing.Fee {
	if r.pl == nil {
		return nil
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
		if n = s.capFee(note, "plugin "+f.Plugin, n, left); n > 0 {
			r.fees.perPlugin[f.Plugin] += n
			fees = append(fees, billing.Fee{Tool: "plugin:" + f.Plugin, Calls: 1, Cost: n})
		}
	}
	return fees
}

// chargeLoopPostFees charges the fees a JSON server-tool loop's
// post_response hooks reported. The loop's last turn settled before they
// ran, so they are settled on a generation of their own, <id>-fees (no
// tokens; provider "plugins"), out of the fees held for them before the
// pipeline ran (fees.ahead), and the answer's usage.cost and
// cost_details.tool_fees include them. Until 2026-11-29 they were lost.
func (r *Request) chargeLoopPostFees(raw []byte) []byte {
	var notes []string
	fees := r.reportedFees(func(n string) { notes = append(notes, n) })
	if len(fees) == 0 {
		return raw
	}
	s := r.core
	res, aerr := s.Ledger.Reserve(r.Key, billing.Request{ID: r.ID + "-fees", Model: r.Model(), Provider: "plugins", Attribution: r.Attribution})
	if aerr != nil {
		s.Log.Warn("post_response fees of a server-tool loop not charged: no hold", "generation", r.ID, "err", aerr.Message)
		return raw
	}
	r.drawAhead(res.DrawFees, sumFees(fees))
	for _, n := range notes {
		res.Note(n)
	}
	res.AddFees(fees...)
	g, err := res.Settle(billing.Outcome{Status: billing.StatusSuccess, Provider: "plugins", FinishReason: "stop"})
	if err != nil || g == nil {
		s.Log.Warn("post_response fees of a server-tool loop: settling failed", "generation", r.ID, "err", err)
		return raw
	}
	r.spend.add(g)
	cost, _ := billing.ParseUSD(gjson.GetBytes(raw, "usage.cost").Raw)
	tf, _ := billing.ParseUSD(gjson.GetBytes(raw, "usage.cost_details.tool_fees").Raw)
	raw, _ = sjson.SetRawBytes(raw, "usage.cost", []byte((cost + g.Charged).USD()))
	raw, _ = sjson.SetRawBytes(raw, "usage.cost_details.tool_fees", []byte((tf + g.FeesCost).USD()))
	raw, _ = sjson.SetRawBytes(raw, "usage.cost_details.server_tool_cost", []byte((tf + g.FeesCost).USD()))
	return raw
}

// drawAhead moves up to need from the fees held ahead into a hold by draw
// (Reservation.DrawFees).
func (r *Request) drawAhead(draw func(*billing.Envelope, billing.Nanos) billing.Nanos, need billing.Nanos) {
	for _, e := range r.fees.ahead {
		if need <= 0 {
			return
		}
		need -= draw(e, need)
	}
}

func sumFees(fees []billing.Fee) billing.Nanos {
	var n billing.Nanos
	for _, f := range fees {
		n += f.Cost
	}
	return n
}
