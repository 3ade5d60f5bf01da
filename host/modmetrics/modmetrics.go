// Package modmetrics holds the counters and histograms that modules add to
// through the metric host function (docs/abi.md, "metric"): each is
// declared in the module's manifest (name, type, help, buckets) and
// exported on /metrics as switchyard_mod_<name>, one series per module name
// and account of the request it ran for.
//
// Cardinality is bounded twice, because modules are third-party code and
// accounts are many: a module has at most MaxSeriesPerModule series (its
// declared metrics times the accounts it ran for) and the whole set
// MaxSeries. A new series past either bound is refused (the call gets
// abi.HostQuota) and counted in switchyard_mod_series_refused_total; the
// series that exist keep counting. Series live as long as the gateway:
// a Prometheus counter must not go back, so a hot swap to v2 keeps adding
// to v1's series (the label is the module's name, not its version).
package modmetrics

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/switchyard/switchyard/abi/manifest"
)

// Bounds on series (above).
const (
	MaxSeries          = 10000
	MaxSeriesPerModule = 1000
	// Prefix keeps modules' names apart from the gateway's own metrics
	// (no gateway metric starts with it).
	Prefix = "switchyard_mod_"
)

// Errors of Add; each becomes the host function's code and message.
var (
	// ErrFull: the series would pass a bound (abi.HostQuota).
	ErrFull = errors.New("metric series limit reached")
	// ErrValue: not a value this metric takes (abi.HostFailed).
	ErrValue = errors.New("bad metric value")
	// ErrConflict: another module declares the same name with another
	// type or buckets (abi.HostFailed).
	ErrConflict = errors.New("metric declared differently by another module")
)

// Set is the modules' metrics; a prometheus.Collector (unchecked: its
// families come and go with the modules). The zero value is not usable:
// New. A nil *Set refuses nothing and records nothing.
type Set struct {
	mu        sync.Mutex
	families  map[string]*family // by declared name
	perModule map[string]int     // series by module name
	series    int
	refused   uint64
	refusedD  *prometheus.Desc
	maxSeries int
	maxModule int
}

type family struct {
	desc    *prometheus.Desc
	typ     string
	buckets []float64
	series  map[seriesKey]*series
}

type seriesKey struct{ module, account string }

type series struct {
	sum    float64 // a counter's value; a histogram's sum
	count  uint64
	counts []uint64 // per bucket, not cumulative
}

// New returns an empty set with the default bounds.
func New() *Set { return newSet(MaxSeries, MaxSeriesPerModule) }

func newSet(maxSeries, maxModule int) *Set {
	return &Set{
		families:  map[string]*family{},
		perModule: map[string]int{},
		refusedD: prometheus.NewDesc(Prefix+"series_refused_total",
			"Module metric additions refused because a new series would pass the bound (per module or in all; docs/observability.md).", nil, nil),
		maxSeries: maxSeries,
		maxModule: maxModule,
	}
}

// Add adds value to counter d of module (its manifest's name) for
// account, or observes it in histogram d.
func (s *Set) Add(module, account string, d *manifest.Metric, value float64) error {
	if s == nil {
		return nil
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return fmt.Errorf("%w: %s: not a finite number", ErrValue, d.Name)
	}
	if d.Type == manifest.MetricCounter && value < 0 {
		return fmt.Errorf("%w: %s is a counter: it only goes up", ErrValue, d.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.families[d.Name]
	if f == nil {
		f = &family{
			desc:    prometheus.NewDesc(Prefix+d.Name, d.Help, []string{"module", "account"}, nil),
			typ:     d.Type,
			buckets: slices.Clone(d.Buckets),
			series:  map[seriesKey]*series{},
		}
		s.families[d.Name] = f
	} else if f.typ != d.Type || !slices.Equal(f.buckets, d.Buckets) {
		return fmt.Errorf("%w: %s is a %s here (buckets %v); rename it", ErrConflict, d.Name, f.typ, f.buckets)
	}
	k := seriesKey{module, account}
	sr := f.series[k]
	if sr == nil {
		if s.series >= s.maxSeries || s.perModule[module] >= s.maxModule {
			s.refused++
			return fmt.Errorf("%w (%d series per module, %d in all)", ErrFull, s.maxModule, s.maxSeries)
		}
		sr = &series{}
		if f.typ == manifest.MetricHistogram {
			sr.counts = make([]uint64, len(f.buckets))
		}
		f.series[k] = sr
		s.series++
		s.perModule[module]++
	}
	sr.sum += value
	sr.count++
	if sr.counts != nil {
		if i := sort.SearchFloat64s(f.buckets, value); i < len(f.buckets) {
			sr.counts[i]++ // le: the first bound >= value
		}
	}
	return nil
}

// Describe sends nothing: the set is an unchecked collector.
func (s *Set) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series, and the count of refused additions.
func (s *Set) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(s.refusedD, prometheus.CounterValue, float64(s.refused))
	for _, f := range s.families {
		for k, sr := range f.series {
			if f.typ == manifest.MetricCounter {
				ch <- prometheus.MustNewConstMetric(f.desc, prometheus.CounterValue, sr.sum, k.module, k.account)
				continue
			}
			cum := make(map[float64]uint64, len(f.buckets))
			var n uint64
			for i, b := range f.buckets {
				n += sr.counts[i]
				cum[b] = n
			}
			ch <- prometheus.MustNewConstHistogram(f.desc, sr.count, sr.sum, cum, k.module, k.account)
		}
	}
}
