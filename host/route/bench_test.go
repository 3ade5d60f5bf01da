package route

import (
	"strconv"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/catalog"
)

// benchCatalog has 500 chat models × 10 endpoints over 20 providers.
func benchCatalog() (*catalog.Catalog, []string) {
	c := &catalog.Catalog{Models: map[string]*catalog.Model{}, Providers: map[string]*catalog.Provider{}}
	var provs []*catalog.Provider
	for i := range 20 {
		p := &catalog.Provider{Slug: "prov" + strconv.Itoa(i), Name: "Provider " + strconv.Itoa(i),
			DataCollection: []string{"allow", "deny"}[i%2], ZDR: i%3 == 0, Region: "us"}
		c.Providers[p.Slug] = p
		provs = append(provs, p)
	}
	ids := make([]string, 500)
	for i := range ids {
		id := "vendor" + strconv.Itoa(i%25) + "/model-" + strconv.Itoa(i)
		ids[i] = id
		m := &catalog.Model{ID: id, Kind: catalog.KindChat, ContextLength: 128000, Distillable: i%2 == 0}
		for j := range 10 {
			p := provs[(i+j)%20]
			m.Endpoints = append(m.Endpoints, &catalog.Endpoint{
				Model: m, Provider: p, UpstreamModel: id,
				Price:         catalog.Price{Prompt: 0.1 + float64((i*7+j*13)%50)/10, Completion: 0.4 + float64((i*3+j*11)%50)/5},
				ContextLength: 128000, Quantization: []string{"fp16", "fp8", "int4"}[j%3],
				Supported: map[string]bool{"tools": j%2 == 0, "temperature": true, "top_k": j%3 == 0},
			})
		}
		c.Models[id] = m
	}
	return c, ids
}

func BenchmarkPlan(b *testing.B) {
	c, ids := benchCatalog()
	r := New(c, Options{Rand: seeded(1)})
	// Live data on every endpoint, so sorts by latency/throughput and the
	// thresholds read real statistics.
	for _, m := range c.Models {
		for j, e := range m.Endpoints {
			for k := range 20 {
				r.Report(e, Outcome{Success: true, TTFT: time.Duration(100+j*30+k) * time.Millisecond, Duration: 2 * time.Second, OutputTokens: 100 + j*10})
			}
		}
	}
	for i, id := range ids {
		r.Stick("session-"+strconv.Itoa(i), c.Models[id].Endpoints[i%10])
	}
	cases := []struct {
		name string
		req  func(i int) Request
	}{
		{"load-balance", func(i int) Request { return Request{Models: []string{ids[i%500]}} }},
		{"sort-price", func(i int) Request { return Request{Models: []string{ids[i%500]}, Prefs: Preferences{Sort: SortPrice}} }},
		{"sort-latency", func(i int) Request {
			return Request{Models: []string{ids[i%500]}, Prefs: Preferences{Sort: SortLatency}}
		}},
		{"variant-nitro", func(i int) Request { return Request{Models: []string{ids[i%500] + ":nitro"}} }},
		{"order", func(i int) Request {
			return Request{Models: []string{ids[i%500]}, Prefs: Preferences{Order: []string{"prov3", "prov8", "prov13", "prov18"}}}
		}},
		{"filters+params", func(i int) Request {
			return Request{Models: []string{ids[i%500]}, Params: []string{"tools", "top_k", "temperature"}, PromptTokens: 1000, MaxOutputTokens: 1000,
				Prefs: Preferences{DataCollection: "deny", Quantizations: []string{"fp8", "fp16"}, MaxPrice: MaxPrice{Prompt: f64(4)}, Ignore: []string{"prov1"}}}
		}},
		{"thresholds", func(i int) Request {
			return Request{Models: []string{ids[i%500]}, Prefs: Preferences{PreferredMaxLatency: Percentiles{P50: 0.3}, PreferredMinThroughput: Percentiles{P90: 100}}}
		}},
		{"sticky", func(i int) Request {
			return Request{Models: []string{ids[i%500]}, SessionID: "session-" + strconv.Itoa(i%500)}
		}},
		{"3-models", func(i int) Request {
			return Request{Models: []string{ids[i%500], ids[(i+1)%500], ids[(i+2)%500]}}
		}},
	}
	for _, bc := range cases {
		// Requests that no endpoint satisfies are left out: the benchmark
		// measures successful plans.
		var reqs []Request
		for i := 0; len(reqs) < 500; i++ {
			if _, err := r.Plan(bc.req(i)); err == nil {
				reqs = append(reqs, bc.req(i))
			}
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := r.Plan(reqs[i%500]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	b.Run("load-balance-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := r.Plan(Request{Models: []string{ids[i%500]}}); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
	})
}

func BenchmarkReport(b *testing.B) {
	c, ids := benchCatalog()
	r := New(c, Options{})
	e := c.Models[ids[0]].Endpoints[0]
	o := Outcome{Success: true, TTFT: 150 * time.Millisecond, Duration: time.Second, OutputTokens: 200}
	b.ReportAllocs()
	for b.Loop() {
		r.Report(e, o)
	}
}
