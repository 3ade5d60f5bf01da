package modmetrics

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/switchyard/switchyard/abi/manifest"
	"net/http/httptest"
)

// The bounds on series: per module and in all; a refused new series is
// counted, and the series that exist keep counting.
func TestSeriesBounds(t *testing.T) {
	s := newSet(3, 2)
	c := &manifest.Metric{Name: "calls_total", Type: manifest.MetricCounter, Help: "Calls."}
	for _, tc := range []struct {
		module, account string
		err             error
	}{
		{"a", "acct-1", nil},
		{"a", "acct-2", nil},
		{"a", "acct-3", ErrFull}, // a's third series
		{"a", "acct-1", nil},     // an existing series
		{"b", "acct-1", nil},
		{"c", "acct-1", ErrFull}, // the fourth in all
	} {
		if err := s.Add(tc.module, tc.account, c, 1); !errors.Is(err, tc.err) {
			t.Fatalf("%s/%s: %v, want %v", tc.module, tc.account, err, tc.err)
		}
	}
	text := Scrape(t, s)
	if n := strings.Count(text, "\nswitchyard_mod_calls_total{"); n != 3 {
		t.Fatalf("%d series, want 3:\n%s", n, text)
	}
	if !strings.Contains(text, "\nswitchyard_mod_series_refused_total 2\n") {
		t.Fatalf("no refusals counted:\n%s", text)
	}
}

// Scrape is the text format of /metrics with only c registered.
func Scrape(t testing.TB, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return "\n" + rec.Body.String()
}

// Two modules declaring one name: the same type and buckets share the
// family; another type is refused rather than breaking the scrape.
func TestConflictingDeclarations(t *testing.T) {
	s := New()
	h := &manifest.Metric{Name: "latency_seconds", Type: manifest.MetricHistogram, Help: "Latency.", Buckets: []float64{0.1, 1}}
	if err := s.Add("a", "", h, 0.5); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("b", "", h, 0.05); err != nil {
		t.Fatal(err)
	}
	other := *h
	other.Buckets = []float64{1, 10}
	if err := s.Add("c", "", &other, 1); !errors.Is(err, ErrConflict) {
		t.Fatalf("other buckets: %v, want ErrConflict", err)
	}
	Scrape(t, s)
}
