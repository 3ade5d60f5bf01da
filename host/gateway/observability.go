package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/switchyard/switchyard/host/admin"
	"github.com/switchyard/switchyard/host/metrics"
	"github.com/switchyard/switchyard/host/telemetry"
)

// startTelemetry sets up what the operator sees (docs/observability.md):
// Prometheus metrics on their own listener (config metrics.listen),
// OpenTelemetry traces when the OTEL_* environment asks for them, and the
// request log lines.
func (g *Gateway) startTelemetry(ctx context.Context) (*telemetry.Telemetry, error) {
	cfg := g.Config
	o := telemetry.Options{LocalsKey: admin.LocalsKey, LogContent: g.Keys.LogContent}
	if cfg.Log.RequestLines() {
		o.Log = g.log
	}
	if !cfg.Metrics.MetricsOff() {
		ln, err := net.Listen("tcp", cfg.Metrics.Address())
		switch {
		case err != nil && cfg.Metrics.Listen != "":
			return nil, fmt.Errorf("metrics.listen: %w", err)
		case err != nil:
			// The default address is a convenience, not a promise: a second
			// gateway on the host runs without metrics rather than not at all.
			g.log.Warn("metrics are off: the default metrics address is taken; set metrics.listen", "addr", cfg.Metrics.Address(), "err", err)
		default:
			m := metrics.New()
			m.Gauges(g.Ledger.WriterQueue, g.Modules.PoolSizes)
			m.ModuleResets(g.Modules.InstanceResets)
			m.ModuleCode(g.Modules.Compiled, g.Modules.Parks)
			if g.kv != nil {
				m.KVEvictions(g.kv.Evictions)
			}
			if g.vectors != nil {
				m.VectorIndex(g.vectors.Len, g.vectors.Evictions)
			}
			if g.modMetrics != nil {
				m.Registry.MustRegister(g.modMetrics)
			}
			g.Ledger.ObserveCommits(m.LedgerCommit)
			g.redisMetrics(m.Registry)
			g.pruneMetrics(m.Registry)
			mux := http.NewServeMux()
			mux.Handle("GET /metrics", m.Handler())
			if cfg.Metrics.Pprof {
				mux.HandleFunc("/debug/pprof/", pprof.Index)
				mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
				mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
				mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
				mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
			}
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					g.log.Error("metrics listener stopped", "err", err)
				}
			}()
			g.closers = append(g.closers, func() { _ = srv.Close() })
			g.MetricsAddr = ln.Addr().String()
			o.Metrics = m
			g.log.Info("metrics listening", "addr", "http://"+g.MetricsAddr+"/metrics")
		}
	}
	tracer, shutdown, err := telemetry.Tracing(ctx)
	if err != nil {
		return nil, err
	}
	if tracer != nil {
		o.Tracer = tracer
		g.closers = append(g.closers, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := shutdown(sctx); err != nil {
				g.log.Warn("tracing: spans lost at shutdown", "err", err)
			}
		})
		g.log.Info("tracing on: exporting spans over OTLP/HTTP")
	}
	return telemetry.New(o), nil
}
