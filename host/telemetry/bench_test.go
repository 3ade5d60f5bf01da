package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/metrics"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/valyala/fasthttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// discard is a span exporter that drops what it is given: the benchmark
// measures the request path, not an exporter's network.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkRequestTelemetry is what telemetry adds to one chat request, in
// process: the middleware and every report the request path makes (a
// validation span, a plugin call, routing, the hold, an attempt, the
// settlement), through a fiber app whose handler does nothing else. "off"
// is the app without telemetry; the others' difference to it is the cost.
func BenchmarkRequestTelemetry(b *testing.B) {
	ep := &catalog.Endpoint{Model: &catalog.Model{ID: "test/chat"}, Provider: &catalog.Provider{Slug: "alpha"}, UpstreamModel: "echo"}
	gen := &billing.Generation{ID: "gen-1", Model: "test/chat", Provider: "alpha", Status: billing.StatusSuccess,
		Usage: billing.Usage{PromptTokens: 12, CompletionTokens: 40}, Charged: 1234}
	handler := func(c *fiber.Ctx) error {
		ctx := c.UserContext()
		obs := telemetry.From(ctx)
		obs.Phase("validate")(nil)
		_, done := obs.Plugin(ctx, "testplugin", "pre_request")
		done(nil)
		_, end := obs.Span(ctx, "route")
		end(nil)
		_, end = obs.Span(ctx, "billing.reserve")
		end(nil)
		actx, at := obs.Attempt(ctx, ep, 1)
		telemetry.From(actx).Inject(actx, http.Header{})
		at.End(nil, false, false)
		settle := obs.Phase("billing.settle")
		obs.Settled(gen)
		settle(nil)
		return c.SendString("{}")
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	for _, bc := range []struct {
		name string
		tel  *telemetry.Telemetry
	}{
		{"off", nil},
		{"log", telemetry.New(telemetry.Options{Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})},
		// The gateway's handler: the same line, written by hand.
		{"log-by-hand", telemetry.New(telemetry.Options{Log: slog.New(telemetry.NewLogHandler(io.Discard, "json", slog.LevelInfo))})},
		{"metrics", telemetry.New(telemetry.Options{Metrics: metrics.New()})},
		{"tracing", telemetry.New(telemetry.Options{Tracer: tp.Tracer("bench")})},
		{"metrics+tracing", telemetry.New(telemetry.Options{Metrics: metrics.New(), Tracer: tp.Tracer("bench")})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			app := fiber.New(fiber.Config{DisableStartupMessage: true})
			app.Use(bc.tel.Middleware)
			app.Post("/api/v1/chat/completions", handler)
			h := app.Handler()
			var rc fasthttp.RequestCtx
			b.ReportAllocs()
			for b.Loop() {
				rc.Request.Reset()
				rc.Response.Reset()
				rc.Request.Header.SetMethod(http.MethodPost)
				rc.Request.SetRequestURI("/api/v1/chat/completions")
				h(&rc)
				if rc.Response.StatusCode() != 200 {
					b.Fatal(rc.Response.StatusCode())
				}
			}
		})
	}
}

// BenchmarkChatOverLoopback is whole chat requests over loopback to a test
// gateway and its fake upstream, with metrics and tracing off and on (the
// spans exported over OTLP/HTTP to a receiver in this process): the cost
// an operator pays per request, among everything else a request costs.
func BenchmarkChatOverLoopback(b *testing.B) {
	otlp := httptest.NewServer(&receiver{})
	defer otlp.Close()
	for _, bc := range []struct {
		name             string
		metrics, tracing bool
	}{{"off", false, false}, {"metrics", true, false}, {"tracing", false, true}, {"metrics+tracing", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.tracing {
				b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.URL)
			}
			g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, Mutate: func(c *config.Config) {
				if bc.metrics {
					c.Metrics.Listen = "127.0.0.1:0"
				}
			}})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			body := hello("")
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				resp, _, err := g.Request(http.MethodPost, "/chat/completions", body)
				if err != nil || resp.StatusCode != 200 {
					b.Fatal(err, resp.StatusCode)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}
