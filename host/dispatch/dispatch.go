// Package dispatch runs a request through routing and billing: plan the
// endpoints, hold the worst-case cost, then per attempt retarget the hold,
// translate and send through the endpoint's adapter, classify the outcome,
// fall back or stop, report to the router's health, and leave the result
// to settle. Chat and embeddings both run here, and so can anything that
// needs "this request, served by the best endpoint, billed" as a function.
package dispatch

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/hangup"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/switchyard/switchyard/host/usage"
	"github.com/switchyard/switchyard/host/wire"
)

// Dispatcher holds what every run needs.
type Dispatcher struct {
	Router  *route.Router
	Ledger  *billing.Ledger
	Modules *modules.Registry
	Client  *http.Client
	// Direct, when set, is Client's transport, which calls are handed to
	// straight. Set it only for a client that adds nothing to a request
	// (no cookie jar, no timeout) and never follows a redirect: Client.Do
	// then only copies the request's headers for a redirect it will not
	// follow (~1 µs and five allocations a call). A provider URL with
	// credentials in it still goes through Client, which sends them.
	Direct http.RoundTripper
	// AttemptTimeout bounds one attempt until its response headers;
	// RequestTimeout is the whole request's limit (the caller's ctx carries
	// it; here it only names it in messages).
	AttemptTimeout, RequestTimeout time.Duration
	// MaxResponseBytes bounds a non-streaming upstream body (0: 64 MiB).
	MaxResponseBytes int
	// Log receives what the dispatcher repairs or refuses in upstream
	// answers; nil means slog.Default().
	Log *slog.Logger
}

func (d *Dispatcher) log() *slog.Logger {
	if d.Log == nil {
		return slog.Default()
	}
	return d.Log
}

// Job is one request to run.
type Job struct {
	Key   *keys.Key
	GenID string
	// Attribution is the client's app (attribution headers), recorded on
	// the generation.
	Attribution usage.Attribution
	// Route is what routing needs; its Kind picks the adapter hooks.
	Route route.Request
	// Body is the request for the adapters; bodyFor shapes it per endpoint.
	Body []byte
	// TextBody is an embeddings Body whose token-id input is decoded to
	// text, for providers that take no token ids; nil when the input is
	// text.
	TextBody []byte
	// Stream asks for the upstream's stream: the result's Call is returned
	// with its body unread.
	Stream bool
	// EchoSent keeps the body sent upstream on the call (Call.SentBody),
	// for the stream's debug echo.
	EchoSent bool
	// MaxOutput is the request's bound on generated tokens per choice; 0
	// means each endpoint's own maximum. Choices is the request's n: every
	// choice may generate that much.
	MaxOutput, Choices int
	// PromptBound and Images bound the prompt for the hold.
	PromptBound, Images int64
	// Read finishes a non-streaming attempt: it reads and translates the
	// upstream body. A failure there is a failed attempt like any other.
	Read func(ctx context.Context, c *Call) ([]byte, *apierr.Error)
	// ReadPart, for embeddings, is Read for a part of the request holding
	// that many inputs: an endpoint whose adapter takes fewer inputs a call
	// than the request holds gets it in parts (split.go).
	ReadPart func(inputs int) func(ctx context.Context, c *Call) ([]byte, *apierr.Error)
	// PluginTime, when set, reports the wall time of the request's plugin
	// hooks so far; settlement records it on the generation.
	PluginTime func() time.Duration
	// Envelope, when set, is a hold taken for a group of requests this one
	// belongs to (a module's planned sub-requests): its hold is drawn from
	// it first (billing.Ledger.Hold).
	Envelope *billing.Envelope
	// EnvelopeOnly: the run's hold must come from Envelope alone
	// (billing.Request.EnvelopeOnly): a plugin's sub-request, held in its
	// request's allowance before the plugin ran.
	EnvelopeOnly bool
	// Fees is held with the tokens for fees the run may add before it
	// settles (billing.Request.Fees); counted in Budget's worst case.
	Fees billing.Nanos
	// Budget, when > 0, is the most this run may hold: its worst case at
	// the first endpoint must fit, else Run returns ErrOverBudget before
	// holding or sending anything; a fallback whose worst case (with the
	// failed attempts) does not fit is not made (the run fails with the
	// last attempt's error). The server-tool loop sets it from max_cost.
	Budget billing.Nanos
	// Native, when set, is the request as the client sent it in another
	// API (a front door's): an attempt on an endpoint whose adapter
	// speaks that API (its manifest's capability) sends it instead of
	// Body, and its answer reaches the client as the provider gave it
	// (Result.Native). Other attempts send Body, as always.
	Native *Native
}

// Native is a front-door request to send through unchanged to providers
// that speak its API.
type Native struct {
	// API is the front door's API ("messages"); Capability is the adapter
	// capability that takes it (manifest.CapabilityMessagesNative).
	API, Capability string
	// Body is the client's request without the gateway's own fields; the
	// adapter sets its model.
	Body []byte
	// Beta is the client's anthropic-beta header, forwarded.
	Beta string
	// PromptBound and Images bound Body's prompt for the hold (the
	// translated Job.PromptBound does not: the translation drops parts
	// the native body sends); the hold takes the larger of the two.
	PromptBound, Images int64
}

// ErrOverBudget is Run's error when a job's worst case does not fit its
// Budget: nothing was held, attempted or charged.
var ErrOverBudget = apierr.New(http.StatusPaymentRequired, "this turn's worst case does not fit the request's remaining budget")

func (j *Job) pluginTime() time.Duration {
	if j.PluginTime == nil {
		return 0
	}
	return j.PluginTime()
}

// Result is what a run made of a request: the plan, how many attempts
// were made, and — when one succeeded — its call, with the reservation the
// caller settles (Settle, Fail, Cancel).
type Result struct {
	Plan     *route.Plan
	Attempts int
	// Call is the attempt that succeeded (nil when none did). For a stream
	// its body is open and the caller closes it; otherwise it is closed
	// and Body holds the translated result.
	Call *Call
	Body []byte
	// NativeBody is the provider's own answer to a native attempt (Job.Native),
	// as it sent it, beside Body (its chat translation, which billing reads);
	// nil otherwise. A native stream is told by Call.Native().
	NativeBody []byte
	// ToolCalls judges the served answer's tool calls (host/toolcheck),
	// reported with its success for the :exacto variant; set by the caller
	// before Succeeded.
	ToolCalls route.ToolCallVerdict

	d      *Dispatcher
	job    *Job
	res    *billing.Reservation
	obs    *telemetry.Request
	prompt *billing.Usage // the prompt counted once, for usage the upstream did not report
}

// Run plans job, holds its cost and makes attempts until one succeeds, one
// fails in a way another endpoint cannot fix, or fallbacks are off. On error
// the result is nil when nothing was attempted (no endpoint, no funds);
// otherwise it describes the failed attempts and is already settled.
func (d *Dispatcher) Run(ctx context.Context, job *Job) (*Result, *apierr.Error) {
	obs := telemetry.From(ctx) // metrics and trace spans of this request; nil-safe
	_, endSpan := obs.Span(ctx, "route")
	plan, err := d.Router.Plan(job.Route)
	endSpan(err)
	if err != nil {
		return nil, err
	}
	breq := holdRequest(job, plan.Attempts[0])
	if job.Budget > 0 && billing.WorstCase(breq) > job.Budget {
		return nil, ErrOverBudget
	}
	_, endSpan = obs.Span(ctx, "billing.reserve")
	res, err := d.Ledger.Reserve(job.Key, breq)
	endSpan(err)
	if err != nil {
		return nil, err
	}
	r := &Result{Plan: plan, d: d, job: job, res: res, obs: obs}
	var last *apierr.Error
	for i, ep := range plan.Attempts {
		if i > 0 {
			if job.Budget > 0 && res.FailedCost()+billing.WorstCase(breq.At(target(ep, job.MaxOutput))) > job.Budget {
				break // last: the failure so far
			}
			// Each endpoint bounds its own worst case.
			if err := res.Retarget(target(ep, job.MaxOutput)); err != nil {
				last = err
				break
			}
			// The attempt before this one is a failed attempt of the
			// record. It is added only now that another follows: the
			// settlement counts the run's last attempt itself, failed or
			// not, so adding it on failure counted a failed run's last
			// attempt twice.
			res.AddFailedAttempt(billing.Usage{})
		}
		r.Attempts++
		actx, at := obs.Attempt(ctx, ep, r.Attempts)
		call, err := d.attempt(actx, job, ep, plan.Dropped[ep], r)
		if err == nil {
			at.End(nil, false, job.Stream)
			r.Call = call
			if job.Route.SessionID != "" {
				d.Router.Stick(job.Route.SessionID, ep)
			}
			return r, nil
		}
		if hangup.Gone(ctx) {
			// The client left: no fallback, and no mark against the
			// endpoint's health. The provider may bill a request it
			// received; we charge the prompt, the part of its bill we can
			// know (docs/billing.md).
			var u billing.Usage
			if call.sent {
				u = r.promptUsage(ep)
			}
			at.End(err, false, false)
			g, _ := res.Settle(billing.Outcome{Status: billing.StatusCancelled, Usage: u, Error: err.Message})
			obs.Settled(g)
			return r, err
		}
		at.End(err, err.Retryable && job.Route.Prefs.AllowFallbacks() && i+1 < len(plan.Attempts), false)
		d.Router.Report(ep, route.Outcome{Status: err.Status, TTFT: time.Since(call.startedOr()),
			Duration: time.Since(call.startedOr()), RetryAfter: err.RetryAfter})
		last = err
		if !err.Retryable || !job.Route.Prefs.AllowFallbacks() {
			break
		}
	}
	if last == nil {
		last = apierr.New(http.StatusServiceUnavailable, "no provider is available for %s", job.Route.Models[0])
	}
	g, _ := res.Settle(billing.Outcome{Status: billing.StatusError, Error: last.Message, PluginTime: job.pluginTime()})
	obs.Settled(g)
	return r, last
}

// attempt sends job to ep and, for a non-streaming job, reads the result.
// On failure the returned call (possibly nil) only dates the attempt.
func (d *Dispatcher) attempt(ctx context.Context, job *Job, ep *catalog.Endpoint, drop []string, r *Result) (*Call, *apierr.Error) {
	hook := abi.HookChatRequest
	if job.Route.Kind == catalog.KindEmbedding {
		hook = abi.HookEmbedRequest
	}
	started := time.Now()
	actx := wire.AdapterCtx{Model: ep.UpstreamModel, Provider: ep.Provider.Slug, Stream: job.Stream, Drop: drop,
		GenerationID: job.GenID, CatalogModel: ep.Model.ID, API: ep.Provider.API}
	body := job.bodyFor(ep, drop, d.Modules)
	if hook == abi.HookEmbedRequest && job.ReadPart != nil {
		if parts, sizes := d.embedParts(ep, body); parts != nil {
			call, joined, err := d.attemptParts(ctx, job, ep, actx, parts, sizes)
			r.Body = joined
			return call, err
		}
	}
	call, err := d.send(ctx, ep, hook, body, actx, job.EchoSent, job.nativeFor(ep))
	if err != nil {
		if call == nil {
			call = &Call{Started: started}
		}
		return call, err
	}
	if job.Stream {
		call.HeadersReceived()
		return call, nil
	}
	defer call.Close()
	if r.Body, err = job.Read(ctx, call); err != nil {
		return call, err
	}
	r.NativeBody = call.nativeBody
	return call, nil
}

func (u *Call) startedOr() time.Time {
	if u == nil {
		return time.Now()
	}
	return u.Started
}

// target is what a hold on ep must cover for a request whose own output
// bound is maxOut (0: none): the request's bound (clamped to the endpoint's
// maximum output, as its body is), else the endpoint's maximum output,
// else — no bound from either — its context.
// holdRequest is what Run holds for job when first is the endpoint tried
// first.
func holdRequest(job *Job, first *catalog.Endpoint) billing.Request {
	t := target(first, job.MaxOutput)
	prompt, images := job.PromptBound, job.Images
	if n := job.Native; n != nil {
		// Any attempt may be native: the hold covers either body.
		prompt, images = max(prompt, n.PromptBound), max(images, n.Images)
	}
	return billing.Request{
		ID: job.GenID, Model: first.Model.ID, Provider: t.Provider, Price: t.Price,
		PromptTokens: prompt, Images: images, MaxOutputTokens: t.MaxOutputTokens,
		ContextLength: t.ContextLength, Streamed: job.Stream, Choices: int64(max(job.Choices, 1)),
		Envelope: job.Envelope, EnvelopeOnly: job.EnvelopeOnly, Fees: job.Fees,
		Insurable: first.Model.Kind == catalog.KindChat, Attribution: job.Attribution,
	}
}

// WorstCase is what Run would hold for job (its fees included) at the
// endpoint routing tries first, for a caller that must hold it before the
// job exists in full: a request's plugin fees are held with it before
// its plugins run (host/flow/pluginfees.go).
func (d *Dispatcher) WorstCase(job *Job) (billing.Nanos, *apierr.Error) {
	plan, err := d.Router.Plan(job.Route)
	if err != nil {
		return 0, err
	}
	return billing.WorstCase(holdRequest(job, plan.Attempts[0])), nil
}

func target(ep *catalog.Endpoint, maxOut int) billing.Target {
	if clamped, ok := route.ClampedOutput(ep, maxOut); ok {
		maxOut = clamped
	}
	out := int64(maxOut)
	if out == 0 {
		out = int64(ep.MaxOutput)
	}
	if out == 0 && ep.Model.Kind == catalog.KindChat {
		out = int64(ep.ContextLength)
	}
	return billing.Target{Provider: ep.Provider.Slug, Price: ep.Price, MaxOutputTokens: out, ContextLength: int64(ep.ContextLength)}
}

func (d *Dispatcher) report(ep *catalog.Endpoint, ok bool, status int, d0 time.Duration, outTokens int) {
	d.Router.Report(ep, route.Outcome{Success: ok, Status: status, TTFT: d0, Duration: d0, OutputTokens: outTokens})
}

// Endpoint is the endpoint that served the request (nil when none did).
func (r *Result) Endpoint() *catalog.Endpoint {
	if r.Call == nil {
		return nil
	}
	return r.Call.Endpoint
}

// Identity is what the client sees as the generation's id, model and
// provider.
func (r *Result) Identity() wire.Identity {
	ep := r.Endpoint()
	return wire.Identity{GenID: r.job.GenID, Model: ep.Model.ID, Provider: ep.Provider.Slug}
}

// Metadata is service_metadata for this run. It notes when the serving
// endpoint got a smaller max output than the request asked for.
func (r *Result) Metadata(requested string) *wire.Metadata {
	m := r.Plan.Metadata(requested, r.Endpoint(), r.Attempts)
	if ep := r.Endpoint(); ep != nil {
		if limit, ok := route.ClampedOutput(ep, r.job.MaxOutput); ok {
			m.MaxOutputTokens = &wire.Clamp{Requested: r.job.MaxOutput, ClampedTo: limit}
		}
	}
	return m
}

// Settle charges the final usage and writes usage (with its cost) into
// body. A charge that cannot be made durable fails the request: a result
// whose cost the ledger could lose is not handed out.
func (r *Result) Settle(body []byte, u billing.Usage, finish string) ([]byte, *apierr.Error) {
	out, _, err := r.SettleRecord(body, u, finish)
	return out, err
}

// SettleRecord is Settle that also returns the generation record, for a
// caller that sums several runs (the server-tool loop's turns).
func (r *Result) SettleRecord(body []byte, u billing.Usage, finish string) ([]byte, *billing.Generation, *apierr.Error) {
	end := r.obs.Phase("billing.settle")
	g, err := r.res.Settle(billing.Outcome{Usage: u, FinishReason: finish, PluginTime: r.job.pluginTime()})
	r.obs.Settled(g)
	end(apierr.From(err))
	if err != nil {
		return nil, nil, apierr.Wrap(http.StatusServiceUnavailable, err, "the charge for this request could not be recorded; nothing was billed, try again")
	}
	if out, err := wire.WriteUsage(body, g); err == nil {
		return out, g, nil
	}
	return body, g, nil
}

// Record is the generation a settled run left (a failed run is settled by
// Run), or nil when r is nil or not settled yet.
func (r *Result) Record() *billing.Generation {
	if r == nil || r.res == nil || !r.res.Settled() {
		return nil
	}
	g, _ := r.res.Settle(billing.Outcome{}) // settled: returns the record, changes nothing
	return g
}

// AddFees adds server-tool fees to this run's charge (billing.Reservation.AddFees).
func (r *Result) AddFees(fees ...billing.Fee) { r.res.AddFees(fees...) }

// HoldFees grows this run's hold before tools run (billing.Reservation.HoldFees).
func (r *Result) HoldFees(amount billing.Nanos) *apierr.Error { return r.res.HoldFees(amount) }

// DrawFees moves up to amount from e, held for fees before the code that
// reports them ran, into this run's fee hold (billing.Reservation.DrawFees).
func (r *Result) DrawFees(e *billing.Envelope, amount billing.Nanos) billing.Nanos {
	return r.res.DrawFees(e, amount)
}

// FeesHeld is what this run's hold keeps for fees not yet reported
// (billing.Reservation.FeesHeld).
func (r *Result) FeesHeld() billing.Nanos { return r.res.FeesHeld() }

// Note records an anomaly on this run's generation (billing.Reservation.Note).
func (r *Result) Note(anomaly string) { r.res.Note(anomaly) }

// Fail settles a request that failed after its attempt succeeded (e.g. a
// stream broke): u is what the client received and pays for.
func (r *Result) Fail(e *apierr.Error, u billing.Usage) {
	g, _ := r.res.Settle(billing.Outcome{Status: billing.StatusError, Error: e.Message, Usage: u, PluginTime: r.job.pluginTime()})
	r.obs.Settled(g)
	r.d.report(r.Endpoint(), false, e.Status, time.Since(r.Call.Started), int(u.CompletionTokens))
}

// Cancel settles a request the client abandoned, unless it is settled
// already: u is what was generated until then.
func (r *Result) Cancel(u billing.Usage) {
	if !r.res.Settled() {
		g, _ := r.res.Settle(billing.Outcome{Status: billing.StatusCancelled, Usage: u, PluginTime: r.job.pluginTime()})
		r.obs.Settled(g)
	}
}

// Succeeded reports the served attempt to the router's health statistics;
// a ttft of 0 (no first token seen, or not streamed) counts the whole call.
func (r *Result) Succeeded(ttft time.Duration, outTokens int) {
	d := time.Since(r.Call.Started)
	if ttft == 0 {
		ttft = d
	}
	r.d.Router.Report(r.Endpoint(), route.Outcome{Success: true, Status: http.StatusOK, TTFT: ttft,
		Duration: d, OutputTokens: outTokens, ToolCalls: r.ToolCalls})
}

// Settled reports whether the reservation has been settled.
func (r *Result) Settled() bool { return r.res.Settled() }

// FirstToken records the time to first token for the generation record.
func (r *Result) FirstToken() { r.res.FirstToken(); r.obs.FirstToken() }

// Checkpoint records the usage so far of a long stream: what crash
// recovery charges at least.
func (r *Result) Checkpoint(u billing.Usage) { r.res.Checkpoint(u) }
