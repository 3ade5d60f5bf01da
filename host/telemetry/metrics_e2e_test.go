package telemetry_test

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

const chatRoute = "/api/v1/chat/completions"

// ordered makes the router try alpha, then beta: its default spreads
// requests over providers at random, weighted by price.
const ordered = `,"provider":{"order":["alpha","beta"]}`

func hello(extra string) string {
	return `{"model":"test/chat","messages":[{"role":"user","content":"hello there"}]` + extra + `}`
}

func start(t *testing.T, opts gatewaytest.Options) *gatewaytest.Gateway {
	t.Helper()
	opts.Quiet = opts.LogTo == nil
	mutate := opts.Mutate
	opts.Mutate = func(c *config.Config) {
		c.Metrics.Listen = "127.0.0.1:0"
		if mutate != nil {
			mutate(c)
		}
	}
	g, err := gatewaytest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// scrape is one scrape of /metrics, by family name.
type scrape map[string]*dto.MetricFamily

func scrapeMetrics(t *testing.T, g *gatewaytest.Gateway) scrape {
	t.Helper()
	if err := g.Ledger.Sync(); err != nil { // let the group commit land in the commit histogram
		t.Fatal(err)
	}
	resp, err := http.Get(g.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the counter or gauge value, or the histogram's count, of the
// series of family name whose labels include want (0 when absent). With
// sum, a histogram's sum instead.
func (s scrape) value(name string, want map[string]string, sum bool) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	total := 0.0
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil && sum:
			total += m.Histogram.GetSampleSum()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

type delta struct {
	name   string
	labels map[string]string
	sum    bool
	want   float64
}

// checkDeltas asserts each metric moved by exactly want between before
// and after.
func checkDeltas(t *testing.T, before, after scrape, ds []delta) {
	t.Helper()
	for _, d := range ds {
		got := after.value(d.name, d.labels, d.sum) - before.value(d.name, d.labels, d.sum)
		if math.Abs(got-d.want) > 1e-9 {
			t.Errorf("%s%v (sum=%v) moved by %v, want %v", d.name, d.labels, d.sum, got, d.want)
		}
	}
}

// testPluginFiles reads the test plugin's manifest and module (make wasm).
func testPluginFiles(t *testing.T) (manifest, wasm []byte) {
	t.Helper()
	root := gatewaytest.Root()
	manifest, err := os.ReadFile(filepath.Join(root, "host", "pipeline", "testdata", "testplugin", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	wasm, err = os.ReadFile(filepath.Join(root, "build", "testdata", "testplugin.wasm"))
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	return manifest, wasm
}

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func post(t *testing.T, g *gatewaytest.Gateway, key, body string) (*http.Response, gjson.Result) {
	t.Helper()
	resp, b, err := g.Request(http.MethodPost, "/chat/completions", body, "Authorization", "Bearer "+key)
	if err != nil {
		t.Fatal(err)
	}
	return resp, gjson.ParseBytes(b)
}

// streamUsage sends a streaming request and returns the usage of its last
// chunk.
func streamUsage(t *testing.T, g *gatewaytest.Gateway, body string) gjson.Result {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	var usage gjson.Result
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		if u := gjson.Get(line, "usage"); u.Exists() && u.Type != gjson.Null {
			usage = u
		}
	}
	if !usage.Exists() {
		t.Fatal("stream without usage")
	}
	return usage
}

// Each kind of traffic moves the metrics a user would watch by exactly
// what happened: requests by status, tokens and cost as billed, time to
// first token for streams, fallbacks, rate-limit refusals, plugin calls.
func TestMetricsAfterTraffic(t *testing.T) {
	g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta"}})
	ok := labels("route", chatRoute, "model", "test/chat", "provider", "alpha", "status", "200")
	tok := func(typ string) map[string]string {
		return labels("model", "test/chat", "provider", "alpha", "token_type", typ)
	}

	t.Run("json", func(t *testing.T) {
		before := scrapeMetrics(t, g)
		resp, body := post(t, g, g.Key, hello(ordered))
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
		u := body.Get("usage")
		checkDeltas(t, before, scrapeMetrics(t, g), []delta{
			{"switchyard_requests_total", ok, false, 1},
			{"gen_ai_server_request_duration_seconds", ok, false, 1},
			{"gen_ai_client_token_usage", tok("input"), false, 1},
			{"gen_ai_client_token_usage", tok("input"), true, u.Get("prompt_tokens").Float()},
			{"gen_ai_client_token_usage", tok("output"), true, u.Get("completion_tokens").Float()},
			{"switchyard_cost_usd_total", labels("model", "test/chat", "provider", "alpha"), false, u.Get("cost").Float()},
			{"gen_ai_server_time_to_first_token_seconds", nil, false, 0},
			{"switchyard_gateway_overhead_seconds", labels("route", chatRoute), false, 1},
			{"switchyard_upstream_errors_total", nil, false, 0},
		})
	})

	t.Run("stream", func(t *testing.T) {
		before := scrapeMetrics(t, g)
		u := streamUsage(t, g, hello(`,"stream":true`+ordered))
		// The stream is reported when it has ended on the gateway's side,
		// which the client's end of the body does not order.
		var after scrape
		for range 500 {
			if after = scrapeMetrics(t, g); after.value("switchyard_requests_total", ok, false) > before.value("switchyard_requests_total", ok, false) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		checkDeltas(t, before, after, []delta{
			{"switchyard_requests_total", ok, false, 1},
			{"gen_ai_server_request_duration_seconds", ok, false, 1},
			{"gen_ai_server_time_to_first_token_seconds", labels("model", "test/chat", "provider", "alpha"), false, 1},
			{"gen_ai_client_token_usage", tok("output"), true, u.Get("completion_tokens").Float()},
			{"switchyard_cost_usd_total", labels("model", "test/chat", "provider", "alpha"), false, u.Get("cost").Float()},
		})
		if n := after.value("switchyard_open_streams", nil, false); n != 0 {
			t.Errorf("switchyard_open_streams %v after the stream ended", n)
		}
		if u.Get("completion_tokens").Int() > 1 {
			checkDeltas(t, before, after, []delta{{"gen_ai_server_time_per_output_token_seconds", nil, false, 1}})
		}
	})

	t.Run("fallback", func(t *testing.T) {
		g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 500})
		defer g.Upstreams["alpha"].SetFaults(demo.Faults{})
		before := scrapeMetrics(t, g)
		resp, body := post(t, g, g.Key, hello(ordered))
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
		checkDeltas(t, before, scrapeMetrics(t, g), []delta{
			{"switchyard_upstream_errors_total", labels("provider", "alpha"), false, 1},
			{"switchyard_fallbacks_total", labels("provider", "alpha"), false, 1},
			{"switchyard_upstream_errors_total", labels("provider", "beta"), false, 0},
			{"switchyard_requests_total", labels("route", chatRoute, "provider", "beta", "status", "200"), false, 1},
			{"switchyard_requests_total", labels("provider", "alpha"), false, 0},
		})
	})

	t.Run("broken stream", func(t *testing.T) {
		g.Upstreams["alpha"].SetFaults(demo.Faults{CutAfter: 2})
		defer g.Upstreams["alpha"].SetFaults(demo.Faults{})
		before := scrapeMetrics(t, g)
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/chat/completions", strings.NewReader(hello(`,"stream":true`+ordered)))
		req.Header.Set("Authorization", "Bearer "+g.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		var after scrape
		for range 500 {
			if after = scrapeMetrics(t, g); after.value("switchyard_upstream_errors_total", nil, false) > before.value("switchyard_upstream_errors_total", nil, false) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		checkDeltas(t, before, after, []delta{
			{"switchyard_upstream_errors_total", labels("provider", "alpha", "reason", "502"), false, 1},
			{"switchyard_fallbacks_total", nil, false, 0},
			{"switchyard_open_streams", nil, false, 0},
		})
	})

	t.Run("429", func(t *testing.T) {
		resp, b, err := g.Request(http.MethodPost, "/keys", `{"name":"rpm1","rate_limits":{"requests_per_minute":1}}`)
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("create key: %v %s", err, b)
		}
		key := gjson.GetBytes(b, "key").Str
		before := scrapeMetrics(t, g)
		if resp, body := post(t, g, key, hello("")); resp.StatusCode != 200 {
			t.Fatalf("first: %d %s", resp.StatusCode, body.Raw)
		}
		if resp, body := post(t, g, key, hello("")); resp.StatusCode != 429 {
			t.Fatalf("second: %d %s", resp.StatusCode, body.Raw)
		}
		checkDeltas(t, before, scrapeMetrics(t, g), []delta{
			{"switchyard_rate_limit_refusals_total", labels("route", chatRoute, "reason", "rate_limit"), false, 1},
			{"switchyard_requests_total", labels("route", chatRoute, "model", "", "status", "429"), false, 1},
			{"switchyard_requests_total", labels("route", chatRoute, "model", "test/chat", "status", "200"), false, 1},
		})
	})

	// An account's plugin runs on an instance put back after each call:
	// every call that succeeded is one reset, counted by how it found the
	// pages to put back.
	t.Run("account plugin resets", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("instances are reset on Linux only")
		}
		mf, bin := testPluginFiles(t)
		mf = []byte(strings.Replace(string(mf), `"name": "testplugin"`, `"name": "acctplugin"`, 1))
		if !strings.Contains(string(mf), `"acctplugin"`) {
			t.Fatalf("the manifest's name was not replaced: %s", mf)
		}
		resp, b, err := g.Request(http.MethodPost, "/modules", fmt.Sprintf(`{"manifest":%s,"wasm":%q,"scope":"account","activate":true}`, mf, base64.StdEncoding.EncodeToString(bin)))
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("publish: %v %s", err, b)
		}
		before := scrapeMetrics(t, g)
		for range 3 {
			if resp, body := post(t, g, g.Key, hello(`,"plugins":[{"id":"acctplugin"}]`)); resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body.Raw)
			}
		}
		after := scrapeMetrics(t, g)
		calls := after.value("switchyard_plugin_calls_total", labels("module", "acctplugin", "outcome", "ok"), false) -
			before.value("switchyard_plugin_calls_total", labels("module", "acctplugin", "outcome", "ok"), false)
		resets := after.value("switchyard_module_instance_resets_total", nil, false) -
			before.value("switchyard_module_instance_resets_total", nil, false)
		if calls < 3 || resets != calls {
			t.Fatalf("%v calls of the account's plugin, %v resets counted; want one reset a call", calls, resets)
		}
	})

	t.Run("plugin", func(t *testing.T) {
		mf, bin := testPluginFiles(t)
		resp, b, err := g.Request(http.MethodPost, "/modules", fmt.Sprintf(`{"manifest":%s,"wasm":%q,"scope":"global","activate":true}`, mf, base64.StdEncoding.EncodeToString(bin)))
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("publish: %v %s", err, b)
		}
		before := scrapeMetrics(t, g)
		if resp, body := post(t, g, g.Key, hello(`,"plugins":[{"id":"testplugin","mode":"shout"}]`)); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
		if scrapeMetrics(t, g).value("switchyard_module_pool_instances", labels("module", "testplugin"), false) < 1 {
			t.Error("no live instance of testplugin in switchyard_module_pool_instances")
		}
		// A trap discards the instance it ran in.
		if resp, body := post(t, g, g.Key, hello(`,"plugins":[{"id":"testplugin","mode":"trap"}]`)); resp.StatusCode != 502 {
			t.Fatalf("trap: %d %s", resp.StatusCode, body.Raw)
		}
		after := scrapeMetrics(t, g)
		checkDeltas(t, before, after, []delta{
			{"switchyard_plugin_calls_total", labels("module", "testplugin", "hook", "pre_request", "outcome", "ok"), false, 1},
			{"switchyard_plugin_calls_total", labels("module", "testplugin", "hook", "pre_request", "outcome", "error"), false, 1},
			{"switchyard_plugin_calls_total", labels("module", "testplugin", "hook", "post_response", "outcome", "ok"), false, 1},
			{"switchyard_plugin_call_duration_seconds", labels("module", "testplugin", "hook", "pre_request"), false, 2},
			{"switchyard_requests_total", labels("route", chatRoute, "status", "502"), false, 1},
		})
		if after.value("switchyard_ledger_commit_duration_seconds", nil, false) < 1 {
			t.Error("no ledger commit in switchyard_ledger_commit_duration_seconds")
		}
		if _, ok := after["switchyard_ledger_writer_queue"]; !ok {
			t.Error("no switchyard_ledger_writer_queue")
		}
	})
}

// A request shed for load is counted as a refusal, with no model.
func TestMetricsLoadShedding(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) { c.Limits.MaxRequestsInFlight = 1 }})
	g.Upstreams["alpha"].SetFaults(demo.Faults{Delay: 500 * time.Millisecond})
	before := scrapeMetrics(t, g)
	done := make(chan int)
	go func() {
		resp, _, err := g.Request(http.MethodPost, "/chat/completions", hello(""))
		if err != nil {
			done <- 0
			return
		}
		done <- resp.StatusCode
	}()
	// The first request holds the only slot while the upstream delays it.
	for i := 0; g.Upstreams["alpha"].Count() == 0; i++ {
		if i > 500 {
			t.Fatal("the first request never reached the upstream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if resp, body := post(t, g, g.Key, hello("")); resp.StatusCode != 503 {
		t.Fatalf("second request: %d %s, want 503", resp.StatusCode, body.Raw)
	}
	if st := <-done; st != 200 {
		t.Fatalf("first request: %d", st)
	}
	checkDeltas(t, before, scrapeMetrics(t, g), []delta{
		{"switchyard_rate_limit_refusals_total", labels("reason", "overload"), false, 1},
		{"switchyard_requests_total", labels("model", "", "status", "503"), false, 1},
		{"switchyard_requests_total", labels("model", "test/chat", "status", "200"), false, 1},
	})
}

// TestPprofOnlyWhenAsked: Go's profiles are on the metrics listener when
// metrics.pprof says so, and nowhere otherwise (never on the API port).
func TestPprofOnlyWhenAsked(t *testing.T) {
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint("pprof=", on), func(t *testing.T) {
			g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) { c.Metrics.Pprof = on }})
			base := strings.TrimSuffix(g.MetricsURL, "/metrics")
			status, body := get(base + "/debug/pprof/goroutine?debug=1")
			if on && (status != 200 || !strings.Contains(body, "goroutine profile:")) {
				t.Fatalf("pprof on: %d %.200s", status, body)
			}
			if !on && status != 404 {
				t.Fatalf("pprof off: %d %.200s", status, body)
			}
			if status, _ := get(strings.TrimSuffix(g.URL, "/api/v1") + "/debug/pprof/goroutine?debug=1"); status == 200 {
				t.Fatal("profiles on the API port")
			}
		})
	}
}
