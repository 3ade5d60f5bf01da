// Package metrics is the gateway's Prometheus instrumentation: the metric
// families (named after the OpenTelemetry GenAI semantic conventions where
// one exists, docs/observability.md), typed observation methods for the
// request path, and the /metrics handler on its own listener.
//
// The request path observes through pre-resolved label children: the
// children of one (route, model, provider, status) or (model, provider) are
// looked up once and kept in a sync.Map, so an observation is one map read
// and a few atomic adds instead of a label hash per metric.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Buckets of the latency histograms, seconds: from a cached answer to a
// long generation.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	// OTel's advice for gen_ai.server.time_per_output_token.
	perTokenBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
	// OTel's advice for gen_ai.client.token.usage.
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	overheadBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}
	pluginBuckets   = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2}
	commitBuckets   = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5}
)

// Metrics holds the families; safe for concurrent use. A nil *Metrics
// observes nothing.
type Metrics struct {
	Registry *prometheus.Registry

	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	ttft          *prometheus.HistogramVec
	perToken      *prometheus.HistogramVec
	overhead      *prometheus.HistogramVec
	tokens        *prometheus.HistogramVec
	cost          *prometheus.CounterVec
	upstreamErr   *prometheus.CounterVec
	fallbacks     *prometheus.CounterVec
	refusals      *prometheus.CounterVec
	pluginCalls   *prometheus.CounterVec
	pluginTime    *prometheus.HistogramVec
	openStreams   prometheus.Gauge
	commitTime    prometheus.Histogram
	commitOps     prometheus.Histogram
	cacheLookups  *prometheus.CounterVec
	cacheStores   prometheus.Counter
	cacheBytes    prometheus.Counter
	byRequest     sync.Map // requestLabels → *requestChildren
	byModel       sync.Map // modelLabels → *modelChildren
	byPlugin      sync.Map // pluginLabels → *pluginChildren
	overheadRoute sync.Map // route → prometheus.Observer
}

// New registers every family, the Go runtime's and the process's on a
// registry of its own (not the global one: two gateways in one test
// process each have theirs).
func New() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.Registry.MustRegister(c) }
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_requests_total",
		Help: "Requests answered, by route, model and provider that served them (empty when none did) and HTTP status."},
		[]string{"route", "model", "provider", "status"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_server_request_duration_seconds",
		Help: "Time from receiving a request to its last byte (a stream's end), as OTel gen_ai.server.request.duration.", Buckets: durationBuckets},
		[]string{"route", "model", "provider", "status"})
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_server_time_to_first_token_seconds",
		Help: "Time from receiving a streaming request to its first content token, as OTel gen_ai.server.time_to_first_token.", Buckets: durationBuckets},
		[]string{"model", "provider"})
	m.perToken = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_server_time_per_output_token_seconds",
		Help: "Time per output token after the first, as OTel gen_ai.server.time_per_output_token.", Buckets: perTokenBuckets},
		[]string{"model", "provider"})
	m.overhead = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchyard_gateway_overhead_seconds",
		Help: "Time a request spent in the gateway rather than waiting on an upstream.", Buckets: overheadBuckets},
		[]string{"route"})
	m.tokens = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_client_token_usage",
		Help: "Tokens per request by gen_ai.token.type (input, output), as OTel gen_ai.client.token.usage; _sum is the total.", Buckets: tokenBuckets},
		[]string{"model", "provider", "token_type"})
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_cost_usd_total",
		Help: "Dollars charged to accounts."}, []string{"model", "provider"})
	m.upstreamErr = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_upstream_errors_total",
		Help: "Failed upstream attempts by provider and reason (the status the gateway gave the failure)."}, []string{"provider", "reason"})
	m.fallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_fallbacks_total",
		Help: "Fallbacks to another endpoint, by the provider that failed and why."}, []string{"provider", "reason"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_rate_limit_refusals_total",
		Help: "Requests refused by the gateway's rate limits (429) or load shedding (503) before reaching an upstream."}, []string{"route", "reason"})
	m.pluginCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_plugin_calls_total",
		Help: "Plugin hook calls by module, hook and outcome (ok, error)."}, []string{"module", "hook", "outcome"})
	m.pluginTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchyard_plugin_call_duration_seconds",
		Help: "Wall time of plugin hook calls.", Buckets: pluginBuckets}, []string{"module", "hook"})
	m.openStreams = prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchyard_open_streams", Help: "Streams being relayed now."})
	m.commitTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchyard_ledger_commit_duration_seconds",
		Help: "Time of one group commit of the ledger writer (fsync included).", Buckets: commitBuckets})
	m.commitOps = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchyard_ledger_commit_operations",
		Help: "Operations (settlements, holds, checkpoints) per group commit.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}})
	m.cacheLookups = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_response_cache_lookups_total",
		Help: "Requests the response-cache plugin ran for, by result: hit, miss, bypass (not looked up: sampled, bypass option, mode off)."}, []string{"result"})
	m.cacheStores = prometheus.NewCounter(prometheus.CounterOpts{Name: "switchyard_response_cache_stores_total",
		Help: "Answers the response cache stored."})
	m.cacheBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "switchyard_response_cache_stored_bytes_total",
		Help: "Bytes of the entries the response cache stored (what it wrote, not what it holds now: entries expire and are evicted)."})
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.ttft, m.perToken, m.overhead, m.tokens, m.cost,
		m.upstreamErr, m.fallbacks, m.refusals, m.pluginCalls, m.pluginTime, m.openStreams, m.commitTime, m.commitOps,
		m.cacheLookups, m.cacheStores, m.cacheBytes} {
		f(c)
	}
	return m
}

// Gauges registers gauges read at scrape time: the ledger writer's queue
// and each active module's live instances.
func (m *Metrics) Gauges(ledgerQueue func() int, pools func() map[string]int) {
	if ledgerQueue != nil {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_ledger_writer_queue",
			Help: "Ledger operations queued for the next group commit."}, func() float64 { return float64(ledgerQueue()) }))
	}
	if pools != nil {
		m.Registry.MustRegister(&mapCollector[int]{read: pools, kind: prometheus.GaugeValue, desc: prometheus.NewDesc("switchyard_module_pool_instances",
			"Live instances (pooled or in use) of each active Wasm module.", []string{"module"}, nil)})
	}
}

// ModuleResets registers the count of tenants' module instance resets by
// how each found the pages to put back (known_pages: the call's thread
// took no page fault, nothing walked; page_walk; dropped), read at scrape
// time.
func (m *Metrics) ModuleResets(resets func() map[string]uint64) {
	m.Registry.MustRegister(&mapCollector[uint64]{read: resets, kind: prometheus.CounterValue, desc: prometheus.NewDesc("switchyard_module_instance_resets_total",
		"Resets of account plugins' instances to their state after start, by how their written pages were found.", []string{"how"}, nil)})
}

// ModuleCode registers the number of Wasm modules holding compiled code
// and the count of idle account modules that gave theirs back (parked),
// read at scrape time.
func (m *Metrics) ModuleCode(compiled func() int64, parks func() uint64) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_modules_compiled",
		Help: "Wasm modules holding compiled code now (account modules idle past tenant_modules.compiled_idle do not)."},
		func() float64 { return float64(compiled()) }))
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchyard_module_parks_total",
		Help: "Idle account modules that gave their compiled code back, to be compiled again on their next call."},
		func() float64 { return float64(parks()) }))
}

// mapCollector exposes a map read at scrape time, one series per key (the
// desc's one label).
type mapCollector[N int | uint64] struct {
	read func() map[string]N
	kind prometheus.ValueType
	desc *prometheus.Desc
}

func (c *mapCollector[N]) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *mapCollector[N]) Collect(ch chan<- prometheus.Metric) {
	for k, n := range c.read() {
		ch <- prometheus.MustNewConstMetric(c.desc, c.kind, float64(n), k)
	}
}

// Handler serves the exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

type requestLabels struct {
	route, model, provider string
	status                 int
}

type requestChildren struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

type modelLabels struct{ model, provider string }

type modelChildren struct {
	ttft, perToken, input, output prometheus.Observer
	cost                          prometheus.Counter
}

type pluginLabels struct{ module, hook string }

type pluginChildren struct {
	ok, failed prometheus.Counter
	time       prometheus.Observer
}

func (m *Metrics) request(l requestLabels) *requestChildren {
	if c, ok := m.byRequest.Load(l); ok {
		return c.(*requestChildren)
	}
	st := strconv.Itoa(l.status)
	c := &requestChildren{
		requests: m.requests.WithLabelValues(l.route, l.model, l.provider, st),
		duration: m.duration.WithLabelValues(l.route, l.model, l.provider, st),
	}
	v, _ := m.byRequest.LoadOrStore(l, c)
	return v.(*requestChildren)
}

func (m *Metrics) model(l modelLabels) *modelChildren {
	if c, ok := m.byModel.Load(l); ok {
		return c.(*modelChildren)
	}
	c := &modelChildren{
		ttft: m.ttft.WithLabelValues(l.model, l.provider), perToken: m.perToken.WithLabelValues(l.model, l.provider),
		input:  m.tokens.WithLabelValues(l.model, l.provider, "input"),
		output: m.tokens.WithLabelValues(l.model, l.provider, "output"),
		cost:   m.cost.WithLabelValues(l.model, l.provider),
	}
	v, _ := m.byModel.LoadOrStore(l, c)
	return v.(*modelChildren)
}

// Request is what one finished request reports.
type Request struct {
	Route, Model, Provider string
	Status                 int
	Duration               time.Duration
	// Overhead is Duration less the time spent waiting on upstreams.
	Overhead time.Duration
	// Settled is set when the request left a generation record (it was
	// routed); the fields below are then meaningful.
	Settled                   bool
	InputTokens, OutputTokens int64
	CostUSD                   float64
	TTFT                      time.Duration // 0: not streamed or no token
	Streamed                  bool
	RefusedBy                 string // "rate_limit", "overload": refused before any upstream
}

// Observe records one finished request.
func (m *Metrics) Observe(r *Request) {
	if m == nil {
		return
	}
	rc := m.request(requestLabels{r.Route, r.Model, r.Provider, r.Status})
	rc.requests.Inc()
	rc.duration.Observe(r.Duration.Seconds())
	o, ok := m.overheadRoute.Load(r.Route)
	if !ok {
		o, _ = m.overheadRoute.LoadOrStore(r.Route, m.overhead.WithLabelValues(r.Route))
	}
	o.(prometheus.Observer).Observe(max(r.Overhead, 0).Seconds())
	if r.RefusedBy != "" {
		m.refusals.WithLabelValues(r.Route, r.RefusedBy).Inc()
	}
	if !r.Settled || r.Model == "" {
		return
	}
	mc := m.model(modelLabels{r.Model, r.Provider})
	mc.input.Observe(float64(r.InputTokens))
	mc.output.Observe(float64(r.OutputTokens))
	if r.CostUSD > 0 {
		mc.cost.Add(r.CostUSD)
	}
	if r.Streamed && r.TTFT > 0 {
		mc.ttft.Observe(r.TTFT.Seconds())
		if r.OutputTokens > 1 && r.Duration > r.TTFT {
			mc.perToken.Observe((r.Duration - r.TTFT).Seconds() / float64(r.OutputTokens-1))
		}
	}
}

// UpstreamError records a failed attempt at provider; fallback says
// another endpoint is tried next.
func (m *Metrics) UpstreamError(provider string, status int, fallback bool) {
	if m == nil {
		return
	}
	reason := strconv.Itoa(status)
	m.upstreamErr.WithLabelValues(provider, reason).Inc()
	if fallback {
		m.fallbacks.WithLabelValues(provider, reason).Inc()
	}
}

// PluginCall records one plugin hook call.
func (m *Metrics) PluginCall(module, hook string, d time.Duration, failed bool) {
	if m == nil {
		return
	}
	l := pluginLabels{module, hook}
	v, ok := m.byPlugin.Load(l)
	if !ok {
		v, _ = m.byPlugin.LoadOrStore(l, &pluginChildren{
			ok: m.pluginCalls.WithLabelValues(module, hook, "ok"), failed: m.pluginCalls.WithLabelValues(module, hook, "error"),
			time: m.pluginTime.WithLabelValues(module, hook),
		})
	}
	c := v.(*pluginChildren)
	if failed {
		c.failed.Inc()
	} else {
		c.ok.Inc()
	}
	c.time.Observe(d.Seconds())
}

// StreamOpened and StreamClosed track open streams.
func (m *Metrics) StreamOpened() {
	if m != nil {
		m.openStreams.Inc()
	}
}

// StreamClosed: see StreamOpened.
func (m *Metrics) StreamClosed() {
	if m != nil {
		m.openStreams.Dec()
	}
}

// LedgerCommit records one group commit of the ledger writer.
func (m *Metrics) LedgerCommit(ops int, d time.Duration) {
	if m == nil {
		return
	}
	m.commitTime.Observe(d.Seconds())
	m.commitOps.Observe(float64(ops))
}

// Cache counts one request the response cache ran for: its result (hit,
// miss, bypass) and the bytes of the entry it stored (0: none).
func (m *Metrics) Cache(result string, storedBytes int) {
	if m == nil || result == "" {
		return
	}
	m.cacheLookups.WithLabelValues(result).Inc()
	if storedBytes > 0 {
		m.cacheStores.Inc()
		m.cacheBytes.Add(float64(storedBytes))
	}
}

// VectorIndex registers the module vector index's entries (every
// account's) and the entries it evicted to make room (least recently
// used: the semantic response cache's), read at scrape time.
func (m *Metrics) VectorIndex(entries func() int, evictions func() int64) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_vector_index_entries",
		Help: "Vectors in the module vector index, every account's (the semantic response cache's)."},
		func() float64 { return float64(entries()) }))
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchyard_vector_index_evictions_total",
		Help: "Vectors evicted (least recently used) to keep a partition or the whole index within its bound."},
		func() float64 { return float64(evictions()) }))
}

// KVEvictions registers the count of module kv entries evicted to make
// room (kv.Store.PutEvicting: the response cache's), read at scrape time.
func (m *Metrics) KVEvictions(n func() int64) {
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchyard_module_kv_evictions_total",
		Help: "Module kv entries evicted to make room for a new one (the response cache's evictions)."},
		func() float64 { return float64(n()) }))
}
