package flow

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/bodyread"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/hangup"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/sse"
	"github.com/switchyard/switchyard/host/toolcheck"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/switchyard/switchyard/host/wire"
	"github.com/tidwall/gjson"
)

// ParseChat is the typed request of a chat body of account: validated
// (the plugins' options against the config_schemas of the plugins the
// account runs), OpenRouter's names taken (openrouter.go), normalised
// (compat.go), with the session of the X-Session-Id header (session, ""
// when absent). unsupported are the plugin options accepted and not
// implemented.
func (s *Core) ParseChat(body []byte, account, session string) (vr *validate.ChatRequest, unsupported []string, aerr *apierr.Error) {
	if len(body) == 0 {
		return nil, nil, apierr.BadRequest("", "request body is empty; send a JSON chat request")
	}
	if vr, aerr = validate.Chat(body); aerr != nil {
		return nil, nil, aerr
	}
	var pl compatPlugins
	if s.Pipeline != nil {
		if aerr = validate.PluginOptions(vr.Plugins, s.Pipeline.Schemas(account)); aerr != nil {
			return nil, nil, aerr
		}
		pl.online = s.Pipeline.Modules.RolePlugin(account, manifest.RoleOnline)
		pl.unsupported = func(id string) []string { return s.Pipeline.Unsupported(account, id) }
	}
	if vr, unsupported, aerr = openRouterCompat(vr, s.knownModel, pl); aerr != nil {
		return nil, nil, aerr
	}
	if vr, aerr = s.normalizeChat(vr); aerr != nil {
		return nil, nil, aerr
	}
	if aerr = vr.SessionHeader(session); aerr != nil {
		return nil, nil, aerr
	}
	return vr, unsupported, nil
}

// toolVerdict judges the tool calls collected from an answer against the
// tools the request offered, as the router counts them.
func (r *Request) toolVerdict(calls *toolcheck.Calls) route.ToolCallVerdict {
	if calls.Len() == 0 {
		return route.ToolCallsNone
	}
	switch calls.Judge(gjson.GetBytes(r.Body, "tools")) {
	case toolcheck.Valid:
		return route.ToolCallsValid
	case toolcheck.Invalid:
		return route.ToolCallsInvalid
	}
	return route.ToolCallsNone
}

// knownModel reports whether a model name is a catalog id or alias as it
// stands.
func (s *Core) knownModel(id string) bool { return s.Router.Catalog().Resolve(id) != "" }

// Run runs the request through its phases: router plugin → pipeline →
// pre_request → (server-tool loop | dispatch) → post → settle. What it
// returns is answered as it is; the Request stays the caller's to Close
// (a Stream holds a reference of its own).
func (r *Request) Run() Outcome {
	o := r.run()
	if o.Err == nil && r.parent == nil && r.cacheSeen {
		// A stream opened while its pre_request hooks work (prestream.go)
		// has no cache verdict yet: no header then.
		o.Cache = r.cacheHeader()
		r.observeCache(o.Stream != nil || o.Events != nil)
	}
	return o
}

func (r *Request) run() Outcome {
	if o, done := r.route(); done {
		return o
	}
	if aerr := r.buildPipeline(); aerr != nil {
		return fail(aerr, nil)
	}
	if aerr := r.holdPluginFees(); aerr != nil {
		return fail(aerr, r.pluginMeta())
	}
	if o, done := r.pre(); done {
		return o
	}
	if r.ServerTools {
		return r.serverTools()
	}
	res, aerr := r.dispatch(r.ID)
	if aerr != nil {
		return r.dispatchFailed(res, aerr)
	}
	r.chargePluginFees(res)
	if r.Stream {
		return Outcome{Stream: r.newPump(res), Charged: true, Native: res.Call.Native()}
	}
	return r.complete(res)
}

// route runs the request's router plugin (routers.go). done: the router
// answered or refused the request.
func (r *Request) route() (Outcome, bool) {
	answer, aerr := r.runRouter()
	switch {
	case aerr != nil:
		return fail(aerr, r.pluginMeta()), true
	case answer != nil:
		return r.pluginAnswer(answer), true
	}
	return Outcome{}, false
}

// pre runs the pre_request hooks. A streaming request's run in
// prestream.go, which may open the stream while a plugin works. done: a
// plugin answered or refused the request (or the stream opened).
func (r *Request) pre() (Outcome, bool) {
	var answer []byte
	var aerr *apierr.Error
	if r.Stream && !r.pl.Empty() && r.parent == nil {
		var o Outcome
		var opened bool
		if answer, aerr, o, opened = r.streamPre(); opened {
			return o, true
		}
	} else {
		answer, aerr = r.preRequest(r.pl)
	}
	r.markPre()
	switch {
	case aerr != nil:
		// Its plugins' sub-requests were charged: their records are
		// <id>-sub<n> (a failed fusion's panel).
		return Outcome{Err: aerr, Meta: r.pluginMeta(), Charged: r.spend.made()}, true
	case answer != nil:
		return r.pluginAnswer(answer), true
	}
	return Outcome{}, false
}

// dispatch runs one dispatcher job of the request's current body under
// generation id id (a server-tool turn's is the request's id with its
// turn number).
func (r *Request) dispatch(id string) (*dispatch.Result, *apierr.Error) {
	res, aerr := r.core.Dispatcher.Run(r.ctx, r.job(id))
	r.fees.env.Release() // the reservation drew what it holds from it
	return res, aerr
}

// dispatchFailed is the Outcome of a request no endpoint served. For a
// sub-request, its failed attempts' charge is its parent's.
func (r *Request) dispatchFailed(res *dispatch.Result, aerr *apierr.Error) Outcome {
	if r.parent != nil {
		r.parent.spend.addFailedSub(r.ID, r.Model(), res, aerr)
	}
	return fail(aerr, r.failedMeta(res))
}

// complete answers a non-streaming request with its result: post plugins,
// settle, metadata.
func (r *Request) complete(res *dispatch.Result) Outcome {
	raw, facts := wire.CompletionFacts(res.Body, res.Identity(), "chat.completion")
	reported, ok := facts.Usage()
	// facts point into the upstream's body: nothing kept may (the finish
	// reason is cloned), so it goes before the completion is counted.
	finish := strings.Clone(facts.FinishReason())
	res.Body = nil // raw is the copy from here on; a 30 MB answer is not held twice
	usage := res.UsageOr(reported, ok, func() string { return wire.CompletionText(raw) })
	r.adm.Record(usage)
	if slices.Contains(r.Params, "tools") {
		// Judged as the endpoint answered, before a post plugin (such as
		// response-healing) mends it: the :exacto variant ranks endpoints.
		var calls toolcheck.Calls
		calls.Message(gjson.GetBytes(raw, "choices"))
		res.ToolCalls = r.toolVerdict(&calls)
	}
	// The generation happened whatever a post plugin decides: it is
	// charged either way.
	raw, postErr := r.post(raw)
	r.chargePluginFees(res) // post_response fees, held with the request
	meta := r.metadata(res).WithStages(r.spend.withStages(r.pl.Stages))
	if hangup.Gone(r.ctx) {
		// The answer came, but nobody is there to take it: what the
		// upstream billed is charged, as cancelled.
		res.Cancel(usage)
		gone := apierr.ClientClosed()
		if r.parent != nil {
			r.parent.spend.addFailedSub(r.ID, r.Model(), res, gone)
		}
		return fail(gone, nil)
	}
	raw, g, aerr := res.SettleRecord(raw, usage, finish)
	if g != nil && r.parent != nil {
		r.parent.spend.addSub(g, r.Model())
	}
	if aerr == nil {
		aerr = postErr
	}
	if aerr != nil {
		return fail(aerr, meta)
	}
	res.Succeeded(0, int(usage.CompletionTokens))
	if res.NativeBody != nil {
		// Settled on its chat translation; the client gets the provider's
		// own answer, as it came (no usage.cost, no service_metadata: the
		// generation record has both).
		return Outcome{Body: res.NativeBody, Charged: true, Native: true}
	}
	raw = r.spend.includeSubs(raw) // chat sub-requests its plugins made
	return Outcome{Body: meta.Set(raw), Charged: true}
}

// post runs the post_response hooks on a complete answer. On error the
// answer is returned unchanged with the error: what was generated is
// charged whatever a plugin decides.
func (r *Request) post(raw []byte) ([]byte, *apierr.Error) {
	if r.pl.Empty() {
		return raw, nil
	}
	edited, err := r.pl.Post(r.ctx, raw)
	if err != nil {
		return raw, err
	}
	return edited, nil
}

// moderatedBy lists the providers requiring moderation (catalog flag
// requires_moderation) among every endpoint the request may be routed to,
// fallbacks included: moderation runs before routing, so it runs when any
// of them could receive the request.
func (r *Request) moderatedBy() []string {
	cat := r.core.Router.Catalog()
	required := false
	for _, p := range cat.Providers {
		required = required || p.RequiresModeration
	}
	if !required {
		return nil
	}
	rr := r.routeRequest()
	rr.Prefs.NoFallbacks = false // the dispatcher may pick any eligible one first
	plan, err := r.core.Router.Plan(rr)
	if err != nil {
		return nil // the dispatcher refuses the request the same way
	}
	var slugs []string
	for _, ep := range plan.Attempts {
		if ep.Provider.RequiresModeration && !slices.Contains(slugs, ep.Provider.Slug) {
			slugs = append(slugs, ep.Provider.Slug)
		}
	}
	return slugs
}

// preRequest runs pl's pre_request plugins (the request's, or its
// router's). It leaves the request to route
// in r (re-validated when a plugin changed it) or returns the answer a
// plugin gave.
func (r *Request) preRequest(pl *pipeline.Pipeline) ([]byte, *apierr.Error) {
	answer, aerr := r.core.runPre(r.ctx, r, pl)
	if aerr == nil && answer == nil {
		if rm := r.routerOf(r.Model(), ""); rm != nil && rm.Answers {
			// Its plugin stepped aside: fusion does not run inside a
			// fusion's (or any module's) sub-request.
			return nil, apierr.BadRequest("model", "model %s was not answered: the %s plugin does not run here (not inside a module's chat sub-request); name a model", rm.Model, rm.Plugin)
		}
	}
	return answer, aerr
}

// runPre runs pl's pre_request hooks on req's body; an edited body becomes
// req's typed request.
func (s *Core) runPre(ctx context.Context, req *Request, pl *pipeline.Pipeline) ([]byte, *apierr.Error) {
	if pl.Empty() {
		return nil, nil
	}
	pre, aerr := pl.Pre(ctx, req.Body)
	if aerr != nil || pre.Respond != nil {
		return pre.Respond, aerr
	}
	if string(pre.Body) == string(req.Body) {
		return nil, nil
	}
	if aerr := s.pluginBodyLimit(pre.Body); aerr != nil {
		return nil, aerr
	}
	vr, err := validate.Chat(pre.Body)
	if err != nil {
		return nil, &apierr.Error{Status: http.StatusBadGateway, Message: "a plugin produced an invalid request: " + err.Message}
	}
	if vr.SessionID == "" {
		vr.SessionID = req.SessionID // the header's session still applies
	}
	req.ChatRequest = vr
	return nil, nil
}

// pluginBodyLimit holds a request a pre_request plugin rewrote to the same
// max_body_bytes as the client's: a plugin must not turn a small request
// into one the gateway would have refused. It is the plugin's failure, not
// the caller's, so a 502 (as for any invalid plugin output), naming the
// limit so the operator can see which bound was hit.
func (s *Core) pluginBodyLimit(body []byte) *apierr.Error {
	if len(body) <= s.Config.MaxBodyBytes {
		return nil
	}
	return apierr.New(http.StatusBadGateway, "a plugin produced a request of %d bytes, over the gateway's limit of %s (max_body_bytes)",
		len(body), bodyread.HumanBytes(s.Config.MaxBodyBytes))
}

// routeRequest is what the router plans the request's current body by.
func (r *Request) routeRequest() route.Request {
	acct := r.core.Keys.Providers(r.Key.AccountID)
	return route.Request{
		Kind: catalog.KindChat, Models: r.Models, Prefs: r.Prefs, Params: r.Params,
		SessionID: r.SessionID, PromptTokens: r.PromptTokens, MaxOutputTokens: r.MaxOutput,
		AccountOnly: acct.Only, AccountIgnore: acct.Ignore,
		Compression: r.core.Modules.RolePlugin(r.Key.AccountID, manifest.RoleCompression),
	}
}

// job is the dispatcher's request for the current body under id.
func (r *Request) job(id string) *dispatch.Job {
	fees, env := r.fees.take()
	only := false
	switch {
	case env != nil:
	case r.parent != nil:
		// A module's sub-request: within its reservation, or the
		// allowance held for the module's sub-requests before it ran.
		env, only = r.group.subHold()
	default:
		env = r.group.hold()
	}
	return &dispatch.Job{
		Envelope: env, EnvelopeOnly: only, Fees: fees,
		Key: r.Key, GenID: id, Body: r.Body, Stream: r.Stream, EchoSent: r.EchoUpstream, MaxOutput: r.MaxOutput, Choices: r.N,
		PromptBound: r.PromptBound, Images: r.Images, Read: dispatch.ReadChat,
		Route: r.routeRequest(), PluginTime: r.pl.Time, Native: r.nativeJob(), Attribution: r.Attribution,
	}
}

// nativeJob is the client's own request for providers that speak its API
// (Request.Native), or nil when the request is not the client's as it
// sent it: a plugin in its pipeline (which may edit the chat body or the
// answer: web, file-parser, context-compression, response-healing, a
// router's stage, moderation …), server tools (the gateway's loop runs
// on chat), or a sub-request. Those run translated, every attempt.
func (r *Request) nativeJob() *dispatch.Native {
	if r.Native == nil || !r.pl.Empty() || r.ServerTools || r.parent != nil || r.routerPlugin != "" || r.answerPlugin != "" {
		return nil
	}
	return r.Native
}

// metadata is service_metadata of a served request, or nil when the caller
// did not ask for it.
func (r *Request) metadata(res *dispatch.Result) *wire.Metadata {
	if !r.Meta {
		return nil
	}
	return r.routedMeta(res)
}

// failedMeta is service_metadata of a request no endpoint served; nil when
// not asked for or when nothing was attempted.
func (r *Request) failedMeta(res *dispatch.Result) *wire.Metadata {
	if !r.Meta || res == nil {
		return nil
	}
	return r.routedMeta(res).WithStages(r.pl.Stages)
}

// pluginMeta is service_metadata of a request the pipeline stopped or
// answered before routing. Like a routed request's, it lists the endpoints
// the request could have been routed to, none selected, and an empty
// region (spec 2.2 shows a guardrail block so).
func (r *Request) pluginMeta() *wire.Metadata {
	if !r.Meta {
		return nil
	}
	pl := emptyOr(r.pl)
	r.answeredBy(pl)
	m := wire.PluginAnswered(r.Model(), r.spend.withStages(pl.Stages))
	m.Endpoints = r.core.Router.Unrouted(r.Models, m.Strategy).Metadata(r.Model(), nil, 0).Endpoints
	return r.routerMeta(m)
}

// pluginAnswer answers with the chat result a plugin produced. Nothing
// went upstream for the request itself: what is charged is the chat
// sub-requests the plugin made (a fusion's panel), whose usage becomes
// the answer's. A streaming request gets the result as a stream.
func (r *Request) pluginAnswer(result []byte) Outcome {
	id := wire.Identity{GenID: r.ID, Model: r.Model()}
	if r.parent != nil {
		return Outcome{Body: wire.PluginResult(result, id)}
	}
	result, aerr := r.answerResult(result, id)
	if aerr != nil {
		return Outcome{Err: aerr, Meta: r.pluginMeta(), Charged: r.spend.made()}
	}
	if !r.Stream {
		return Outcome{Body: result, Charged: true}
	}
	var out []byte
	for _, ch := range wire.ResultChunks(result, id) {
		out = sse.AppendEvent(out, ch)
	}
	return Outcome{Events: sse.AppendEvent(out, done), Charged: true}
}

// answerResult is the result a plugin answered with as the client gets
// it: identity, usage of its sub-requests, or the charge of a cache hit
// (cache.go), and service_metadata.
func (r *Request) answerResult(result []byte, id wire.Identity) ([]byte, *apierr.Error) {
	result = wire.PluginResult(result, id)
	if r.cacheHit() {
		var aerr *apierr.Error
		if result, aerr = r.chargeHit(result); aerr != nil {
			return nil, aerr
		}
	} else {
		result = r.spend.answered(result, r.adm)
	}
	return r.pluginMeta().Set(result), nil
}

// feeCeiling is limits.max_tool_fee_per_call: the most one tool call or
// plugin hook is charged.
func (s *Core) feeCeiling() billing.Nanos {
	f := s.Config.Limits.MaxToolFeePerCall
	if f <= 0 {
		f = config.DefaultMaxToolFeePerCall
	}
	return billing.FromUSD(f)
}

// subCeiling is limits.max_sub_request_cost: the most one plugin's
// sub-requests may cost in a request without a reservation of their own.
func (s *Core) subCeiling() billing.Nanos {
	f := s.Config.Limits.MaxSubRequestCost
	if f <= 0 {
		f = config.DefaultMaxSubRequestCost
	}
	return billing.FromUSD(f)
}

// capFee is what a fee who reported is charged: itself, or ceiling (the
// operator's limits.max_tool_fee_per_call, or a tool's lower max_fee) when
// it is above it — then logged and noted on res's generation record
// (upstream_anomaly; syctl audit lists it).
func (s *Core) capFee(note func(string), who string, fee, ceiling billing.Nanos) billing.Nanos {
	if fee <= ceiling {
		return fee
	}
	s.Log.Warn("a fee above its ceiling was charged at the ceiling", "module", who, "reported", fee.USD(), "ceiling", ceiling.USD())
	note(fmt.Sprintf("%s reported a fee of %s, above its ceiling of %s a call (the lower of limits.max_tool_fee_per_call and the tool's max_fee): charged %s", who, fee, ceiling, ceiling))
	return ceiling
}
