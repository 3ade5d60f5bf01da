package flow

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/hangup"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/sse"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/host/tools"
	"github.com/switchyard/switchyard/host/usage"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/switchyard/switchyard/host/wire"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// The server-tool agent loop (docs/server-tools.md): the model is called,
// the server tools it calls are run through their modules, their results
// are appended and the model is called again, until it answers without a
// server-tool call, calls a client function tool, or a budget fires — then
// one last turn with tools disabled so the answer ends in prose. Every turn
// is a dispatcher run of its own: routed, held, attempted and settled like
// any request, with the tool fees of its calls charged on its record. The
// client gets one answer whose usage sums every turn.

// toolLoop is one request's loop.
type toolLoop struct {
	req *Request // its pipeline, id and spend are the loop's
	set *tools.Set
	env tools.Env

	maxCalls int
	body     []byte // the conversation so far, as the client's body
	turns    int    // model turns made
	steps    int    // turns that called server tools
	executed int    // server-tool calls run
	asked    int    // server-tool calls the model made
	searches int    // service:web_search calls run
	calls    []map[string]any
	stopped  string // the budget that ended the loop, if one did
	// unfunded: calls of the last turn did not run because their fees
	// could not be held (holdFees); the loop then ends.
	unfunded bool
	last     *dispatch.Result
	prev     []byte      // the last turn's completion, for an answer that stops before the next (stopEarly)
	tw       *pushWriter // the client's stream; nil for a JSON answer
	// streaming: turns stream from the upstream; first is the first
	// turn's run when it was made before the stream opened.
	streaming bool
	first     *dispatch.Result
}

// spend sums what a request was charged across its runs: the loop's turns
// and the chat sub-requests modules made (CallEnv.Chat). Safe for
// concurrent use: tools of one turn run in parallel.
type spend struct {
	mu          sync.Mutex
	usage       billing.Usage
	cost        billing.Cost
	failed      billing.Nanos
	fees        billing.Nanos
	charged     billing.Nanos
	uncollected billing.Nanos
	subs        []map[string]any // service_metadata entries of sub-requests
	subCharged  billing.Nanos
	subUsage    billing.Usage // the sub-requests' usage summed
	subCost     billing.Cost  // and their cost by part (their final attempts)
	subFailed   billing.Nanos // their failed attempts
}

func (sp *spend) add(g *billing.Generation) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.usage = sp.usage.Add(g.Usage)
	sp.cost = sp.cost.Add(g.Cost)
	sp.failed += g.FailedCost
	sp.fees += g.FeesCost
	sp.charged += g.Charged
	sp.uncollected += g.Uncollected
}

// addSub counts a sub-request's charge in the request's cost.
func (sp *spend) addSub(g *billing.Generation, model string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.subCharged += g.Charged
	sp.subUsage = sp.subUsage.Add(g.Usage)
	sp.subCost = sp.subCost.Add(g.Cost)
	sp.subFailed += g.FailedCost
	sp.uncollected += g.Uncollected
	sp.subs = append(sp.subs, map[string]any{"id": g.ID, "model": model, "provider": g.Provider,
		"status": g.Status, "cost": g.Charged, "prompt_tokens": g.Usage.PromptTokens, "completion_tokens": g.Usage.CompletionTokens})
}

// addFailedSub counts a sub-request that failed: what its settled record
// charged (a cancelled attempt's prompt) and the error, for
// service_metadata.
func (sp *spend) addFailedSub(id, model string, r *dispatch.Result, e *apierr.Error) {
	g := r.Record()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	entry := map[string]any{"id": id, "model": model, "status": "error", "error": e.Message, "http_status": e.Status, "cost": billing.Nanos(0)}
	if g != nil {
		sp.subCharged += g.Charged
		sp.subUsage = sp.subUsage.Add(g.Usage)
		sp.subCost = sp.subCost.Add(g.Cost)
		sp.subFailed += g.FailedCost
		sp.uncollected += g.Uncollected
		entry["status"], entry["cost"], entry["provider"] = g.Status, g.Charged, g.Provider
	}
	sp.subs = append(sp.subs, entry)
}

// addLoop counts a sub-request that ran the server-tool loop: every turn's
// charge and usage (sub is the loop's own spend).
func (sp *spend) addLoop(sub *spend, id, model, status string, e *apierr.Error, turns, calls int) {
	sub.mu.Lock()
	charged, usage, unc := sub.charged+sub.subCharged, sub.usage, sub.uncollected
	cost, failed := sub.cost, sub.failed
	sub.mu.Unlock()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.subCharged += charged
	sp.subUsage = sp.subUsage.Add(usage)
	sp.subCost = sp.subCost.Add(cost)
	sp.subFailed += failed
	sp.uncollected += unc
	entry := map[string]any{"id": id, "model": model, "status": status, "cost": charged,
		"prompt_tokens": usage.PromptTokens, "completion_tokens": usage.CompletionTokens, "turns": turns, "tool_calls": calls}
	if e != nil {
		entry["error"], entry["http_status"] = e.Message, e.Status
	}
	sp.subs = append(sp.subs, entry)
}

// made reports whether the request's modules made sub-requests.
func (sp *spend) made() bool {
	if sp == nil {
		return false
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return len(sp.subs) > 0
}

// total is everything charged so far, sub-requests included.
func (sp *spend) total() billing.Nanos {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.charged + sp.subCharged + sp.uncollected
}

// stages are the service_metadata.pipeline entries of sub-requests.
func (sp *spend) stages() []map[string]any {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(sp.subs) == 0 {
		return nil
	}
	return []map[string]any{{"type": "sub_requests", "name": "chat", "summary": fmt.Sprintf("%d chat sub-request(s) made by modules", len(sp.subs)),
		"data": map[string]any{"requests": sp.subs, "cost": sp.subCharged}}}
}

// withStages is stages followed by the sub-requests' stage, if any.
func (sp *spend) withStages(stages []map[string]any) []map[string]any {
	if sp == nil {
		return stages
	}
	if subs := sp.stages(); subs != nil {
		return append(append([]map[string]any{}, stages...), subs...)
	}
	return stages
}

// answered writes the usage of a result a plugin answered with (pre_request
// respond) when its modules made sub-requests: the answer is theirs, so its
// usage is their usage summed and its cost what they were charged (which
// is what the ledger's generations <id>-sub<n> hold). A result without
// sub-requests is left as the plugin wrote it.
func (sp *spend) answered(raw []byte, adm *Admission) []byte {
	if sp == nil {
		return raw
	}
	sp.mu.Lock()
	n := len(sp.subs)
	g := &billing.Generation{Usage: sp.subUsage, Cost: sp.subCost, FailedCost: sp.subFailed, Charged: sp.subCharged, Uncollected: sp.uncollected}
	sp.mu.Unlock()
	if n == 0 {
		return raw
	}
	adm.Record(g.Usage) // the rate limit's token count
	if out, err := wire.WriteUsage(raw, g); err == nil {
		raw = out
	}
	raw, _ = sjson.SetRawBytes(raw, "usage.cost_details.sub_requests", []byte(g.Charged.USD()))
	return raw
}

// includeSubs adds the sub-requests' charge to the usage.cost of a result
// that was settled alone (a request without server tools whose plugins made
// sub-requests).
func (sp *spend) includeSubs(raw []byte) []byte {
	if sp == nil {
		return raw
	}
	sp.mu.Lock()
	sub := sp.subCharged
	sp.mu.Unlock()
	if sub == 0 {
		return raw
	}
	cost, err := billing.ParseUSD(gjson.GetBytes(raw, "usage.cost").Raw)
	if err != nil {
		return raw
	}
	raw, _ = sjson.SetRawBytes(raw, "usage.cost", []byte((cost + sub).USD()))
	raw, _ = sjson.SetRawBytes(raw, "usage.cost_details.sub_requests", []byte(sub.USD()))
	return raw
}

// serverTools runs a request whose tools hold server tools through the
// server-tool loop. A streaming request's first turn is sent before the
// stream opens, so what fails before any upstream answered (no endpoint,
// no credit) keeps its HTTP status. A sub-request's loop (JSON, never
// streamed) counts as one sub-request in its parent's usage.
func (r *Request) serverTools() Outcome {
	set, aerr := tools.Resolve(r.core.Modules, r.Key.AccountID, r.Body)
	r.set = set
	if aerr == nil && set != nil && r.N > 1 {
		aerr = apierr.BadRequest("n", "must be 1 with server tools: the loop continues one conversation")
	}
	if aerr != nil {
		return fail(aerr, r.pluginMeta())
	}
	l := &toolLoop{req: r, set: set, body: r.Body,
		env: tools.Env{RequestID: r.ID, Account: r.Key.AccountID, Model: r.Model()}, maxCalls: maxToolCalls(r.ChatRequest)}
	if r.Stream {
		l.streaming = true
		j := l.job(set.Body(r.Body, tools.First), r.ID, tools.First)
		first, aerr := r.core.Dispatcher.Run(r.ctx, j)
		r.fees.env.Release()
		if aerr != nil {
			return fail(l.unfundedFirst(first, aerr, j), r.failedMeta(first))
		}
		l.first = first
		r.Keep() // the stream's: closed when it ends
		return Outcome{Stream: (*loopStream)(l), Charged: true}
	}
	raw, aerr := l.run(r.ctx)
	if r.parent != nil {
		status := billing.StatusSuccess
		if aerr != nil {
			status = "error"
			if g := l.last.Record(); g != nil {
				status = g.Status
			}
		}
		r.parent.spend.addLoop(r.spend, r.ID, r.Model(), status, aerr, l.turns, l.executed)
	}
	if aerr != nil {
		return fail(aerr, l.meta())
	}
	// The turns were charged whatever a post plugin decides.
	raw, perr := r.post(raw)
	raw = r.chargeLoopPostFees(raw)
	if perr != nil {
		return fail(perr, l.meta())
	}
	if hangup.Gone(r.ctx) {
		return fail(apierr.ClientClosed(), nil)
	}
	return Outcome{Body: l.meta().Set(raw), Charged: true}
}

// loopStream is a streaming request's server-tool loop as its Stream.
type loopStream toolLoop

func (*loopStream) sse() {}

// Push runs the loop, writing the stream to w; it closes the stream's
// reference to the request when done.
func (ls *loopStream) Push(w *bufio.Writer) {
	l := (*toolLoop)(ls)
	defer l.req.Close()
	l.stream(l.req.ctx, w)
}

// maxToolCalls is the request's budget of server-tool calls: max_tool_calls,
// else the default — unless stop conditions are given, which override the
// default (the hard maximum still bounds the loop).
func maxToolCalls(r *validate.ChatRequest) int {
	switch {
	case r.MaxToolCalls > 0:
		return r.MaxToolCalls
	case r.StopWhen.IsArray():
		return validate.MaxToolCalls
	}
	return validate.DefaultMaxToolCalls
}

// stream runs the loop behind an SSE response: every turn streams from
// the upstream and its text goes on to the client as it comes; keep-alive
// comments flow while tools run; the final chunk carries the usage of
// every turn.
func (l *toolLoop) stream(ctx context.Context, w *bufio.Writer) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tw := &pushWriter{w: w, alive: true, cancel: cancel, pl: l.req.pl, maxCalls: l.req.core.maxCallsPerTurn()}
	l.tw = tw
	tw.startKeepAlive(time.Duration(l.req.core.Config.KeepAlive))
	raw, aerr := l.run(ctx)
	tw.stopKeepAlive()
	id := wire.Identity{GenID: l.req.ID, Model: l.req.Model()}
	if l.last != nil && l.last.Call != nil {
		id = l.last.Identity()
		id.GenID = l.req.ID
	}
	if aerr != nil {
		l.req.core.LogCause("/chat/completions (stream "+l.req.ID+")", aerr)
		_ = tw.emit(ctx, id.ErrorChunk(aerr))
		tw.write(sse.AppendEvent(nil, done))
		return
	}
	for _, ch := range tail(l.meta().Set(raw), id) {
		if e := tw.emit(ctx, ch); e != nil {
			if e.Status != 499 {
				_ = tw.emit(ctx, id.ErrorChunk(e))
			}
			break
		}
	}
	tw.write(sse.AppendEvent(nil, done))
}

// send dispatches the next turn. A later turn runs only if its worst case
// fits what max_cost leaves, and the credits: else stop says which ended
// the loop (max_cost, insufficient_credits), with the answer so far.
func (l *toolLoop) send(ctx context.Context, turn tools.Turn, id string) (_ *dispatch.Result, _ *apierr.Error, stop string) {
	j := l.job(l.set.Body(l.body, turn), id, turn)
	if l.turns > 0 {
		b, limited := l.budget()
		if limited && b <= 0 {
			return nil, nil, "max_cost"
		}
		j.Budget = b
	}
	r, aerr := l.req.core.Dispatcher.Run(ctx, j)
	l.req.fees.env.Release()
	switch {
	case aerr == nil:
	case l.turns == 0:
		aerr = l.unfundedFirst(r, aerr, j)
	case r == nil && aerr.Status == http.StatusPaymentRequired:
		if aerr == dispatch.ErrOverBudget {
			return nil, nil, "max_cost"
		}
		return nil, nil, "insufficient_credits"
	}
	return r, aerr, ""
}

// run makes turns until the model answers. It returns the answer with the
// summed usage written into it; on error every turn made was settled.
func (l *toolLoop) run(ctx context.Context) ([]byte, *apierr.Error) {
	turn := tools.First
	for {
		id := l.req.ID
		if l.turns > 0 {
			id += "-" + strconv.Itoa(l.turns+1)
		}
		r, aerr := l.first, (*apierr.Error)(nil)
		if l.first != nil {
			l.first = nil // sent before the stream opened
		} else if aerr = l.admitTurn(); aerr == nil {
			var stop string
			if r, aerr, stop = l.send(ctx, turn, id); stop != "" {
				return l.stopEarly(stop), nil
			}
		}
		l.turns++
		if aerr != nil {
			if r != nil {
				l.last = r
			}
			if l.turns > 1 {
				aerr = l.midLoop(aerr)
			}
			return nil, aerr
		}
		l.last = r
		if l.turns == 1 {
			l.req.chargePluginFees(r) // the pipeline ran once, before the first turn
		}
		var raw []byte
		var u billing.Usage
		var finish string
		if l.tw != nil {
			sid := r.Identity()
			sid.GenID = l.req.ID
			if raw, u, finish, aerr = l.tw.turn(ctx, l.req.newEvents(ctx, r, r.Call.Resp.Body, sid, nil), r, sid); aerr != nil {
				if l.turns > 1 {
					aerr = l.midLoop(aerr)
				}
				return nil, aerr
			}
		} else {
			raw = wire.Completion(r.Body, r.Identity(), "chat.completion")
			r.Body = nil
			u = r.Usage(raw, func() string { return wire.CompletionText(raw) })
			finish = gjson.GetBytes(raw, "choices.0.finish_reason").Str
		}
		l.prev = raw
		msg := gjson.GetBytes(raw, "choices.0.message")
		server, client := l.split(msg)
		if turn == tools.Final || len(server) == 0 || len(client) > 0 {
			// The answer: prose, or a call the client runs. Server calls
			// beside client calls (or past the end) are not run.
			if len(server) > 0 {
				raw, finish = l.dropServerCalls(raw, msg, client, finish)
			}
			raw, g, aerr := r.SettleRecord(raw, u, finish)
			if aerr != nil {
				return nil, aerr
			}
			l.req.spend.add(g)
			r.Succeeded(0, int(u.CompletionTokens))
			return l.answer(raw, r), nil
		}
		l.steps++
		l.asked += len(server)
		outs := l.runCalls(ctx, r, server, l.holdFees(r, server[:l.toRun(len(server))]))
		if fees := feesOf(outs); len(fees) > 0 {
			r.AddFees(fees...)
		}
		_, g, aerr := r.SettleRecord(raw, u, finish)
		if aerr != nil {
			return nil, aerr
		}
		l.req.spend.add(g)
		r.Succeeded(0, int(u.CompletionTokens))
		if hangup.Gone(ctx) {
			return nil, apierr.ClientClosed()
		}
		if ctx.Err() != nil {
			// The request's time limit (or a caller's, for a sub-request)
			// ran out during the calls: the client is still there and is
			// told so, not answered 499 as if it had left.
			return nil, l.afterTurn(dispatch.DeadlineError(ctx, l.req.core.Dispatcher.RequestTimeout))
		}
		l.body = appendTurn(l.body, msg, outs)
		if l.stopped = l.stopWhy(finish, outs); l.stopped != "" {
			turn = tools.Final
		} else {
			turn = tools.Next
		}
	}
}

// budget is what the request's max_cost conditions leave (the least of
// them, less what the request was charged so far); limited is false
// without one.
func (l *toolLoop) budget() (b billing.Nanos, limited bool) {
	spent := l.req.spend.total()
	l.req.StopWhen.ForEach(func(_, c gjson.Result) bool {
		if c.Get("type").Str != "max_cost" {
			return true
		}
		if max, err := billing.ParseUSD(c.Get("max_cost_in_dollars").Raw); err == nil {
			if rest := max - spent; !limited || rest < b {
				b = rest
			}
			limited = true
		}
		return true
	})
	return b, limited
}

// stopEarly ends the loop before a turn that does not fit (why: max_cost,
// or insufficient_credits): the answer is the last turn's, settled
// already — its text (often empty: it called tools), without its server
// calls, with finish_reason "length" and native_finish_reason why.
func (l *toolLoop) stopEarly(why string) []byte {
	l.stopped = why
	raw := l.prev
	msg := gjson.GetBytes(raw, "choices.0.message")
	raw, _ = l.dropServerCalls(raw, msg, nil, "")
	if c := gjson.GetBytes(raw, "choices.0.message.content"); c.Type == gjson.Null {
		raw, _ = sjson.SetBytes(raw, "choices.0.message.content", "")
	}
	raw, _ = sjson.SetBytes(raw, "choices.0.finish_reason", "length")
	raw, _ = sjson.SetBytes(raw, "choices.0.native_finish_reason", why)
	return l.answer(raw, l.last)
}

// admitTurn counts a turn past the first against the request's rate
// limits as one more request, in the request's concurrent slot. Its tokens
// are not estimated here: the request's admission records the usage of
// every turn when it ends.
func (l *toolLoop) admitTurn() *apierr.Error {
	if l.turns == 0 {
		return nil // the client's request itself, admitted already
	}
	adm, aerr := l.req.adm.also(0, false)
	adm.End()
	return aerr
}

// midLoop words an error of a later turn: the earlier turns were served and
// charged, and the client should know it.
func (l *toolLoop) midLoop(e *apierr.Error) *apierr.Error {
	out := *e
	out.Message = fmt.Sprintf("the server-tool loop stopped at turn %d: %s (the %d turn(s) before it and their tool calls were charged: %s)",
		l.turns, e.Message, l.turns-1, l.req.spend.total().USD())
	return &out
}

// afterTurn words an error that ends the loop once turn l.turns and its
// calls were served and charged.
func (l *toolLoop) afterTurn(e *apierr.Error) *apierr.Error {
	out := *e
	out.Message = fmt.Sprintf("the server-tool loop stopped after turn %d: %s (the %d turn(s) and their tool calls were charged: %s)",
		l.turns, e.Message, l.turns, l.req.spend.total().USD())
	return &out
}

// unfundedFirst words the 402 of a first turn refused before it was sent
// when its hold included a tool call's fee (Job.Fees): the client should
// know that the fee, not the tokens alone, did not fit. Other errors pass.
func (l *toolLoop) unfundedFirst(r *dispatch.Result, e *apierr.Error, j *dispatch.Job) *apierr.Error {
	if r != nil || e.Status != http.StatusPaymentRequired || j.Fees <= 0 || e == dispatch.ErrOverBudget {
		return e
	}
	out := *e
	out.Message = fmt.Sprintf("%s (a request with server tools holds, beside its tokens, the most one tool call may cost: %s, the lower of limits.max_tool_fee_per_call and the tool's max_fee; nothing was charged)", e.Message, j.Fees.USD())
	return &out
}

// callCeiling is the most one call of the tool named name is charged and
// what is held for it before it runs: limits.max_tool_fee_per_call, or
// the tool's manifest max_fee when that is lower (a free tool holds
// nothing).
func (l *toolLoop) callCeiling(name string) billing.Nanos {
	c := l.req.core.feeCeiling()
	if t := l.set.Named(name); t != nil {
		if m, ok := t.MaxFee(); ok && m < c {
			return m
		}
	}
	return c
}

// turnFees is what a turn holds with its tokens (Job.Fees): the most one
// call of the request's server tools may cost, so that the account that
// cannot pay for one call is refused before the turn is sent, and the
// turn's first call can always run. Nothing on a turn that cannot call.
func (l *toolLoop) turnFees(turn tools.Turn) billing.Nanos {
	if turn == tools.Final || l.executed >= l.maxCalls {
		return 0
	}
	var most billing.Nanos
	for _, t := range l.set.Tools {
		most = max(most, l.callCeiling(t.Name))
	}
	return most
}

// holdFees holds the fees of a turn's calls at their ceilings before they
// run and returns how many of them may run: all of them, or the most
// whose fees the account's credit and the key's limit can still cover.
// The turn's reservation already holds one call's fee (turnFees), so at
// least one runs. Holds only grow, so the largest prefix that fits is
// found by bisection, each refused try holding nothing.
func (l *toolLoop) holdFees(r *dispatch.Result, calls []tools.Call) int {
	prefix := make([]billing.Nanos, len(calls)+1)
	for i, c := range calls {
		prefix[i+1] = usage.AddSat(prefix[i], l.callCeiling(c.Name))
	}
	fits := func(k int) bool {
		need := prefix[k] - r.FeesHeld()
		return need <= 0 || r.HoldFees(need) == nil
	}
	if fits(len(calls)) {
		return len(calls)
	}
	lo, hi := 0, len(calls)-1 // fits(lo) holds; fits(len(calls)) did not
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	l.unfunded = true
	return lo
}

// job is the dispatcher's request for one turn: the conversation so far,
// streamed from the upstream when the client streams, with the prompt
// bounds of this turn's body.
func (l *toolLoop) job(body []byte, id string, step tools.Turn) *dispatch.Job {
	stream := l.streaming
	body, _ = sjson.SetBytes(body, "stream", stream)
	body, _ = sjson.DeleteBytes(body, "stream_options")
	turn := *l.req.ChatRequest
	turn.Body, turn.Stream = body, stream
	turn.PromptBound, turn.Images = tokenize.EstimatePrompt(body)
	turn.PromptTokens = validate.EstimateTokens(len(gjson.GetBytes(body, "messages").Raw))
	req := &Request{ChatRequest: &turn, Key: l.req.Key, core: l.req.core, group: l.req.group, pl: l.req.pl}
	j := req.job(id)
	j.Fees = l.turnFees(step)
	// The first turn holds the plugins' fees (pluginfees.go) with the
	// model's worst case, drawn from what was held for them before the
	// pipeline ran.
	fees, env := l.req.fees.take()
	j.Fees += fees
	if env != nil {
		j.Envelope = env
	}
	if !stream {
		j.Read = l.readTurn
	}
	return j
}

// readTurn reads a turn's answer (dispatch.ReadChat) and refuses one with
// more tool calls than limits.max_tool_calls_per_turn: a retryable 502,
// another endpoint may answer within it. (A streamed turn is counted as
// it comes, in pushWriter.turn.)
func (l *toolLoop) readTurn(ctx context.Context, c *dispatch.Call) ([]byte, *apierr.Error) {
	raw, aerr := dispatch.ReadChat(ctx, c)
	if aerr != nil {
		return nil, aerr
	}
	n := 0
	gjson.GetBytes(raw, "choices.0.message.tool_calls").ForEach(func(_, _ gjson.Result) bool { n++; return true })
	if max := l.req.core.maxCallsPerTurn(); n > max {
		e := tooManyCalls(c.Endpoint.Provider.Slug, strconv.Itoa(n), max)
		e.Retryable = true
		return nil, e
	}
	return raw, nil
}

// maxCallsPerTurn is limits.max_tool_calls_per_turn.
func (s *Core) maxCallsPerTurn() int {
	if n := s.Config.Limits.MaxToolCallsPerTurn; n > 0 {
		return n
	}
	return config.DefaultMaxToolCallsPerTurn
}

// tooManyCalls is the 502 of an upstream turn with more tool calls than
// the limit (n: how many, or "more than N" while a stream is read).
func tooManyCalls(slug, n string, max int) *apierr.Error {
	return apierr.New(http.StatusBadGateway, "provider %s answered with %s tool calls in one turn; this gateway's limit is %d (limits.max_tool_calls_per_turn)", slug, n, max)
}

// split sorts the tool calls of an assistant message into server-tool calls
// and calls the client runs.
func (l *toolLoop) split(msg gjson.Result) (server, client []tools.Call) {
	msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		c := tools.Call{ID: tc.Get("id").Str, Name: tc.Get("function.name").Str, Arguments: tc.Get("function.arguments").Str}
		if l.set.Named(c.Name) != nil {
			server = append(server, c)
		} else {
			client = append(client, c)
		}
		return true
	})
	return server, client
}

// dropServerCalls removes server-tool calls the loop will not run from the
// answer: the client cannot run them. With no call left the turn ends as
// prose.
func (l *toolLoop) dropServerCalls(raw []byte, msg gjson.Result, client []tools.Call, finish string) ([]byte, string) {
	if len(client) == 0 {
		raw, _ = sjson.DeleteBytes(raw, "choices.0.message.tool_calls")
		if finish == "tool_calls" {
			finish = "stop"
			raw, _ = sjson.SetBytes(raw, "choices.0.finish_reason", finish)
		}
		if !gjson.GetBytes(raw, "choices.0.message.content").Exists() {
			raw, _ = sjson.SetBytes(raw, "choices.0.message.content", "")
		}
		return raw, finish
	}
	kept := []byte{'['}
	msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		if l.set.Named(tc.Get("function.name").Str) == nil {
			if len(kept) > 1 {
				kept = append(kept, ',')
			}
			kept = append(kept, tc.Raw...)
		}
		return true
	})
	raw, _ = sjson.SetRawBytes(raw, "choices.0.message.tool_calls", append(kept, ']'))
	return raw, finish
}

// runCalls runs a turn's server-tool calls within the request's budget;
// calls past it get a result saying so (every call needs a result).
// A fee above limits.max_tool_fee_per_call is charged at the ceiling and
// noted on the turn's record (f).
func (l *toolLoop) runCalls(ctx context.Context, f *dispatch.Result, calls []tools.Call, funded int) []tools.Outcome {
	n := l.toRun(len(calls))
	outs := make([]tools.Outcome, 0, len(calls))
	outs = append(outs, l.set.RunAll(ctx, l.env, calls[:funded])...)
	reported := make([]billing.Nanos, len(outs))
	for i := range outs {
		if c := l.req.core.capFee(f.Note, "tool "+outs[i].Type, outs[i].Cost, l.callCeiling(outs[i].Name)); c != outs[i].Cost {
			reported[i], outs[i].Cost = outs[i].Cost, c
		}
	}
	for _, c := range calls[funded:n] {
		outs = append(outs, tools.Skipped(l.set.Named(c.Name), c,
			fmt.Sprintf("not run: the fee this call may cost (up to %s) could not be held: the account's credit or the key's limit is used up; answer with what you have", l.callCeiling(c.Name).USD())))
	}
	for _, c := range calls[n:] {
		outs = append(outs, tools.Skipped(l.set.Named(c.Name), c,
			fmt.Sprintf("not run: this request's limit of %d server-tool calls (max_tool_calls) is reached; answer with what you have", l.maxCalls)))
	}
	l.executed += funded
	for i, o := range outs {
		if o.Status != "skipped" && o.Type == "service:web_search" {
			l.searches++
		}
		entry := map[string]any{"tool": o.Type, "name": o.Name, "id": o.ID,
			"arguments": clip([]byte(o.Arguments), 200), "status": o.Status, "error": o.Error,
			"cost": o.Cost, "duration_ms": o.Duration.Milliseconds(), "turn": l.turns}
		if i < len(reported) && reported[i] > 0 {
			entry["reported_cost"] = reported[i]
		}
		l.calls = append(l.calls, entry)
	}
	return outs
}

// toRun is how many of a turn's n server-tool calls run: those within the
// request's budget (max_tool_calls).
func (l *toolLoop) toRun(n int) int {
	return min(n, max(l.maxCalls-l.executed, 0))
}

// feesOf itemises a turn's tool costs by tool.
func feesOf(outs []tools.Outcome) []billing.Fee {
	var fees []billing.Fee
	for _, o := range outs {
		if o.Cost <= 0 {
			continue
		}
		i := 0
		for i < len(fees) && fees[i].Tool != o.Type {
			i++
		}
		if i == len(fees) {
			fees = append(fees, billing.Fee{Tool: o.Type})
		}
		fees[i].Calls++
		fees[i].Cost += o.Cost
	}
	return fees
}

// appendTurn appends the assistant's turn and one tool message per call.
func appendTurn(body []byte, msg gjson.Result, outs []tools.Outcome) []byte {
	content := msg.Get("content").Raw
	if content == "" {
		content = "null"
	}
	asst := []byte(`{"role":"assistant","content":` + content + `,"tool_calls":` + msg.Get("tool_calls").Raw + `}`)
	body, _ = sjson.SetRawBytes(body, "messages.-1", asst)
	for _, o := range outs {
		m := jsonstr.Append([]byte(`{"role":"tool","tool_call_id":`), o.ID)
		m = jsonstr.Append(append(m, `,"content":`...), o.Result)
		m = append(m, '}')
		body, _ = sjson.SetRawBytes(body, "messages.-1", m)
	}
	return body
}

// stopWhy returns the budget that ends the loop after a turn, or "": the
// first of the request's stop conditions that holds, else max_tool_calls.
func (l *toolLoop) stopWhy(finish string, outs []tools.Outcome) string {
	why := ""
	l.req.StopWhen.ForEach(func(_, c gjson.Result) bool {
		typ := c.Get("type").Str
		var fired bool
		switch typ {
		case "step_count_is":
			fired = int64(l.steps) >= c.Get("step_count").Int()
		case "max_cost":
			max, err := billing.ParseUSD(c.Get("max_cost_in_dollars").Raw)
			fired = err == nil && l.req.spend.total() >= max
		case "has_tool_call":
			name := c.Get("tool_name").Str
			for _, o := range outs {
				fired = fired || o.Name == name || o.Type == name || o.Type == validate.ServerToolPrefix+name
			}
		case "max_tokens_used":
			l.req.spend.mu.Lock()
			fired = l.req.spend.usage.TotalTokens() >= c.Get("max_tokens").Int()
			l.req.spend.mu.Unlock()
		case "finish_reason_is":
			fired = finish == c.Get("reason").Str
		}
		if fired {
			why = typ
		}
		return !fired
	})
	if why == "" && l.executed >= l.maxCalls {
		why = "max_tool_calls"
	}
	if why == "" && l.unfunded {
		why = "insufficient_credits"
	}
	return why
}

// answer is the final turn's result as the request's: its generation id,
// usage summed over every turn (and the tool fees and sub-requests), and
// the server-tool counts.
func (l *toolLoop) answer(raw []byte, r *dispatch.Result) []byte {
	id := r.Identity()
	id.GenID = l.req.ID
	raw = wire.Completion(raw, id, "chat.completion")
	sp := l.req.spend
	sp.mu.Lock()
	g := &billing.Generation{Usage: sp.usage, Cost: sp.cost, FailedCost: sp.failed, Charged: sp.charged + sp.subCharged,
		Uncollected: sp.uncollected}
	fees, subs := sp.fees, sp.subCharged
	sp.mu.Unlock()
	if out, err := wire.WriteUsage(raw, g); err == nil {
		raw = out
	}
	raw, _ = sjson.SetRawBytes(raw, "usage.cost_details.tool_fees", []byte(fees.USD()))
	raw, _ = sjson.SetRawBytes(raw, "usage.cost_details.server_tool_cost", []byte(fees.USD())) // OpenRouter's name
	if subs > 0 {
		raw, _ = sjson.SetRawBytes(raw, "usage.cost_details.sub_requests", []byte(subs.USD()))
	}
	raw, _ = sjson.SetRawBytes(raw, "usage.server_tool_use_details", []byte(fmt.Sprintf(
		`{"tool_calls_requested":%d,"tool_calls_executed":%d,"web_search_requests":%d,"turns":%d}`, l.asked, l.executed, l.searches, l.turns)))
	raw, _ = sjson.SetRawBytes(raw, "usage.server_tool_use", []byte(fmt.Sprintf(`{"web_search_requests":%d}`, l.searches)))
	l.req.adm.Record(g.Usage)
	return raw
}

// meta is service_metadata: the last turn's routing, the pipeline's
// stages, and the server_tools stage listing every call.
func (l *toolLoop) meta() *wire.Metadata {
	if !l.req.Meta {
		return nil
	}
	var m *wire.Metadata
	if l.last != nil {
		m = l.last.Metadata(l.req.Model())
		m.Unsupported = l.req.Unsupported
		if l.req.OpenRouterMeta {
			m.Name = "openrouter_metadata"
		}
	} else {
		m = l.req.pluginMeta()
	}
	stages := append([]map[string]any{}, l.req.pl.Stages...)
	calls := l.calls
	if calls == nil {
		calls = []map[string]any{}
	}
	summary := fmt.Sprintf("%d server-tool call(s) in %d turn(s)", l.executed, l.turns)
	if l.stopped != "" {
		summary += "; stopped by " + l.stopped
	}
	stages = append(stages, map[string]any{"type": "server_tools", "name": "server_tools", "summary": summary,
		"data": map[string]any{"turns": l.turns, "calls": calls, "stopped_by": l.stopped, "max_tool_calls": l.maxCalls}})
	stages = append(stages, l.req.spend.stages()...)
	m.Pipeline = stages
	return m
}

// subChat is CallEnv.Chat for a request: it runs a chat body as a
// sub-request — validated, through the pipeline, routed, held and settled
// under its own generation id (<request id>-sub<n>), charged to the
// request's key — and counts its charge in the request's usage. The
// sub-request's modules get no Chat of their own (depth 1: no recursion),
// and the request's deadline (in ctx) bounds it.
func (parent *Request) subChat(subs *atomic.Int32) func(ctx context.Context, body []byte) (int, []byte, error) {
	return func(ctx context.Context, body []byte) (int, []byte, error) {
		id := parent.ID + "-sub" + strconv.Itoa(int(subs.Add(1)))
		vr, aerr := parent.core.parseSub(parent, body)
		if aerr != nil {
			return aerr.Status, aerr.Envelope(nil), nil
		}
		if parent.group.hold() != nil {
			// A reserved group (a fusion) is under way: a streaming
			// parent may open its stream now (prestream.go).
			parent.group.start()
		}
		// Counted against the caller's rate limits as a request of its
		// own; beside another sub-request of the same caller it takes a
		// concurrent slot too.
		parallel := parent.subsInFlight.Add(1) > 1
		defer parent.subsInFlight.Add(-1)
		adm, aerr := parent.adm.also(int64(vr.PromptTokens), parallel)
		if aerr != nil {
			return aerr.Status, aerr.Envelope(nil), nil
		}
		req := &Request{ChatRequest: vr, Key: parent.Key, ID: id, core: parent.core, spend: &spend{}, group: parent.group, parent: parent, adm: adm}
		req.ctx = withCallEnv(ctx, req, id, nil, nil)
		req.refs.Store(1)
		defer req.Close()
		o := req.Run()
		if o.Err != nil {
			return o.Err.Status, o.Err.Envelope(nil), nil
		}
		return http.StatusOK, o.Body, nil
	}
}

// parseSub is the typed request of a sub-request's body: a chat request
// that does not stream, and runs server tools only within a reservation.
func (s *Core) parseSub(parent *Request, body []byte) (*validate.ChatRequest, *apierr.Error) {
	vr, aerr := validate.Chat(body)
	switch {
	case aerr != nil:
		return nil, aerr
	case vr.Stream:
		return nil, apierr.BadRequest("stream", "a sub-request cannot stream: send stream false")
	case vr.ServerTools && parent.group.hold() == nil:
		// A loop's turns multiply a sub-request's cost: only calls
		// a module reserved up front (chat_reserve, a fusion's panel)
		// may run one.
		return nil, apierr.BadRequest("tools", "server tools are not available in a sub-request unless its module reserved the calls first (chat_reserve)")
	case vr.ServerTools && vr.N > 1:
		return nil, apierr.BadRequest("n", "must be 1 with server tools: the loop continues one conversation")
	}
	return s.normalizeChat(vr)
}

// withCallEnv puts the request's environment for host functions in ctx
// (wasm.CallEnv): who pays, the request id, and the chat sub-request
// function (nil for a sub-request: no recursion).
func withCallEnv(ctx context.Context, req *Request, id string, chat func(context.Context, []byte) (int, []byte, error),
	reserve func(context.Context, []byte) (int, []byte, int, error)) context.Context {
	return wasm.WithCallEnv(ctx, &wasm.CallEnv{Account: req.Key.AccountID, KeyID: req.Key.Hash, RequestID: id, Chat: chat, Reserve: reserve})
}

// SubChat is the chat sub-request function (CallEnv.Chat) a request of
// key with id parentID gives its modules, and what its sub-requests were
// charged so far: for running module code outside a client's request
// (the end-to-end tests).
func (s *Core) SubChat(key *keys.Key, parentID string) (func(context.Context, []byte) (int, []byte, error), func() billing.Nanos) {
	parent := &Request{Key: key, ID: parentID, core: s, spend: &spend{}, group: &subGroup{}}
	return parent.subChat(new(atomic.Int32)), func() billing.Nanos {
		parent.spend.mu.Lock()
		defer parent.spend.mu.Unlock()
		return parent.spend.subCharged
	}
}
