package route

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/catalog"
)

// toolAnswers reports n successful answers of e whose tool calls were
// valid (ok) or not.
func toolAnswers(r *Router, e *catalog.Endpoint, n int, ok bool) {
	v := ToolCallsInvalid
	if ok {
		v = ToolCallsValid
	}
	for range n {
		r.Report(e, Outcome{Success: true, Status: 200, TTFT: 100 * time.Millisecond, Duration: time.Second, OutputTokens: 50, ToolCalls: v})
	}
}

// TestVariants: a model id's :nitro, :floor, :exacto and :free suffix ranks
// or filters that model's endpoints as OpenRouter's model variants do.
func TestVariants(t *testing.T) {
	c := testCatalog()
	r := New(c, Options{Now: newClock().Now, Rand: seeded(3)})
	// Throughput: together 200, openai 100, azure 50 tok/s; deepinfra none.
	report(r, ep(c, gpt, "openai"), 5, 200*time.Millisecond, 100)
	report(r, ep(c, gpt, "azure"), 5, 500*time.Millisecond, 50)
	report(r, ep(c, gpt, "together"), 5, time.Second, 200)
	// Tool calls: azure 4 of 4 valid, openai 3 of 4, together 1 of 4;
	// deepinfra never answered with tool calls.
	toolAnswers(r, ep(c, gpt, "azure"), 4, true)
	toolAnswers(r, ep(c, gpt, "openai"), 3, true)
	toolAnswers(r, ep(c, gpt, "openai"), 1, false)
	toolAnswers(r, ep(c, gpt, "together"), 1, true)
	toolAnswers(r, ep(c, gpt, "together"), 3, false)

	tests := []struct {
		name     string
		models   []string
		provider string
		want     string
		strategy string
	}{
		{"nitro: throughput first, no data last", []string{gpt + ":nitro"}, `{}`, "together,openai,azure,deepinfra", "sort:throughput"},
		{"floor: cheapest first", []string{gpt + ":floor"}, `{}`, "deepinfra,together,openai,azure", "sort:price"},
		{"exacto: valid tool-call rate first, no data last", []string{gpt + ":exacto"}, `{}`, "azure,openai,together,deepinfra", "sort:exacto"},
		{"free: only the free endpoint", []string{llama + ":free"}, `{}`, "free", "load-balance"},
		{"free with floor on the fallback", []string{llama + ":free", gpt + ":floor"}, `{}`,
			llama + "@free," + gpt + "@deepinfra," + gpt + "@together," + gpt + "@openai," + gpt + "@azure", "load-balance"},
		{"explicit sort wins over the variant", []string{gpt + ":nitro"}, `{"sort":"price"}`, "deepinfra,together,openai,azure", "sort:price"},
		{"explicit order wins over the variant", []string{gpt + ":floor"}, `{"order":["azure","openai"]}`, "azure,openai", "order"},
		{"variant of the fallback, partition none", []string{llama, gpt + ":floor"}, `{"sort":{"by":"price","partition":"none"}}`,
			llama + "@free," + llama + "@deepinfra," + llama + "@groq," + llama + "@together," + gpt + "@deepinfra," + gpt + "@together," + gpt + "@openai," + gpt + "@azure", "sort:price"},
		{"nitro thresholds still deprioritise", []string{gpt + ":nitro"}, `{"preferred_max_latency":0.3}`, "openai,deepinfra,together,azure", "sort:throughput"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := r.Plan(Request{Models: tt.models, Prefs: prefs(t, tt.provider)})
			if err != nil {
				t.Fatal(err)
			}
			if got := slugs(p.Attempts, len(tt.models) > 1); got != tt.want || p.Strategy != tt.strategy {
				t.Fatalf("got %s %s, want %s %s", p.Strategy, got, tt.strategy, tt.want)
			}
		})
	}
}

// TestVariantErrors: :free on a model without a free endpoint is the usual
// 404 naming what rejected the endpoints; a suffix that names no variant is
// part of an unknown model id.
func TestVariantErrors(t *testing.T) {
	c := testCatalog()
	r := New(c, Options{Rand: seeded(1)})
	_, err := r.Plan(Request{Models: []string{gpt + ":free"}})
	if err == nil || err.Status != 404 || !strings.Contains(err.Message, ":free variant") {
		t.Fatalf(":free without free endpoints: %v", err)
	}
	if by := err.Metadata["rejected_by"].(map[string]any); by["variant.free"] != 4 {
		t.Fatalf("rejected_by = %v", by)
	}
	if _, err := r.Plan(Request{Models: []string{gpt + ":turbo"}}); err == nil || err.Status != 404 {
		t.Fatalf("unknown suffix: %v", err)
	}
	// A variant on an embedding model is still not a chat model.
	if _, err := r.Plan(Request{Models: []string{"openai/text-embedding-3:floor"}}); err == nil || err.Status != 404 {
		t.Fatalf("embedding model: %v", err)
	}
}

// TestVariantCatalogIDWins: a catalog id that ends in a variant's name is
// that model, not the variant of another.
func TestVariantCatalogIDWins(t *testing.T) {
	c := testCatalog()
	m := &catalog.Model{ID: llama + ":free", Kind: catalog.KindChat, ContextLength: 8192}
	paid := &catalog.Endpoint{Model: m, Provider: c.Providers["groq"], UpstreamModel: m.ID, Price: catalog.Price{Prompt: 1, Completion: 1}, Supported: map[string]bool{}}
	m.Endpoints = []*catalog.Endpoint{paid}
	c.Models[m.ID] = m
	r := New(c, Options{Rand: seeded(1)})
	p, err := r.Plan(Request{Models: []string{llama + ":free"}})
	if err != nil || p.Attempts[0] != paid {
		t.Fatalf("got %v, %v; want the catalog's own %s:free", p, err, llama)
	}
}

// TestVariantResolve: an alias keeps its variant, so the request body names
// the catalog id with the suffix the client asked for.
func TestVariantResolve(t *testing.T) {
	c := testCatalog()
	c.Aliases = map[string]string{"gpt-4o": gpt}
	r := New(c, Options{})
	for in, want := range map[string]string{"gpt-4o:nitro": gpt + ":nitro", gpt + ":floor": gpt + ":floor", "gpt-4o": gpt} {
		if got, err := r.Resolve(in); err != nil || got != want {
			t.Errorf("Resolve(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := r.Resolve("nothing:nitro"); err == nil {
		t.Error("an unknown short name with a variant resolved")
	}
}

// TestToolCallRate: the window's tool-call statistics count only answers
// that made tool calls.
func TestToolCallRate(t *testing.T) {
	c := testCatalog()
	clk := newClock()
	r := New(c, Options{Now: clk.Now})
	e := ep(c, gpt, "openai")
	report(r, e, 3, time.Second, 10) // no tool calls: not counted
	toolAnswers(r, e, 3, true)
	toolAnswers(r, e, 1, false)
	if s := r.Stats(e); s.ToolCalls != 4 || s.ToolCallRate != 0.75 {
		t.Fatalf("ToolCalls %d rate %v, want 4 and 0.75", s.ToolCalls, s.ToolCallRate)
	}
	clk.Add(6 * time.Minute) // out of the window
	if s := r.Stats(e); s.ToolCalls != 0 || s.ToolCallRate != 0 {
		t.Fatalf("after the window: %+v", s)
	}
}

func TestSplitVariant(t *testing.T) {
	for in, want := range map[string]struct {
		base string
		v    Variant
	}{
		"a/b:nitro": {"a/b", Nitro}, "a/b:floor": {"a/b", Floor}, "a/b:exacto": {"a/b", Exacto},
		"a/b:free": {"a/b", Free}, "a/b:online": {"a/b", Online}, "a/b": {"a/b", NoVariant},
		"a/b:beta": {"a/b:beta", NoVariant}, ":free": {":free", NoVariant}, "a/b:": {"a/b:", NoVariant},
	} {
		if b, v := SplitVariant(in); b != want.base || v != want.v {
			t.Errorf("SplitVariant(%q) = %q, %v; want %q, %v", in, b, v, want.base, want.v)
		}
	}
}
