package wasm

import (
	"context"
	"strings"
	"testing"

	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/modmetrics"
)

// TestMetricHostFunction: the metric host function adds to what the
// manifest declares, for the request's account, and refuses an
// undeclared name, a malformed value and a negative counter addition with
// their codes (docs/abi.md, "metric").
func TestMetricHostFunction(t *testing.T) {
	set := modmetrics.New()
	e := &Engine{cfg: Config{Metrics: set}}
	mod := &Module{Manifest: &manifest.Manifest{Name: "hello",
		Grants: manifest.Grants{HostFunctions: []string{abi.GrantMetrics}},
		Metrics: []manifest.Metric{
			{Name: "blocked_total", Type: manifest.MetricCounter, Help: "Requests blocked."},
			{Name: "scan_bytes", Type: manifest.MetricHistogram, Help: "Bytes scanned.", Buckets: []float64{100, 1000}},
		}}}
	env := &CallEnv{Account: "acct-1"}
	call := func(fields ...string) (string, int64) {
		in := make([][]byte, len(fields))
		for i, f := range fields {
			in[i] = []byte(f)
		}
		out, code := hostMetric(hostRequest{ctx: context.Background(), engine: e, mod: mod, env: env, fields: in}, nil)
		f, _ := abi.Fields(nil, out)
		msg := ""
		if len(f) > 0 {
			msg = string(f[0])
		}
		return msg, code
	}
	for _, tc := range []struct {
		name   string
		fields []string
		code   int64
		msg    string
	}{
		{"counter", []string{"blocked_total", "1"}, 0, ""},
		{"counter again", []string{"blocked_total", "2.5"}, 0, ""},
		{"histogram", []string{"scan_bytes", "512"}, 0, ""},
		{"undeclared", []string{"other_total", "1"}, abi.HostDenied, "not declared"},
		{"not a number", []string{"blocked_total", "many"}, abi.HostFailed, "not a number"},
		{"counter down", []string{"blocked_total", "-1"}, abi.HostFailed, "only goes up"},
		{"no value", []string{"blocked_total"}, abi.HostFailed, "want [name, value]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, code := call(tc.fields...)
			if code != tc.code || !strings.Contains(msg, tc.msg) {
				t.Fatalf("code %d %q, want %d with %q", code, msg, tc.code, tc.msg)
			}
		})
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(set)
	want := `
# HELP switchyard_mod_blocked_total Requests blocked.
# TYPE switchyard_mod_blocked_total counter
switchyard_mod_blocked_total{account="acct-1",module="hello"} 3.5
# HELP switchyard_mod_scan_bytes Bytes scanned.
# TYPE switchyard_mod_scan_bytes histogram
switchyard_mod_scan_bytes_bucket{account="acct-1",module="hello",le="100"} 0
switchyard_mod_scan_bytes_bucket{account="acct-1",module="hello",le="1000"} 1
switchyard_mod_scan_bytes_bucket{account="acct-1",module="hello",le="+Inf"} 1
switchyard_mod_scan_bytes_sum{account="acct-1",module="hello"} 512
switchyard_mod_scan_bytes_count{account="acct-1",module="hello"} 1
`
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), want[1:]) {
		t.Fatalf("/metrics lacks\n%s\ngot:\n%s", want, rec.Body)
	}
}
