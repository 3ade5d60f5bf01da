// Package telemetry follows each API request from its arrival to its last
// byte and reports it three ways: Prometheus metrics (host/metrics), an
// OpenTelemetry trace (one server span with children for validation, each
// plugin call, routing, each upstream attempt and billing), and one
// structured log line. The server's middleware starts a Request and puts
// it in the request's context; the dispatcher and the pipeline report to
// it through that context (From), and every method is a no-op on a nil
// Request, so code paths without telemetry need no checks.
package telemetry

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/metrics"
	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Options are what a Telemetry reports to; every part is optional.
type Options struct {
	Metrics *metrics.Metrics // nil: no metrics
	Tracer  trace.Tracer     // nil: no traces
	// Log receives one line per request (level Info, Warn for 5xx); nil:
	// none.
	Log *slog.Logger
	// LogContent says whether an account's request lines carry the prompt
	// and completion text (an account setting the operator turns on);
	// nil: never.
	LogContent func(account string) bool
	// LocalsKey is the fiber locals name of the caller's *keys.Key.
	LocalsKey string
}

// Telemetry is shared by all requests.
type Telemetry struct {
	o    Options
	prop propagation.TextMapPropagator
	// localsKey is o.LocalsKey as the interface fiber's Locals takes:
	// converting the string field there cost an allocation a request.
	localsKey any
}

// New returns a Telemetry reporting to o.
func New(o Options) *Telemetry {
	return &Telemetry{o: o, localsKey: o.LocalsKey,
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
}

// Metrics is the metrics Telemetry reports to (nil: none).
func (t *Telemetry) Metrics() *metrics.Metrics {
	if t == nil {
		return nil
	}
	return t.o.Metrics
}

type ctxKey struct{}

// Request is one API request's telemetry.
type Request struct {
	t     *Telemetry
	start time.Time
	span  trace.Span // nil when tracing is off

	mu          sync.Mutex
	model       string // of the endpoint that served (or was tried last)
	provider    string
	attempts    int
	upstream    time.Duration // waited on upstreams, finished attempts
	openAttempt *Attempt      // the attempt of a stream being relayed
	gen         *billing.Generation
	completion  string
	ttft        time.Duration // to the first token of a stream
	streaming   bool
	status      int
	route       string
	key         *keys.Key
	prompt      []byte
	finished    atomic.Bool
}

// From is the Request in ctx, or nil.
func From(ctx context.Context) *Request {
	r, _ := ctx.Value(ctxKey{}).(*Request)
	return r
}

// Middleware starts a Request for every /api/ call, answers the handler's
// error itself (so the status is known), and finishes the Request when
// the handler returns — or, for a stream, when the stream ends (EndStream).
func (t *Telemetry) Middleware(c *fiber.Ctx) error {
	if t == nil || !strings.HasPrefix(c.Path(), "/api/") {
		return c.Next()
	}
	r := &Request{t: t, start: time.Now()}
	ctx := context.Background()
	if t.o.Tracer != nil {
		ctx = t.prop.Extract(ctx, headerCarrier{&c.Request().Header})
		// fiber's strings alias the connection's buffer, which the next
		// request on the connection overwrites while the exporter may still
		// be encoding this span: the span keeps copies.
		method, path := strings.Clone(c.Method()), strings.Clone(c.Path())
		ctx, r.span = t.o.Tracer.Start(ctx, method+" "+path, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithTimestamp(r.start), trace.WithAttributes(
				attribute.String("http.request.method", method), attribute.String("url.path", path)))
	}
	ctx = context.WithValue(ctx, ctxKey{}, r)
	c.SetUserContext(ctx)
	if err := c.Next(); err != nil {
		if herr := c.App().Config().ErrorHandler(c, err); herr != nil {
			_ = c.SendStatus(http.StatusInternalServerError)
		}
	}
	r.mu.Lock()
	r.route = c.Route().Path
	r.key, _ = c.Locals(t.localsKey).(*keys.Key)
	r.status = c.Response().StatusCode()
	// Content is the prompt and answer of model calls only: a module
	// upload or a key's creation is not the tenant's conversation.
	if r.key != nil && t.o.LogContent != nil && t.o.Log != nil && modelRoute(r.route) && t.o.LogContent(r.key.AccountID) {
		r.prompt = append([]byte(nil), c.Body()...)
		if !c.Response().IsBodyStream() {
			r.completion = completionText(c.Response().Body())
		}
	}
	r.streaming = c.Response().IsBodyStream()
	r.mu.Unlock()
	if r.streaming {
		t.o.Metrics.StreamOpened()
		return nil
	}
	r.finish()
	return nil
}

// Cache reports what the response cache did for the request (metrics.Cache).
func (r *Request) Cache(result string, storedBytes int) {
	if r == nil {
		return
	}
	r.t.o.Metrics.Cache(result, storedBytes)
}

// EndStream finishes a streamed request; completion is its text, logged
// only when the account turned content logging on.
func (r *Request) EndStream(completion string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.prompt != nil {
		r.completion = completion
	}
	r.mu.Unlock()
	r.t.o.Metrics.StreamClosed()
	r.finish()
}

// finish reports the request, once.
func (r *Request) finish() {
	if r.finished.Swap(true) {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	d := now.Sub(r.start)
	upstream := r.upstream
	if a := r.openAttempt; a != nil {
		upstream += now.Sub(a.start)
		var err *apierr.Error
		if r.gen != nil && r.gen.Status == billing.StatusError {
			// The stream broke after its attempt had succeeded.
			err = apierr.New(http.StatusBadGateway, "%s", r.gen.Error)
			r.t.o.Metrics.UpstreamError(a.ep.Provider.Slug, err.Status, false)
		}
		a.endSpan(err, now)
		r.openAttempt = nil
	}
	m := &metrics.Request{Route: r.route, Model: r.model, Provider: r.provider, Status: r.status, Duration: d,
		Overhead: d - upstream, Streamed: r.streaming}
	switch {
	case r.attempts == 0 && r.status == http.StatusTooManyRequests:
		m.RefusedBy = "rate_limit"
	case r.attempts == 0 && r.status == http.StatusServiceUnavailable && r.key == nil:
		// Load shedding answers before authentication; every other 503
		// comes after it.
		m.RefusedBy = "overload"
	}
	if g := r.gen; g != nil {
		m.Settled, m.Model, m.Provider = true, g.Model, g.Provider
		m.InputTokens, m.OutputTokens = g.Usage.PromptTokens, g.Usage.CompletionTokens
		m.CostUSD = float64(g.Charged) / float64(billing.NanosPerUSD)
	}
	m.TTFT = r.ttft
	r.t.o.Metrics.Observe(m)
	if r.span != nil {
		r.endSpan(m, now)
	}
	if r.t.o.Log != nil {
		r.logLine(m)
	}
}

func (r *Request) endSpan(m *metrics.Request, now time.Time) {
	attrs := []attribute.KeyValue{attribute.String("http.route", m.Route), attribute.Int("http.response.status_code", m.Status),
		attribute.Int("switchyard.upstream_attempts", r.attempts)}
	if m.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.operation.name", operation(m.Route)),
			attribute.String("gen_ai.request.model", m.Model), attribute.String("gen_ai.response.model", m.Model),
			attribute.String("gen_ai.provider.name", m.Provider))
	}
	if g := r.gen; g != nil {
		attrs = append(attrs, attribute.String("gen_ai.response.id", g.ID),
			attribute.Int64("gen_ai.usage.input_tokens", g.Usage.PromptTokens),
			attribute.Int64("gen_ai.usage.output_tokens", g.Usage.CompletionTokens),
			attribute.String("switchyard.cost_usd", g.Charged.USD()), attribute.String("switchyard.generation.status", g.Status))
		if g.FinishReason != "" {
			attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{g.FinishReason}))
		}
	}
	if r.key != nil {
		attrs = append(attrs, attribute.String("switchyard.account", r.key.AccountID), attribute.String("switchyard.key.name", r.key.Name))
	}
	r.span.SetAttributes(attrs...)
	if m.Status >= 500 {
		r.span.SetStatus(codes.Error, http.StatusText(m.Status))
	}
	r.span.End(trace.WithTimestamp(now))
}

func operation(route string) string {
	if strings.HasSuffix(route, "/embeddings") {
		return "embeddings"
	}
	return "chat"
}

func (r *Request) logLine(m *metrics.Request) {
	level := slog.LevelInfo
	if m.Status >= 500 {
		level = slog.LevelWarn
	}
	h := r.t.o.Log.Handler()
	if !h.Enabled(context.Background(), level) {
		return
	}
	// Gathered on the stack; the record is built here rather than by
	// Logger.LogAttrs, which calls runtime.Callers for a source position
	// (≈1 µs a request) that only a handler with AddSource prints, and the
	// gateway's has none.
	var arr [20]slog.Attr
	attrs := append(arr[:0], slog.String("route", m.Route), slog.Int("status", m.Status),
		slog.Int64("latency_ms", m.Duration.Milliseconds()))
	if r.key != nil {
		attrs = append(attrs, slog.String("account", r.key.AccountID), slog.String("key_name", r.key.Name))
	}
	if g := r.gen; g != nil {
		attrs = append(attrs, slog.String("generation_id", g.ID), slog.String("model", g.Model), slog.String("provider", g.Provider),
			slog.String("generation_status", g.Status), slog.Bool("streamed", g.Streamed),
			slog.Int64("prompt_tokens", g.Usage.PromptTokens), slog.Int64("completion_tokens", g.Usage.CompletionTokens),
			slog.String("cost", g.Charged.USD()), slog.Int("attempts", g.Attempts))
		if g.TTFTMs > 0 {
			attrs = append(attrs, slog.Int64("ttft_ms", g.TTFTMs))
		}
		if g.Error != "" {
			attrs = append(attrs, slog.String("error", g.Error))
		}
	} else if m.Model != "" {
		attrs = append(attrs, slog.String("model", m.Model), slog.String("provider", m.Provider))
	}
	if r.span != nil {
		attrs = append(attrs, slog.String("trace_id", r.span.SpanContext().TraceID().String()))
	}
	if r.prompt != nil {
		attrs = append(attrs, slog.String("prompt", string(r.prompt)), slog.String("completion", r.completion))
	}
	now := time.Now()
	if lh, ok := h.(*LogHandler); ok && lh.writeLine(now, level, "request", attrs) {
		return
	}
	rec := slog.NewRecord(now, level, "request", 0)
	rec.AddAttrs(attrs...)
	_ = h.Handle(context.Background(), rec)
}

// completionText is the text of a chat completion's choices ("" for
// anything else).
func completionText(body []byte) string {
	var b strings.Builder
	for _, c := range gjson.GetBytes(body, "choices.#.message.content").Array() {
		b.WriteString(c.String())
	}
	return b.String()
}

// Span starts a child span named name (no-op without tracing); end it
// with the error the phase ended with, or nil.
func (r *Request) Span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(*apierr.Error)) {
	if r == nil || r.span == nil {
		return ctx, func(*apierr.Error) {}
	}
	ctx, sp := r.t.o.Tracer.Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx, func(err *apierr.Error) {
		if err != nil {
			sp.SetStatus(codes.Error, err.Message)
			sp.SetAttributes(attribute.Int("http.response.status_code", err.Status))
		}
		sp.End()
	}
}

// Attempt is one upstream attempt.
type Attempt struct {
	r     *Request
	ep    *catalog.Endpoint
	start time.Time
	span  trace.Span
}

// Attempt starts attempt n (from 1) at ep; the returned context carries
// its span, which Inject passes upstream.
func (r *Request) Attempt(ctx context.Context, ep *catalog.Endpoint, n int) (context.Context, *Attempt) {
	if r == nil {
		return ctx, nil
	}
	a := &Attempt{r: r, ep: ep, start: time.Now()}
	r.mu.Lock()
	r.attempts++
	r.model, r.provider = ep.Model.ID, ep.Provider.Slug
	r.mu.Unlock()
	if r.span != nil {
		ctx, a.span = r.t.o.Tracer.Start(ctx, "upstream "+ep.Provider.Slug, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("gen_ai.provider.name", ep.Provider.Slug),
				attribute.String("gen_ai.request.model", ep.Model.ID), attribute.String("switchyard.upstream_model", ep.UpstreamModel),
				attribute.Int("switchyard.attempt", n)))
	}
	return ctx, a
}

// End ends the attempt: err is its failure (nil: it succeeded), fallback
// says another endpoint is tried next, open that the attempt goes on (a
// stream being relayed) until the request finishes.
func (a *Attempt) End(err *apierr.Error, fallback, open bool) {
	if a == nil {
		return
	}
	r := a.r
	if err != nil {
		r.t.o.Metrics.UpstreamError(a.ep.Provider.Slug, err.Status, fallback)
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if open && err == nil {
		r.openAttempt = a
		return
	}
	r.upstream += now.Sub(a.start)
	a.endSpan(err, now)
}

func (a *Attempt) endSpan(err *apierr.Error, now time.Time) {
	if a.span == nil {
		return
	}
	if err != nil {
		a.span.SetStatus(codes.Error, err.Message)
		a.span.SetAttributes(attribute.Int("http.response.status_code", err.Status), attribute.String("error.type", http.StatusText(err.Status)))
	}
	a.span.End(trace.WithTimestamp(now))
}

// Inject writes the W3C trace context of ctx (an attempt's) into the
// headers of the upstream request.
func (r *Request) Inject(ctx context.Context, h http.Header) {
	if r == nil || r.span == nil {
		return
	}
	r.t.prop.Inject(ctx, propagation.HeaderCarrier(h))
}

// Settled records the request's generation record.
func (r *Request) Settled(g *billing.Generation) {
	if r == nil || g == nil {
		return
	}
	r.mu.Lock()
	r.gen = g
	r.mu.Unlock()
}

// Plugin starts a plugin hook call; call the returned func when it ends.
// A span is made for each call except a stream's per-chunk hooks, which
// would make one per chunk: those are counted in the metrics only.
func (r *Request) Plugin(ctx context.Context, module, hook string) (context.Context, func(err error)) {
	if r == nil {
		return ctx, func(error) {}
	}
	start := time.Now()
	var sp trace.Span
	if r.span != nil && hook != "post_chunk" {
		ctx, sp = r.t.o.Tracer.Start(ctx, "plugin "+module+" "+hook, trace.WithAttributes(
			attribute.String("switchyard.module", module), attribute.String("switchyard.hook", hook)))
	}
	return ctx, func(err error) {
		r.t.o.Metrics.PluginCall(module, hook, time.Since(start), err != nil)
		if sp != nil {
			if err != nil {
				sp.SetStatus(codes.Error, err.Error())
			}
			sp.End()
		}
	}
}

// headerCarrier reads the caller's trace context from fasthttp headers.
type headerCarrier struct {
	h interface {
		Peek(string) []byte
		VisitAll(func(k, v []byte))
	}
}

func (c headerCarrier) Get(key string) string { return string(c.h.Peek(key)) }
func (c headerCarrier) Set(string, string)    {}
func (c headerCarrier) Keys() []string {
	var out []string
	c.h.VisitAll(func(k, _ []byte) { out = append(out, string(k)) })
	return out
}

// Phase starts a child span of the request's own span (for work that has
// no context of its own, like settlement at a stream's end); no-op without
// tracing.
func (r *Request) Phase(name string) func(*apierr.Error) {
	if r == nil || r.span == nil {
		return func(*apierr.Error) {}
	}
	_, end := r.Span(trace.ContextWithSpan(context.Background(), r.span), name)
	return end
}

// FirstToken marks a stream's first content token.
func (r *Request) FirstToken() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.ttft == 0 {
		r.ttft = max(time.Since(r.start), time.Nanosecond)
	}
	r.mu.Unlock()
}

// modelRoute reports whether route calls a model.
func modelRoute(route string) bool {
	return strings.HasSuffix(route, "/chat/completions") || strings.HasSuffix(route, "/embeddings")
}
