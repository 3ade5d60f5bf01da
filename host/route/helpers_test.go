package route

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/catalog"
	"github.com/tidwall/gjson"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testCatalog:
//
//	provider   data collection  zdr  region
//	openai     allow            no   us
//	azure      deny             yes  eu
//	together   deny             no   us
//	deepinfra  allow            no   us
//	groq       allow            yes  us
//	free       allow            no   us
//
//	openai/gpt-4o (chat, 128k context, not distillable)
//	  openai     2.5/10   fp16   tools, temperature
//	  azure      2.5/10   fp16   tools, temperature
//	  together   1.5/6    fp8    tools, top_k, temperature
//	  deepinfra  1/4      int4   top_k, temperature; 32k context
//	meta/llama-3 (chat, 8k context, distillable)
//	  together   0.9/0.9  fp8
//	  groq       0.6/0.8  fp8
//	  deepinfra  0.3/0.4  int4   max output 1024
//	  free       0/0      (unknown quantization)
//	openai/text-embedding-3 (embedding)
//	  openai     0.02
func testCatalog() *catalog.Catalog {
	prov := func(slug, name, dc string, zdr bool, region string) *catalog.Provider {
		return &catalog.Provider{Slug: slug, Name: name, DataCollection: dc, ZDR: zdr, Region: region}
	}
	ps := map[string]*catalog.Provider{
		"openai":    prov("openai", "OpenAI", "allow", false, "us"),
		"azure":     prov("azure", "Azure", "deny", true, "eu"),
		"together":  prov("together", "Together", "deny", false, "us"),
		"deepinfra": prov("deepinfra", "DeepInfra", "allow", false, "us"),
		"groq":      prov("groq", "Groq", "allow", true, "us"),
		"free":      prov("free", "Free", "allow", false, "us"),
	}
	c := &catalog.Catalog{Models: map[string]*catalog.Model{}, Providers: ps}
	addModel := func(id string, kind catalog.Kind, ctx int, distill bool) *catalog.Model {
		m := &catalog.Model{ID: id, Kind: kind, ContextLength: ctx, Distillable: distill}
		c.Models[id] = m
		return m
	}
	add := func(m *catalog.Model, p string, prompt, completion float64, quant string, supported ...string) *catalog.Endpoint {
		e := &catalog.Endpoint{Model: m, Provider: ps[p], UpstreamModel: m.ID, Price: catalog.Price{Prompt: prompt, Completion: completion},
			Quantization: quant, Supported: map[string]bool{}}
		for _, s := range supported {
			e.Supported[s] = true
		}
		m.Endpoints = append(m.Endpoints, e)
		return e
	}
	g := addModel("openai/gpt-4o", catalog.KindChat, 128000, false)
	add(g, "openai", 2.5, 10, "fp16", "tools", "temperature")
	add(g, "azure", 2.5, 10, "fp16", "tools", "temperature")
	add(g, "together", 1.5, 6, "fp8", "tools", "top_k", "temperature")
	add(g, "deepinfra", 1, 4, "int4", "top_k", "temperature").ContextLength = 32000
	l := addModel("meta/llama-3", catalog.KindChat, 8192, true)
	add(l, "together", 0.9, 0.9, "fp8", "temperature")
	add(l, "groq", 0.6, 0.8, "fp8", "temperature")
	add(l, "deepinfra", 0.3, 0.4, "int4", "temperature").MaxOutput = 1024
	add(l, "free", 0, 0, "", "temperature")
	e := addModel("openai/text-embedding-3", catalog.KindEmbedding, 8191, false)
	add(e, "openai", 0.02, 0, "")
	return c
}

// ep finds the endpoint of model served by provider.
func ep(c *catalog.Catalog, model, provider string) *catalog.Endpoint {
	for _, e := range c.Models[model].Endpoints {
		if e.Provider.Slug == provider {
			return e
		}
	}
	panic("no endpoint " + model + " " + provider)
}

// slugs renders endpoints as "provider" (or "model@provider" when models
// differ) for comparisons.
func slugs(eps []*catalog.Endpoint, withModel bool) string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = e.Provider.Slug
		if withModel {
			out[i] = e.Model.ID + "@" + out[i]
		}
	}
	return strings.Join(out, ",")
}

// prefs parses a provider object (JSON) for a test, failing on error.
func prefs(t testing.TB, provider string) Preferences {
	t.Helper()
	p, err := ParsePreferences(gjson.Parse(provider), gjson.Result{})
	if err != nil {
		t.Fatalf("ParsePreferences(%s): %v", provider, err)
	}
	return p
}

func seeded(seed uint64) rand.Source { return rand.NewPCG(seed, seed^0x9e3779b97f4a7c15) }

// parseBoth parses a provider object and a route value (JSON; "" = absent).
func parseBoth(t testing.TB, provider, route string) Preferences {
	t.Helper()
	var r gjson.Result
	if route != "" {
		r = gjson.Parse(route)
	}
	p, err := ParsePreferences(gjson.Parse(provider), r)
	if err != nil {
		t.Fatalf("ParsePreferences(%s, %s): %v", provider, route, err)
	}
	return p
}
