package server

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/hangup"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/sse"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/switchyard/switchyard/host/wire"
)

// chat serves POST /chat/completions: typed request → plugins (pre) →
// dispatcher → stream pump or JSON writer.
func (s *Server) chat(c *fiber.Ctx) error {
	endSpan := telemetry.From(c.UserContext()).Phase("validate")
	req, aerr := s.chatRequest(c)
	endSpan(aerr)
	if aerr != nil {
		return s.refused(c, aerr)
	}
	// Rate limits (ratelimit.go): every way out below ends the admission
	// through release, the stream's included.
	if req.adm, aerr = s.admit(c, req.key, int64(req.PromptTokens)); aerr != nil {
		return aerr
	}
	// The user context carries the request's telemetry (host/telemetry).
	ctx, cancel := context.WithTimeout(c.UserContext(), s.Dispatcher.RequestTimeout)
	// Until the handler returns, a client that hangs up cancels the work
	// (a stream's pump notices it by its failed writes afterwards).
	ctx, stopWatch := hangup.Watch(ctx, cancel, c.Context().Conn())
	defer stopWatch.Stop()
	genID := newGenerationID()
	// Host functions called by this request's modules (chat sub-requests
	// among them) act for it: the same key, counted in its usage.
	env := &requestEnv{}
	req.spend, req.group = &env.spend, &env.group
	env.call = wasm.CallEnv{Account: req.key.AccountID, KeyID: req.key.Hash, RequestID: genID,
		Chat: s.subChat(req, genID, req.spend, &env.subs), Reserve: s.reserveFor(req)}
	ctx = wasm.WithCallEnv(ctx, &env.call)
	adm := req.adm
	req, rp, answer, aerr := s.runRouter(ctx, req) // routers.go
	if aerr != nil || answer != nil {
		rp.Release()
		cancel()
		req.group.release()
		adm.end()
		if aerr != nil {
			return s.writeError(c, aerr, s.pluginMeta(req, emptyOr(rp)))
		}
		return s.respondFromPlugin(c, req, rp, genID, answer)
	}
	pl, aerr := s.buildPipeline(req) // compress.go
	if aerr != nil {
		rp.Release()
		cancel()
		req.adm.end()
		return aerr
	}
	pl.Prepend(rp)
	group := req.group
	release := func() { pl.Release(); cancel(); group.release(); adm.end() }
	var edited *chatRequest
	if req.Stream && !pl.Empty() {
		o, opened := s.streamPre(c, ctx, req, pl, genID, release) // prestream.go
		if opened {
			return nil
		}
		edited, answer, aerr = o.edited, o.answer, o.aerr
	} else {
		edited, answer, aerr = s.preRequest(ctx, req, pl)
	}
	switch {
	case aerr != nil:
		release()
		if req.spend.made() {
			// Its plugins' sub-requests were charged: their records are
			// <id>-sub<n> (a failed fusion's panel).
			c.Set("X-Generation-Id", genID)
		}
		return s.writeError(c, aerr, s.pluginMeta(req, pl))
	case answer != nil:
		release()
		return s.respondFromPlugin(c, req, pl, genID, answer)
	}
	req = edited
	if req.ServerTools {
		return s.serverTools(c, ctx, req, pl, genID, release) // servertools.go
	}
	job := req.job(s.Keys, genID)
	job.PluginTime = pl.Time
	r, aerr := s.Dispatcher.Run(ctx, job)
	if aerr != nil {
		release()
		return s.writeError(c, aerr, req.failedMeta(r, pl))
	}
	r.AddFees(s.pluginFees(pl)...)
	if req.Stream {
		exit := s.keepShedSlot(c) // an open stream counts as in flight
		p := &pump{s: s, r: r, req: req, pl: pl, ctx: ctx, release: func() { release(); exit() }, id: r.Identity(), meta: req.metadata(r)}
		setStreamHeaders(c)
		c.Set("X-Generation-Id", genID)
		p.serve(c)
		return nil
	}
	defer release()
	return s.writeCompletion(ctx, c, req, pl, r)
}

// moderatedBy lists the providers requiring moderation (catalog flag
// requires_moderation) among every endpoint the request may be routed to,
// fallbacks included: moderation runs before routing, so it runs when any
// of them could receive the request.
func (s *Server) moderatedBy(req *chatRequest) []string {
	cat := s.Router.Catalog()
	required := false
	for _, p := range cat.Providers {
		required = required || p.RequiresModeration
	}
	if !required {
		return nil
	}
	rr := req.job(s.Keys, "").Route
	rr.Prefs.NoFallbacks = false // the dispatcher may pick any eligible one first
	plan, err := s.Router.Plan(rr)
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

// writeCompletion answers a non-streaming request with its result: post
// plugins, settle, metadata.
func (s *Server) writeCompletion(ctx context.Context, c *fiber.Ctx, req *chatRequest, pl *pipeline.Pipeline, r *dispatch.Result) error {
	raw, facts := wire.CompletionFacts(r.Body, r.Identity(), "chat.completion")
	reported, ok := facts.Usage()
	// facts point into the upstream's body: nothing kept may (the finish
	// reason is cloned), so it goes before the completion is counted.
	finish := strings.Clone(facts.FinishReason())
	r.Body = nil // raw is the copy from here on; a 30 MB answer is not held twice
	usage := r.UsageOr(reported, ok, func() string { return wire.CompletionText(raw) })
	req.adm.record(usage)
	var postErr *apierr.Error
	if !pl.Empty() {
		// The generation happened whatever a post plugin decides: it is
		// charged either way.
		if edited, err := pl.Post(ctx, raw); err != nil {
			postErr = err
		} else {
			raw = edited
		}
	}
	meta := req.metadata(r).WithStages(req.spend.withStages(pl.Stages))
	if hangup.Gone(ctx) {
		// The answer came, but nobody is there to take it: what the
		// upstream billed is charged, as cancelled.
		r.Cancel(usage)
		return apierr.New(499, "client closed the request")
	}
	raw, aerr := r.Settle(raw, usage, finish)
	if aerr == nil {
		aerr = postErr
	}
	if aerr != nil {
		return s.writeError(c, aerr, meta)
	}
	r.Succeeded(0, int(usage.CompletionTokens))
	raw = req.spend.includeSubs(raw) // chat sub-requests its plugins made
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	c.Set("X-Generation-Id", r.Identity().GenID)
	return c.Send(meta.Set(raw))
}

// chatRequest is a validated chat request and who sent it.
type chatRequest struct {
	*validate.ChatRequest
	meta bool // X-Service-Metadata: enabled
	// unsupported are the plugin options accepted and not implemented
	// ("web.mode"), for service_metadata.unsupported (openrouter.go).
	unsupported []string
	// openRouterMeta: the metadata was asked for with OpenRouter's header,
	// and is answered under its name, openrouter_metadata.
	openRouterMeta bool
	key            *keys.Key
	adm            *admission // its rate-limit admission
	// spend sums the charges of its runs (server-tool turns, sub-requests).
	spend *spend
	// group is shared with the chat sub-requests its modules make: their
	// reserved hold and the signal that they started (subgroup.go).
	group *subGroup
	// routed is what its router plugin decided (routers.go); nil when
	// none ran. routerPlugin is that plugin's id.
	routed       *routed
	routerPlugin string
	// answerPlugin is the answering router its model names (fusion for
	// switchyard/fusion), which joins its pipeline (buildPipeline).
	answerPlugin string
}

func (s *Server) chatRequest(c *fiber.Ctx) (*chatRequest, *apierr.Error) {
	// A stream outlives the handler.
	body := keptBody(c)
	if len(body) == 0 {
		return nil, apierr.BadRequest("", "request body is empty; send a JSON chat request")
	}
	vr, err := validate.Chat(body)
	if err != nil {
		return nil, err
	}
	vr, unsupported, err := openRouterCompat(vr) // OpenRouter's names (openrouter.go)
	if err != nil {
		return nil, err
	}
	if vr, err = s.normalizeChat(vr); err != nil {
		return nil, err
	}
	if err := vr.SessionHeader(c.Get("X-Session-Id")); err != nil {
		return nil, err
	}
	return &chatRequest{ChatRequest: vr, meta: metadataRequested(c), key: c.Locals(localsKey).(*keys.Key), unsupported: unsupported,
		openRouterMeta: openRouterMetadataAsked(c)}, nil
}

// preRequest runs the pre_request plugins. It returns the request to route
// (re-validated when a plugin changed it) or the answer a plugin gave.
func (s *Server) preRequest(ctx context.Context, req *chatRequest, pl *pipeline.Pipeline) (*chatRequest, []byte, *apierr.Error) {
	edited, answer, aerr := s.runPre(ctx, req, pl)
	if aerr == nil && answer == nil {
		if r := routerOf(edited.Model(), ""); r != nil && r.Answers {
			// Its plugin stepped aside: fusion does not run inside a
			// fusion's (or any module's) sub-request.
			return edited, nil, apierr.BadRequest("model", "model %s was not answered: the %s plugin does not run here (not inside a module's chat sub-request); name a model", r.Model, r.Plugin)
		}
	}
	return edited, answer, aerr
}

func (s *Server) runPre(ctx context.Context, req *chatRequest, pl *pipeline.Pipeline) (*chatRequest, []byte, *apierr.Error) {
	if pl.Empty() {
		return req, nil, nil
	}
	pre, aerr := pl.Pre(ctx, req.Body)
	if aerr != nil || pre.Respond != nil {
		return req, pre.Respond, aerr
	}
	if string(pre.Body) == string(req.Body) {
		return req, nil, nil
	}
	if aerr := s.pluginBodyLimit(pre.Body); aerr != nil { // body.go
		return req, nil, aerr
	}
	vr, err := validate.Chat(pre.Body)
	if err != nil {
		return req, nil, &apierr.Error{Status: http.StatusBadGateway, Message: "a plugin produced an invalid request: " + err.Message}
	}
	if vr.SessionID == "" {
		vr.SessionID = req.SessionID // the header's session still applies
	}
	return &chatRequest{ChatRequest: vr, meta: req.meta, key: req.key, adm: req.adm, spend: req.spend, group: req.group, routed: req.routed, routerPlugin: req.routerPlugin, answerPlugin: req.answerPlugin, unsupported: req.unsupported, openRouterMeta: req.openRouterMeta}, nil, nil
}

// job is the request for the dispatcher.
func (req *chatRequest) job(ks *keys.Store, genID string) *dispatch.Job {
	acct := ks.Providers(req.key.AccountID)
	return &dispatch.Job{
		Envelope: req.group.hold(),
		Key:      req.key, GenID: genID, Body: req.Body, Stream: req.Stream, EchoSent: req.EchoUpstream, MaxOutput: req.MaxOutput, Choices: req.N,
		PromptBound: req.PromptBound, Images: req.Images, Read: dispatch.ReadChat,
		Route: route.Request{
			Kind: catalog.KindChat, Models: req.Models, Prefs: req.Prefs, Params: req.Params,
			SessionID: req.SessionID, PromptTokens: req.PromptTokens, MaxOutputTokens: req.MaxOutput,
			AccountOnly: acct.Only, AccountIgnore: acct.Ignore,
		},
	}
}

// metadata is service_metadata of a served request, or nil when the caller
// did not ask for it.
func (req *chatRequest) metadata(r *dispatch.Result) *wire.Metadata {
	if !req.meta {
		return nil
	}
	return req.routedMeta(r)
}

// failedMeta is service_metadata of a request no endpoint served; nil when
// not asked for or when nothing was attempted.
func (req *chatRequest) failedMeta(r *dispatch.Result, pl *pipeline.Pipeline) *wire.Metadata {
	if !req.meta || r == nil {
		return nil
	}
	return req.routedMeta(r).WithStages(pl.Stages)
}

// pluginMeta is service_metadata of a request the pipeline stopped or
// answered before routing. Like a routed request's, it lists the endpoints
// the request could have been routed to, none selected, and an empty
// region (spec 2.2 shows a guardrail block so).
func (s *Server) pluginMeta(req *chatRequest, pl *pipeline.Pipeline) *wire.Metadata {
	if !req.meta {
		return nil
	}
	req.answeredBy(pl)
	m := wire.PluginAnswered(req.Model(), req.spend.withStages(pl.Stages))
	m.Endpoints = s.Router.Unrouted(req.Models, m.Strategy).Metadata(req.Model(), nil, 0).Endpoints
	return req.routerMeta(m)
}

// respondFromPlugin answers with the chat result a pre_request plugin
// produced. Nothing went upstream for the request itself: what is charged
// is the chat sub-requests the plugin made (a fusion's panel), whose usage
// becomes the answer's. A streaming request gets the result as a stream.
func (s *Server) respondFromPlugin(c *fiber.Ctx, req *chatRequest, pl *pipeline.Pipeline, genID string, result []byte) error {
	id := wire.Identity{GenID: genID, Model: req.Model()}
	result = s.pluginMeta(req, pl).Set(req.spend.answered(wire.PluginResult(result, id), req.adm))
	c.Set("X-Generation-Id", genID)
	if !req.Stream {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(result)
	}
	var out []byte
	for _, ch := range wire.ResultChunks(result, id) {
		out = sse.AppendEvent(out, ch)
	}
	setStreamHeaders(c)
	return c.Send(sse.AppendEvent(out, done))
}

// metadataRequested reads X-Service-Metadata (or the deprecated
// X-Service-Experimental-Metadata).
func metadataRequested(c *fiber.Ctx) bool {
	v := c.Get("X-Service-Metadata")
	if v == "" {
		v = c.Get("X-Service-Experimental-Metadata")
	}
	for _, h := range openRouterMetadataHeaders { // OpenRouter's names of it
		if v == "" {
			v = c.Get(h)
		}
	}
	return v == "enabled"
}

// newGenerationID is time-ordered (billing.NewID): the ledger's commits
// stay small when ids are appended in order.
func newGenerationID() string { return billing.NewID() }

// pluginFees turns the fees plugins reported (a paid search engine's) into
// charges itemised on the generation as "plugin:<id>". They are charged
// with the request's generation, so only when a model answered: a request
// that failed costs nothing. A cost that is not a non-negative dollar
// amount is a broken module: logged and not charged.
func (s *Server) pluginFees(pl *pipeline.Pipeline) []billing.Fee {
	var fees []billing.Fee
	for _, f := range pl.Fees {
		n, err := billing.ParseUSD(f.Cost)
		if err != nil || n < 0 {
			s.Log.Warn("a plugin reported a cost that is not a dollar amount; not charged", "plugin", f.Plugin, "cost", f.Cost)
			continue
		}
		if n > 0 {
			fees = append(fees, billing.Fee{Tool: "plugin:" + f.Plugin, Calls: 1, Cost: n})
		}
	}
	return fees
}
