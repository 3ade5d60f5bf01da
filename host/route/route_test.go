package route

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/catalog"
)

const gpt, llama, embed = "openai/gpt-4o", "meta/llama-3", "openai/text-embedding-3"

func TestModelErrors(t *testing.T) {
	r := New(testCatalog(), Options{})
	tests := []struct {
		name   string
		req    Request
		status int
		msg    string
	}{
		{"no model", Request{}, 400, "model: is required"},
		{"unknown", Request{Models: []string{"acme/nope"}}, 404, "model acme/nope does not exist"},
		{"unknown fallback", Request{Models: []string{gpt, "acme/nope"}}, 404, "model acme/nope does not exist"},
		{"unknown with a near id", Request{Models: []string{"openai/gpt-4"}}, 404, "model openai/gpt-4 does not exist; did you mean openai/gpt-4o?"},
		{"no vendor", Request{Models: []string{"gpt4o"}}, 400, `model: "gpt4o" is not a model id of the form <vendor>/<model_name> nor an alias; did you mean openai/gpt-4o?`},
		{"no vendor, nothing near", Request{Models: []string{"qwerty"}}, 400, `model: "qwerty" is not a model id of the form <vendor>/<model_name> nor an alias (GET /api/v1/models lists the models)`},
		{"embedding on chat model", Request{Kind: catalog.KindEmbedding, Models: []string{gpt}}, 404, "openai/gpt-4o is not an embedding model"},
		{"chat on embedding model", Request{Kind: catalog.KindChat, Models: []string{embed}}, 404, "openai/text-embedding-3 is not a chat model"},
		{"default kind is chat", Request{Models: []string{embed}}, 404, "is not a chat model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Plan(tt.req)
			if err == nil || err.Status != tt.status || err.Message != tt.msg && !strings.Contains(err.Message, tt.msg) {
				t.Fatalf("got %v, want %d %q", err, tt.status, tt.msg)
			}
		})
	}
	p, err := r.Plan(Request{Kind: catalog.KindEmbedding, Models: []string{embed}})
	if err != nil || len(p.Attempts) != 1 {
		t.Fatalf("embedding plan: %v %v", p, err)
	}
}

func TestAliases(t *testing.T) {
	c := testCatalog()
	c.Aliases = map[string]string{"gpt-4o": gpt, "llama3": llama, "gone": "acme/gone"}
	r := New(c, Options{Rand: seeded(1)})
	for alias, want := range map[string]string{"gpt-4o": gpt, "llama3": llama, gpt: gpt} {
		p, err := r.Plan(Request{Models: []string{alias}})
		if err != nil {
			t.Fatalf("%s: %v", alias, err)
		}
		if got := p.Attempts[0].Model.ID; got != want {
			t.Errorf("%s routed to %s, want %s", alias, got, want)
		}
	}
	// An alias whose model is not in the catalog is unknown.
	if _, err := r.Plan(Request{Models: []string{"gone"}}); err == nil || err.Status != 400 {
		t.Fatalf("alias of a missing model: %v", err)
	}
}

// TestMaxOutputRequireParameters: a max output above every endpoint's limit
// is a 400 naming the limit with require_parameters (not the 404 SDKs report
// as "model not found"), and clamped without.
func TestMaxOutputRequireParameters(t *testing.T) {
	c := testCatalog()
	for _, e := range c.Models[llama].Endpoints {
		e.MaxOutput = 1000 + len(e.Provider.Slug) // free: 1004, groq 1004, together 1008, deepinfra 1009
	}
	r := New(c, Options{})
	_, err := r.Plan(Request{Models: []string{llama}, MaxOutputTokens: 5000, Prefs: Preferences{RequireParameters: true}})
	want := "max_tokens: 5000 output tokens exceeds the maximum of 1009 that meta/llama-3 allows; ask for at most 1009, or drop provider.require_parameters to have it clamped"
	if err == nil || err.Status != 400 || err.Message != want {
		t.Fatalf("got %v\nwant 400 %q", err, want)
	}
	p, err := r.Plan(Request{Models: []string{llama}, MaxOutputTokens: 5000})
	if err != nil || len(p.Attempts) != 4 {
		t.Fatalf("without require_parameters: %v %v", p, err)
	}
	for _, e := range p.Attempts {
		if got, ok := ClampedOutput(e, 5000); !ok || got != e.MaxOutput {
			t.Errorf("%s: ClampedOutput = %d %v, want %d true", e.Provider.Slug, got, ok, e.MaxOutput)
		}
	}
	// A limit that rejects some endpoints while another preference rejects
	// the rest stays the 404 naming both.
	_, err = r.Plan(Request{Models: []string{llama}, MaxOutputTokens: 1005, Prefs: Preferences{RequireParameters: true, Only: []string{"free"}}})
	if err == nil || err.Status != 404 {
		t.Fatalf("mixed reasons: %v", err)
	}
}

// TestNoFallbacksOrderIgnoresCoolDown: with allow_fallbacks=false and an
// order, the first provider of the order is the one tried even while it
// cools down, so the same request gets the same provider's answer.
func TestNoFallbacksOrderIgnoresCoolDown(t *testing.T) {
	c := testCatalog()
	clk := newClock()
	r := New(c, Options{Now: clk.Now})
	openai := ep(c, gpt, "openai")
	for range 3 {
		r.Report(openai, Outcome{Status: 503, Duration: time.Second})
	}
	if !r.Stats(openai).Down {
		t.Fatal("openai should be in a cool-down")
	}
	for range 5 {
		p, err := r.Plan(Request{Models: []string{gpt}, Prefs: prefs(t, `{"order":["openai","azure"],"allow_fallbacks":false}`)})
		if err != nil {
			t.Fatal(err)
		}
		if got := slugs(p.Attempts, false); got != "openai" {
			t.Fatalf("attempts %s, want openai", got)
		}
	}
	// With fallbacks on, the cool-down still moves it last.
	p, _ := r.Plan(Request{Models: []string{gpt}, Prefs: prefs(t, `{"order":["openai","azure"]}`)})
	if got := slugs(p.Attempts, false); got != "azure,openai" {
		t.Fatalf("attempts with fallbacks %s, want azure,openai", got)
	}
}

// TestPreferenceFilters proves, per preference and for combinations, which
// endpoints are tried and in which order. Unless the case sets order or sort
// itself, sort=price makes the order deterministic: for gpt-4o the blended
// prices are deepinfra 1.75 < together 2.625 < openai 4.375 = azure 4.375.
func TestPreferenceFilters(t *testing.T) {
	tests := []struct {
		name     string
		model    string // default gpt
		provider string // provider JSON; sort=price is added when it has no order/sort
		req      Request
		want     string // providers of the attempts, in order
		strategy string // default "sort:price"
		wantErr  string // 404 message (exact)
	}{
		{name: "no preferences", want: "deepinfra,together,openai,azure"},
		{name: "only", provider: `{"only":["openai","azure"]}`, want: "openai,azure"},
		{name: "only by display name, any case", provider: `{"only":["AZURE","Together"]}`, want: "together,azure"},
		{name: "ignore", provider: `{"ignore":["deepinfra"]}`, want: "together,openai,azure"},
		{name: "ignore merged with account ignore", provider: `{"ignore":["deepinfra"]}`, req: Request{AccountIgnore: []string{"together"}}, want: "openai,azure"},
		{name: "account only alone", req: Request{AccountOnly: []string{"openai", "together"}}, want: "together,openai"},
		// Spec 2.4: only is "merged with account-wide allowed providers": a union.
		{name: "only merged with account only", provider: `{"only":["together","azure"]}`, req: Request{AccountOnly: []string{"openai", "together"}}, want: "together,openai,azure"},
		{name: "only merged with account only, none served", model: llama, provider: `{"only":["azure"]}`, req: Request{AccountOnly: []string{"openai"}},
			wantErr: "no endpoint for meta/llama-3 satisfies provider.only=[azure] merged with the account's allowed providers [openai]"},
		{name: "account only alone, none served", model: llama, req: Request{AccountOnly: []string{"openai"}},
			wantErr: "no endpoint for meta/llama-3 satisfies the account's allowed providers [openai]"},
		{name: "order", provider: `{"order":["azure","deepinfra"]}`, want: "azure,deepinfra", strategy: "order"},
		{name: "order beats sort", provider: `{"order":["openai","together"],"sort":"price"}`, want: "openai,together", strategy: "order"},
		{name: "order + only + ignore", provider: `{"order":["openai","azure","together","deepinfra"],"only":["azure","together","openai"],"ignore":["openai"]}`,
			want: "azure,together", strategy: "order"},
		{name: "order with account ignore", provider: `{"order":["deepinfra","azure"]}`, req: Request{AccountIgnore: []string{"deepinfra"}}, want: "azure", strategy: "order"},
		{name: "data_collection deny", provider: `{"data_collection":"deny"}`, want: "together,azure"},
		{name: "data_collection allow", provider: `{"data_collection":"allow"}`, want: "deepinfra,together,openai,azure"},
		{name: "zdr", provider: `{"zdr":true}`, want: "azure"},
		{name: "zdr + data_collection deny", provider: `{"zdr":true,"data_collection":"deny"}`, want: "azure"},
		{name: "enforce_distillable_text on a closed model", provider: `{"enforce_distillable_text":true}`,
			wantErr: "no endpoint for openai/gpt-4o satisfies provider.enforce_distillable_text=true"},
		{name: "enforce_distillable_text on an open model", model: llama, provider: `{"enforce_distillable_text":true}`, want: "free,deepinfra,groq,together"},
		{name: "quantizations", provider: `{"quantizations":["fp8"]}`, want: "together"},
		{name: "quantizations several", provider: `{"quantizations":["fp16","int4"]}`, want: "deepinfra,openai,azure"},
		{name: "quantizations unknown", model: llama, provider: `{"quantizations":["unknown"]}`, want: "free"},
		{name: "require_parameters", provider: `{"require_parameters":true}`, req: Request{Params: []string{"tools"}}, want: "together,openai,azure"},
		{name: "require_parameters two", provider: `{"require_parameters":true}`, req: Request{Params: []string{"tools", "top_k"}}, want: "together"},
		{name: "parameters without require_parameters", req: Request{Params: []string{"tools", "top_k"}}, want: "deepinfra,together,openai,azure"},
		{name: "max_price prompt", provider: `{"max_price":{"prompt":"2"}}`, want: "deepinfra,together"},
		{name: "max_price completion", provider: `{"max_price":{"completion":5}}`, want: "deepinfra"},
		{name: "max_price limit is inclusive", provider: `{"max_price":{"prompt":"1.5","completion":"6"}}`, want: "deepinfra,together"},
		{name: "max_price request/image/audio", provider: `{"max_price":{"request":"0","image":"0","audio":"0"}}`, want: "deepinfra,together,openai,azure"},
		{name: "sort + max_price", provider: `{"sort":"price","max_price":{"prompt":"3"}}`, want: "deepinfra,together,openai,azure"},
		{name: "sort object + max_price", provider: `{"sort":{"by":"price"},"max_price":{"completion":"4.5"}}`, want: "deepinfra"},
		{name: "max_price too low", provider: `{"max_price":{"prompt":"0.5"}}`,
			wantErr: "no endpoint for openai/gpt-4o satisfies provider.max_price.prompt=0.5"},
		{name: "context length", req: Request{PromptTokens: 30000, MaxOutputTokens: 4000}, want: "together,openai,azure"},
		{name: "context length fits", req: Request{PromptTokens: 28000, MaxOutputTokens: 4000}, want: "deepinfra,together,openai,azure"},
		{name: "max output with require_parameters", model: llama, provider: `{"require_parameters":true}`, req: Request{PromptTokens: 100, MaxOutputTokens: 2000}, want: "free,groq,together"},
		{name: "max output above a limit is clamped", model: llama, req: Request{PromptTokens: 100, MaxOutputTokens: 2000}, want: "free,deepinfra,groq,together"},
		{name: "clamped output counts for the context", model: llama, req: Request{PromptTokens: 7000, MaxOutputTokens: 4000}, want: "deepinfra"},
		{name: "allow_fallbacks false", provider: `{"allow_fallbacks":false}`, want: "deepinfra"},
		{name: "allow_fallbacks false with order", provider: `{"allow_fallbacks":false,"order":["openai","azure"]}`, want: "openai", strategy: "order"},

		{name: "zdr + data_collection deny, nothing qualifies", model: llama, provider: `{"zdr":true,"data_collection":"deny"}`,
			wantErr: "no endpoint for meta/llama-3 satisfies provider.zdr=true and provider.data_collection=deny"},
		{name: "order, none available", provider: `{"order":["groq","free"]}`,
			wantErr: "no endpoint for openai/gpt-4o satisfies provider.order=[groq, free]"},
		{name: "only unknown provider", provider: `{"only":["nope"]}`,
			wantErr: "no endpoint for openai/gpt-4o satisfies provider.only=[nope]"},
		{name: "everything ignored", provider: `{"ignore":["openai","azure"]}`, req: Request{AccountIgnore: []string{"together", "deepinfra"}},
			wantErr: "no endpoint for openai/gpt-4o satisfies provider.ignore=[openai, azure] and the account's ignored providers [together, deepinfra]"},
		{name: "three reasons", model: llama, provider: `{"zdr":true,"quantizations":["int4"],"max_price":{"completion":"0.5"}}`,
			wantErr: "no endpoint for meta/llama-3 satisfies provider.zdr=true, provider.quantizations=[int4] and provider.max_price.completion=0.5"},
		{name: "require_parameters, nothing qualifies", provider: `{"require_parameters":true}`, req: Request{Params: []string{"tools", "logit_bias"}},
			wantErr: "no endpoint for openai/gpt-4o satisfies provider.require_parameters=true with [tools, logit_bias]"},
	}
	r := New(testCatalog(), Options{Rand: seeded(1)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			model := tt.model
			if model == "" {
				model = gpt
			}
			req.Models = []string{model}
			prov := tt.provider
			if prov == "" {
				prov = `{}`
			}
			req.Prefs = prefs(t, prov)
			if len(req.Prefs.Order) == 0 && req.Prefs.Sort == SortNone {
				req.Prefs.Sort = SortPrice
			}
			p, err := r.Plan(req)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("got plan %s, want error", slugs(p.Attempts, false))
				}
				if err.Status != 404 || err.Message != tt.wantErr {
					t.Fatalf("got %d %q\nwant 404 %q", err.Status, err.Message, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := slugs(p.Attempts, false); got != tt.want {
				t.Fatalf("attempts %s, want %s", got, tt.want)
			}
			strategy := tt.strategy
			if strategy == "" {
				strategy = "sort:price"
			}
			if p.Strategy != strategy {
				t.Fatalf("strategy %q, want %q", p.Strategy, strategy)
			}
			if len(p.Available) != len(r.Catalog().Models[model].Endpoints) {
				t.Fatalf("available %d", len(p.Available))
			}
		})
	}
}

func TestNoEndpointErrorMetadata(t *testing.T) {
	r := New(testCatalog(), Options{})
	_, err := r.Plan(Request{Models: []string{llama}, Prefs: prefs(t, `{"zdr":true,"data_collection":"deny"}`)})
	if err == nil {
		t.Fatal("want error")
	}
	want := map[string]any{"provider.zdr": 3, "provider.data_collection": 3}
	if got := err.Metadata["rejected_by"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("rejected_by %v, want %v", got, want)
	}
	if got := err.Metadata["models"]; !reflect.DeepEqual(got, []string{llama}) {
		t.Fatalf("models %v", got)
	}
}

func TestDroppedParams(t *testing.T) {
	c := testCatalog()
	r := New(c, Options{})
	p, err := r.Plan(Request{Models: []string{gpt}, Params: []string{"tools", "top_k", "temperature", "tools"}, Prefs: Preferences{Sort: SortPrice}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[*catalog.Endpoint][]string{
		ep(c, gpt, "deepinfra"): {"tools"},
		ep(c, gpt, "openai"):    {"top_k"},
		ep(c, gpt, "azure"):     {"top_k"},
	}
	if !reflect.DeepEqual(p.Dropped, want) {
		t.Fatalf("dropped %v", p.Dropped)
	}
	// With require_parameters nothing is dropped: unsupported endpoints are gone.
	p, _ = r.Plan(Request{Models: []string{gpt}, Params: []string{"top_k"}, Prefs: Preferences{Sort: SortPrice, RequireParameters: true}})
	if p.Dropped != nil || slugs(p.Attempts, false) != "deepinfra,together" {
		t.Fatalf("got %s %v", slugs(p.Attempts, false), p.Dropped)
	}
}

func TestFallbackModels(t *testing.T) {
	r := New(testCatalog(), Options{Rand: seeded(2)})
	tests := []struct {
		name     string
		provider string
		route    string
		want     string
	}{
		{"partition model keeps model order", `{"sort":"price"}`, "",
			"openai/gpt-4o@deepinfra,openai/gpt-4o@together,openai/gpt-4o@openai,openai/gpt-4o@azure," +
				"meta/llama-3@free,meta/llama-3@deepinfra,meta/llama-3@groq,meta/llama-3@together"},
		{"partition none mixes by price", `{"sort":{"by":"price","partition":"none"}}`, "",
			"meta/llama-3@free,meta/llama-3@deepinfra,meta/llama-3@groq,meta/llama-3@together," +
				"openai/gpt-4o@deepinfra,openai/gpt-4o@together,openai/gpt-4o@openai,openai/gpt-4o@azure"},
		{"deprecated route sort = partition none", `{"sort":"price"}`, "sort",
			"meta/llama-3@free,meta/llama-3@deepinfra,meta/llama-3@groq,meta/llama-3@together," +
				"openai/gpt-4o@deepinfra,openai/gpt-4o@together,openai/gpt-4o@openai,openai/gpt-4o@azure"},
		{"order applies per model", `{"order":["together","groq","openai"]}`, "",
			"openai/gpt-4o@together,openai/gpt-4o@openai,meta/llama-3@together,meta/llama-3@groq"},
		{"order with partition none", `{"order":["together","groq","openai"],"sort":{"by":"price","partition":"none"}}`, "",
			"openai/gpt-4o@together,meta/llama-3@together,meta/llama-3@groq,openai/gpt-4o@openai"},
		{"filters apply to fallbacks; primary empty", `{"zdr":true,"quantizations":["fp8"],"sort":"price"}`, "",
			"meta/llama-3@groq"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var route string
			if tt.route != "" {
				route = `"` + tt.route + `"`
			}
			pr := parseBoth(t, tt.provider, route)
			p, err := r.Plan(Request{Models: []string{gpt, llama, gpt}, Prefs: pr})
			if err != nil {
				t.Fatal(err)
			}
			if got := slugs(p.Attempts, true); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			if len(p.Available) != 8 {
				t.Fatalf("available %d", len(p.Available))
			}
		})
	}
	// Load balancing: each model is balanced on its own, the primary first.
	for range 50 {
		p, _ := r.Plan(Request{Models: []string{gpt, llama}})
		for i, e := range p.Attempts {
			if want := map[bool]string{true: gpt, false: llama}[i < 4]; e.Model.ID != want {
				t.Fatalf("attempt %d is %s", i, slugs(p.Attempts, true))
			}
		}
	}
}

// TestLoadBalanceWeights checks 1,000 plans against the documented weights
// (1/blended², blended = (3·prompt + completion)/4; free endpoints get the
// largest weight) and that fallbacks follow in weight order.
func TestLoadBalanceWeights(t *testing.T) {
	c := testCatalog()
	r := New(c, Options{Rand: seeded(42)})
	w := func(prompt, completion float64) float64 { b := (3*prompt + completion) / 4; return 1 / (b * b) }
	tests := []struct {
		model   string
		weights map[string]float64
		rest    map[string]string // first pick → the fallbacks after it
	}{
		{gpt, map[string]float64{"openai": w(2.5, 10), "azure": w(2.5, 10), "together": w(1.5, 6), "deepinfra": w(1, 4)},
			map[string]string{"deepinfra": "together,openai,azure", "openai": "deepinfra,together,azure", "azure": "deepinfra,together,openai"}},
		{llama, map[string]float64{"together": w(0.9, 0.9), "groq": w(0.6, 0.8), "deepinfra": w(0.3, 0.4), "free": w(0.3, 0.4)},
			map[string]string{"together": "deepinfra,free,groq", "free": "deepinfra,groq,together"}},
	}
	const n = 1000
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			sum := 0.0
			for _, x := range tt.weights {
				sum += x
			}
			counts := map[string]int{}
			for range n {
				p, err := r.Plan(Request{Models: []string{tt.model}})
				if err != nil {
					t.Fatal(err)
				}
				if p.Strategy != "load-balance" || len(p.Attempts) != 4 {
					t.Fatalf("plan %s %s", p.Strategy, slugs(p.Attempts, false))
				}
				first := p.Attempts[0].Provider.Slug
				counts[first]++
				if want, ok := tt.rest[first]; ok {
					if got := slugs(p.Attempts[1:], false); got != want {
						t.Fatalf("after %s: %s, want %s", first, got, want)
					}
				}
			}
			for prov, x := range tt.weights {
				want := x / sum
				got := float64(counts[prov]) / n
				if math.Abs(got-want) > 0.04 {
					t.Errorf("%s chosen %.3f of the time, want %.3f ± 0.04", prov, got, want)
				}
			}
			t.Logf("%s: %v", tt.model, counts)
		})
	}
}

func TestLoadBalanceDeterministic(t *testing.T) {
	run := func() string {
		r := New(testCatalog(), Options{Rand: seeded(7)})
		var b strings.Builder
		for range 20 {
			p, _ := r.Plan(Request{Models: []string{gpt}})
			b.WriteString(p.Attempts[0].Provider.Slug + " ")
		}
		return b.String()
	}
	if a, b := run(), run(); a != b {
		t.Fatalf("same seed, different plans:\n%s\n%s", a, b)
	}
}

func TestSticky(t *testing.T) {
	c := testCatalog()
	clk := newClock()
	r := New(c, Options{Now: clk.Now, Rand: seeded(3)})
	azure := ep(c, gpt, "azure") // the least likely pick of the balancer
	r.Stick("s1", azure)

	plan := func(session string, pr Preferences) *Plan {
		t.Helper()
		p, err := r.Plan(Request{Models: []string{gpt}, SessionID: session, Prefs: pr})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for i := range 20 {
		if p := plan("s1", Preferences{}); p.Attempts[0] != azure || p.Strategy != "sticky" || len(p.Attempts) != 4 {
			t.Fatalf("plan %d: %s %s", i, p.Strategy, slugs(p.Attempts, false))
		}
	}
	// Another session is balanced as usual.
	if p := plan("s2", Preferences{}); p.Strategy != "load-balance" {
		t.Fatalf("s2: %s", p.Strategy)
	}
	// Explicit order or sort wins over stickiness; a filtered-out pin is ignored.
	if p := plan("s1", Preferences{Sort: SortPrice}); p.Attempts[0] == azure || p.Strategy != "sort:price" {
		t.Fatalf("sort: %s %s", p.Strategy, slugs(p.Attempts, false))
	}
	if p := plan("s1", Preferences{Order: []string{"openai", "azure"}}); p.Attempts[0] == azure {
		t.Fatalf("order: %s", slugs(p.Attempts, false))
	}
	if p := plan("s1", Preferences{Ignore: []string{"azure"}}); p.Strategy != "load-balance" {
		t.Fatalf("ignored pin: %s", p.Strategy)
	}

	// The pinned endpoint fails: plans move away while it is down.
	for range 3 {
		r.Report(azure, Outcome{Status: 502})
	}
	moved := map[string]int{}
	for i := range 20 {
		p := plan("s1", Preferences{})
		if p.Attempts[0] == azure || p.Strategy != "load-balance" {
			t.Fatalf("plan %d after failures: %s %s", i, p.Strategy, slugs(p.Attempts, false))
		}
		if p.Attempts[len(p.Attempts)-1] != azure {
			t.Fatalf("down endpoint should be the last resort: %s", slugs(p.Attempts, false))
		}
		moved[p.Attempts[0].Provider.Slug]++
	}
	t.Logf("after the outage: %v", moved)
	// The caller re-pins after a success elsewhere.
	together := ep(c, gpt, "together")
	r.Stick("s1", together)
	if p := plan("s1", Preferences{}); p.Attempts[0] != together || p.Strategy != "sticky" {
		t.Fatalf("re-pinned: %s", slugs(p.Attempts, false))
	}

	// Idle TTL: a use refreshes the session; an hour of silence expires it.
	clk.Add(50 * time.Minute)
	if p := plan("s1", Preferences{}); p.Strategy != "sticky" {
		t.Fatal("expired too early")
	}
	clk.Add(50 * time.Minute)
	if p := plan("s1", Preferences{}); p.Strategy != "sticky" {
		t.Fatal("use did not refresh the session")
	}
	clk.Add(61 * time.Minute)
	if p := plan("s1", Preferences{}); p.Strategy == "sticky" {
		t.Fatal("session did not expire")
	}
}

func TestStickyFallbackModelAndPartition(t *testing.T) {
	c := testCatalog()
	r := New(c, Options{Rand: seeded(4)})
	groq := ep(c, llama, "groq")
	r.Stick("s", groq)
	// Pinned to an endpoint of the fallback model: it heads that model's
	// group but the primary model still goes first.
	p, _ := r.Plan(Request{Models: []string{gpt, llama}, SessionID: "s"})
	if p.Strategy != "load-balance" || p.Attempts[4] != groq || p.Attempts[0].Model.ID != gpt {
		t.Fatalf("partition model: %s %s", p.Strategy, slugs(p.Attempts, true))
	}
	// With partition none there is one group, so the pin goes first.
	p, _ = r.Plan(Request{Models: []string{gpt, llama}, SessionID: "s", Prefs: Preferences{Partition: PartitionNone}})
	if p.Strategy != "sticky" || p.Attempts[0] != groq {
		t.Fatalf("partition none: %s %s", p.Strategy, slugs(p.Attempts, true))
	}
	// Stick ignores endpoints of other catalogs and empty sessions.
	r.Stick("", groq)
	r.Stick("x", ep(testCatalog(), llama, "groq"))
	if n := r.tab.Load().sessions.len(); n != 1 {
		t.Fatalf("%d sessions", n)
	}
}

func TestStickySessionsBounded(t *testing.T) {
	c := testCatalog()
	r := New(c, Options{MaxSessions: 64})
	e := ep(c, gpt, "openai")
	for i := range 10_000 {
		r.Stick("session-"+jsonNum(i), e)
	}
	if n := r.tab.Load().sessions.len(); n > 64 {
		t.Fatalf("%d sessions kept, cap 64", n)
	}
	// The most recent survives, the oldest is gone.
	if r.tab.Load().sessions.get("session-9999", time.Now().UnixNano()) != e {
		t.Fatal("newest session evicted")
	}
	if r.tab.Load().sessions.get("session-0", time.Now().UnixNano()) != nil {
		t.Fatal("oldest session kept")
	}
}

func jsonNum(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestOutageAndCoolDown(t *testing.T) {
	c := testCatalog()
	clk := newClock()
	r := New(c, Options{Now: clk.Now, Rand: seeded(5)})
	deepinfra := ep(c, gpt, "deepinfra")
	first := func() *catalog.Endpoint {
		t.Helper()
		p, err := r.Plan(Request{Models: []string{gpt}, Prefs: Preferences{Sort: SortPrice}})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Attempts) != 4 {
			t.Fatalf("attempts %s", slugs(p.Attempts, false))
		}
		return p.Attempts[0]
	}
	fail := func() { r.Report(deepinfra, Outcome{Status: 503, Duration: time.Second}) }

	fail()
	fail()
	if first() != deepinfra {
		t.Fatal("two failures should not trip")
	}
	r.Report(deepinfra, Outcome{Status: 400}) // the caller's fault: not counted
	r.Report(deepinfra, Outcome{Status: 422})
	if first() != deepinfra {
		t.Fatal("400/422 counted as failures")
	}
	fail()
	if first() == deepinfra {
		t.Fatal("three consecutive failures should trip")
	}
	if s := r.Stats(deepinfra); !s.Down || s.ConsecutiveFailures != 3 || !s.DownUntil.Equal(clk.Now().Add(30*time.Second)) {
		t.Fatalf("stats %+v", s)
	}
	// In-flight failures during the cool-down do not extend it.
	clk.Add(10 * time.Second)
	fail()
	clk.Add(19 * time.Second)
	if first() == deepinfra {
		t.Fatal("recovered before the cool-down")
	}
	clk.Add(2 * time.Second) // 31s after the trip
	if first() != deepinfra {
		t.Fatal("not retried after the cool-down")
	}
	// It fails again right away: down again, for twice as long.
	fail()
	if first() == deepinfra {
		t.Fatal("a failure after the cool-down should trip again")
	}
	clk.Add(59 * time.Second)
	if first() == deepinfra {
		t.Fatal("second cool-down should be 60s")
	}
	clk.Add(2 * time.Second)
	if first() != deepinfra {
		t.Fatal("not retried after the second cool-down")
	}
	// A success recovers it fully: one new failure does not trip.
	r.Report(deepinfra, Outcome{Success: true, Status: 200, TTFT: 200 * time.Millisecond, Duration: time.Second, OutputTokens: 80})
	fail()
	if first() != deepinfra {
		t.Fatal("one failure after recovery should not trip")
	}
	if s := r.Stats(deepinfra); s.Down || s.ConsecutiveFailures != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestOutageErrorRate(t *testing.T) {
	c := testCatalog()
	clk := newClock()
	r := New(c, Options{Now: clk.Now})
	e := ep(c, gpt, "openai")
	// Never three failures in a row, but 7 of 10 fail.
	pattern := "FFSFFSFFSF"
	for i, ch := range pattern {
		r.Report(e, Outcome{Success: ch == 'S', Status: map[bool]int{true: 200, false: 500}[ch == 'S']})
		clk.Add(time.Second)
		down := r.Stats(e).Down
		if want := i == len(pattern)-1; down != want {
			t.Fatalf("after %d outcomes: down=%v, want %v (%+v)", i+1, down, want, r.Stats(e))
		}
	}
	if s := r.Stats(e); s.Samples != 10 || s.Failures != 7 || math.Abs(s.ErrorRate-0.7) > 1e-9 {
		t.Fatalf("stats %+v", s)
	}
	// After the cool-down a success recovers it and old failures no longer
	// count toward the rate: a failure now does not trip.
	clk.Add(31 * time.Second)
	r.Report(e, Outcome{Success: true, Status: 200})
	r.Report(e, Outcome{Status: 500})
	if r.Stats(e).Down {
		t.Fatal("old failures tripped a recovered endpoint")
	}
	// Outcomes leave the window after five minutes.
	clk.Add(6 * time.Minute)
	if s := r.Stats(e); s.Samples != 0 || s.ErrorRate != 0 {
		t.Fatalf("window did not slide: %+v", s)
	}
}

func TestLoadBalanceSkipsDown(t *testing.T) {
	c := testCatalog()
	clk := newClock()
	r := New(c, Options{Now: clk.Now, Rand: seeded(6)})
	deepinfra := ep(c, gpt, "deepinfra") // the most likely pick
	for range 3 {
		r.Report(deepinfra, Outcome{})
	}
	for i := range 200 {
		p, _ := r.Plan(Request{Models: []string{gpt}})
		if p.Attempts[0] == deepinfra || p.Attempts[3] != deepinfra {
			t.Fatalf("plan %d: %s", i, slugs(p.Attempts, false))
		}
	}
	// Everything down: still a plan, in weight order, as a last resort.
	for _, e := range c.Models[gpt].Endpoints {
		for range 3 {
			r.Report(e, Outcome{})
		}
	}
	p, err := r.Plan(Request{Models: []string{gpt}})
	if err != nil || slugs(p.Attempts, false) != "deepinfra,together,openai,azure" {
		t.Fatalf("all down: %v %v", p, err)
	}
	// Cool-down recovery.
	clk.Add(31 * time.Second)
	seen := map[string]bool{}
	for range 200 {
		p, _ := r.Plan(Request{Models: []string{gpt}})
		seen[p.Attempts[0].Provider.Slug] = true
	}
	if !seen["deepinfra"] {
		t.Fatal("not balanced again after the cool-down")
	}
}

// report records n identical successes.
func report(r *Router, e *catalog.Endpoint, n int, ttft time.Duration, tps float64) {
	for range n {
		gen := time.Second
		r.Report(e, Outcome{Success: true, Status: 200, TTFT: ttft, Duration: ttft + gen, OutputTokens: int(tps)})
	}
}

func TestSortByLiveStats(t *testing.T) {
	c := testCatalog()
	clk := newClock()
	r := New(c, Options{Now: clk.Now, Rand: seeded(8)})
	report(r, ep(c, gpt, "openai"), 5, 200*time.Millisecond, 100)
	report(r, ep(c, gpt, "azure"), 5, 500*time.Millisecond, 50)
	report(r, ep(c, gpt, "together"), 5, time.Second, 200)
	// deepinfra has no data.

	tests := []struct {
		name, provider, want, strategy string
	}{
		{"latency ascending, unknown last", `{"sort":"latency"}`, "openai,azure,together,deepinfra", "sort:latency"},
		{"throughput descending, unknown last", `{"sort":"throughput"}`, "together,openai,azure,deepinfra", "sort:throughput"},
		{"sort price, max latency deprioritises", `{"sort":"price","preferred_max_latency":0.3}`, "deepinfra,openai,together,azure", "sort:price"},
		{"sort price, min throughput deprioritises", `{"sort":"price","preferred_min_throughput":{"p50":80}}`, "deepinfra,together,openai,azure", "sort:price"},
		{"sort price, both thresholds", `{"sort":"price","preferred_max_latency":{"p90":0.6},"preferred_min_throughput":{"p50":80}}`, "deepinfra,openai,together,azure", "sort:price"},
		{"sort latency, threshold first", `{"sort":"latency","preferred_min_throughput":150}`, "together,deepinfra,openai,azure", "sort:latency"},
		{"order ignores thresholds", `{"order":["azure","openai"],"preferred_max_latency":0.1}`, "azure,openai", "order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := r.Plan(Request{Models: []string{gpt}, Prefs: prefs(t, tt.provider)})
			if err != nil {
				t.Fatal(err)
			}
			if got := slugs(p.Attempts, false); got != tt.want || p.Strategy != tt.strategy {
				t.Fatalf("got %s %s, want %s %s", p.Strategy, got, tt.strategy, tt.want)
			}
		})
	}

	// Load balancing with a threshold: azure (50 tok/s) is never first.
	pr := prefs(t, `{"preferred_min_throughput":80}`)
	for i := range 200 {
		p, _ := r.Plan(Request{Models: []string{gpt}, Prefs: pr})
		if p.Attempts[0].Provider.Slug == "azure" || p.Attempts[3].Provider.Slug != "azure" {
			t.Fatalf("plan %d: %s", i, slugs(p.Attempts, false))
		}
	}
	// Nobody meets it: balancing goes on among all healthy endpoints.
	pr = prefs(t, `{"preferred_max_latency":0.01}`)
	c2 := New(testCatalog(), Options{Rand: seeded(9)})
	for _, e := range c2.Catalog().Models[gpt].Endpoints {
		report(c2, e, 3, time.Second, 10)
	}
	seen := map[string]bool{}
	for range 300 {
		p, _ := c2.Plan(Request{Models: []string{gpt}, Prefs: pr})
		seen[p.Attempts[0].Provider.Slug] = true
	}
	if len(seen) != 4 {
		t.Fatalf("balancing collapsed: %v", seen)
	}
}

func TestStatsPercentiles(t *testing.T) {
	c := testCatalog()
	clk := newClock()
	r := New(c, Options{Now: clk.Now})
	e := ep(c, gpt, "openai")
	for i := 1; i <= 100; i++ {
		// TTFT i·10ms; generation 1s with i tokens → i tok/s.
		r.Report(e, Outcome{Success: true, TTFT: time.Duration(i) * 10 * time.Millisecond,
			Duration: time.Duration(i)*10*time.Millisecond + time.Second, OutputTokens: i})
	}
	s := r.Stats(e)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-4 }
	if !near(s.Latency.P50, 0.50) || !near(s.Latency.P75, 0.75) || !near(s.Latency.P90, 0.90) || !near(s.Latency.P99, 0.99) {
		t.Fatalf("latency %+v", s.Latency)
	}
	if !near(s.Throughput.P50, 50) || !near(s.Throughput.P99, 99) {
		t.Fatalf("throughput %+v", s.Throughput)
	}
	// Only the last 128 outcomes are kept.
	for range 200 {
		r.Report(e, Outcome{Success: true, TTFT: 2 * time.Second, Duration: 3 * time.Second, OutputTokens: 10})
	}
	if s := r.Stats(e); s.Samples != sampleCap || s.Latency.P50 != 2 {
		t.Fatalf("ring: %+v", s)
	}
	// Non-streaming: no TTFT, the duration stands in.
	e2 := ep(c, gpt, "azure")
	r.Report(e2, Outcome{Success: true, Duration: 2 * time.Second, OutputTokens: 100})
	if s := r.Stats(e2); s.Latency.P50 != 2 || s.Throughput.P50 != 50 {
		t.Fatalf("non-streaming: %+v", s)
	}
	if s := r.Stats(ep(testCatalog(), gpt, "azure")); s != (Stats{}) {
		t.Fatalf("foreign endpoint: %+v", s)
	}
}

func TestMetadata(t *testing.T) {
	c := testCatalog()
	r := New(c, Options{})
	p, err := r.Plan(Request{Models: []string{gpt, llama}, Prefs: Preferences{Order: []string{"azure", "groq"}}})
	if err != nil {
		t.Fatal(err)
	}
	azure := ep(c, gpt, "azure")
	m := p.Metadata(gpt, azure, 1)
	b, _ := json.Marshal(m)
	var got map[string]any
	_ = json.Unmarshal(b, &got)
	if got["attempt"] != 1.0 || got["is_byok"] != false || got["region"] != "eu" || got["requested"] != gpt ||
		got["strategy"] != "order" || got["summary"] != "openai/gpt-4o via azure (order, attempt 1 of 2)" {
		t.Fatalf("metadata %s", b)
	}
	if pl, ok := got["pipeline"].([]any); !ok || len(pl) != 0 {
		t.Fatalf("pipeline %s", b)
	}
	eps := got["endpoints"].(map[string]any)
	avail := eps["available"].([]any)
	if eps["total"] != 8.0 || len(avail) != 8 {
		t.Fatalf("endpoints %s", b)
	}
	selected := 0
	for _, a := range avail {
		a := a.(map[string]any)
		if a["selected"] == true {
			selected++
			if a["model"] != gpt || a["provider"] != "azure" {
				t.Fatalf("selected %v", a)
			}
		}
	}
	if selected != 1 {
		t.Fatalf("%d selected", selected)
	}
	groq := ep(c, llama, "groq")
	if s := p.Summary(gpt, groq, 2); s != "meta/llama-3 via groq (fallback from openai/gpt-4o, order, attempt 2 of 2)" {
		t.Fatalf("summary %q", s)
	}
	if s := p.Summary(gpt, nil, 2); s != "openai/gpt-4o: no endpoint succeeded (order, 2 attempts)" {
		t.Fatalf("summary %q", s)
	}
	if m := p.Metadata(gpt, nil, 2); m.Region != "" {
		t.Fatalf("region %v", m.Region)
	}
}

func TestInherit(t *testing.T) {
	clk := newClock()
	old := New(testCatalog(), Options{Now: clk.Now})
	oc := old.Catalog()
	for range 3 {
		old.Report(ep(oc, gpt, "deepinfra"), Outcome{})
	}
	report(old, ep(oc, gpt, "openai"), 4, 300*time.Millisecond, 60)
	old.Stick("s", ep(oc, gpt, "azure"))

	nc := testCatalog()
	delete(nc.Models, llama)
	r := New(nc, Options{Now: clk.Now, Inherit: old})
	if !r.Stats(ep(nc, gpt, "deepinfra")).Down {
		t.Fatal("outage lost on reload")
	}
	if s := r.Stats(ep(nc, gpt, "openai")); s.Samples != 4 || s.Latency.P50 != 0.3 {
		t.Fatalf("stats lost on reload: %+v", s)
	}
	p, _ := r.Plan(Request{Models: []string{gpt}, SessionID: "s"})
	if p.Strategy != "sticky" || p.Attempts[0] != ep(nc, gpt, "azure") {
		t.Fatalf("session lost on reload: %s %s", p.Strategy, slugs(p.Attempts, false))
	}
}

// TestConcurrent hammers one router from many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	c := testCatalog()
	r := New(c, Options{Rand: seeded(10), MaxSessions: 32})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sorts := []SortBy{SortNone, SortPrice, SortLatency, SortThroughput}
			for i := range 300 {
				req := Request{Models: []string{gpt, llama}, SessionID: "s" + jsonNum(i%40),
					Prefs: Preferences{Sort: sorts[(g+i)%4], PreferredMaxLatency: Percentiles{P90: 0.5}}}
				p, err := r.Plan(req)
				if err != nil {
					t.Error(err)
					return
				}
				e := p.Attempts[0]
				ok := (i+g)%5 != 0
				r.Report(e, Outcome{Success: ok, Status: 200, TTFT: time.Duration(i%7) * 50 * time.Millisecond, Duration: time.Second, OutputTokens: 40})
				if ok {
					r.Stick(req.SessionID, e)
				}
				_ = r.Stats(e)
				_ = p.Metadata(gpt, e, 1)
			}
		}()
	}
	wg.Wait()
}

func TestModelWithoutEndpoints(t *testing.T) {
	c := testCatalog()
	c.Models["acme/empty"] = &catalog.Model{ID: "acme/empty", Kind: catalog.KindChat,
		Endpoints: []*catalog.Endpoint{nil, {Provider: nil}}}
	r := New(c, Options{})
	_, err := r.Plan(Request{Models: []string{"acme/empty"}})
	if err == nil || err.Status != 404 || err.Message != "no endpoint is available for acme/empty" {
		t.Fatalf("got %v", err)
	}
	// A fallback model with endpoints rescues the request.
	p, err := r.Plan(Request{Models: []string{"acme/empty", llama}, Prefs: Preferences{Sort: SortPrice}})
	if err != nil || slugs(p.Attempts, true) != "meta/llama-3@free,meta/llama-3@deepinfra,meta/llama-3@groq,meta/llama-3@together" {
		t.Fatalf("got %v %v", p, err)
	}
	if m := p.Metadata("acme/empty", p.Attempts[0], 1); m.Endpoints.Total != 4 {
		t.Fatalf("metadata %v", m)
	}
}

func TestBlendedAndWeight(t *testing.T) {
	c := testCatalog()
	if b := Blended(ep(c, gpt, "openai")); b != 4.375 {
		t.Fatalf("blended %v", b)
	}
	if w := Weight(ep(c, gpt, "deepinfra")); math.Abs(w-1/(1.75*1.75)) > 1e-12 {
		t.Fatalf("weight %v", w)
	}
	if w := Weight(ep(c, llama, "free")); w != 0 {
		t.Fatalf("free weight %v", w)
	}
}

// TestSwap replaces the catalog of a router in use: plans made before keep
// their endpoints and prices, plans made after see the new catalog, and
// outcomes and sessions reported with an old endpoint land on its successor.
func TestSwap(t *testing.T) {
	clk := newClock()
	oc := testCatalog()
	r := New(oc, Options{Now: clk.Now})
	before, err := r.Plan(Request{Models: []string{gpt}, Prefs: Preferences{Only: []string{"openai"}}})
	if err != nil {
		t.Fatal(err)
	}
	oldPrice := before.Attempts[0].Price.Prompt

	nc := testCatalog()
	ep(nc, gpt, "openai").Price.Prompt = oldPrice + 7
	delete(nc.Models, llama)
	r.Swap(nc)

	if r.Catalog() != nc {
		t.Fatal("Catalog() is not the swapped-in catalog")
	}
	if got := before.Attempts[0].Price.Prompt; got != oldPrice {
		t.Fatalf("a plan made before the swap changed price: %v, want %v", got, oldPrice)
	}
	after, err := r.Plan(Request{Models: []string{gpt}, Prefs: Preferences{Only: []string{"openai"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := after.Attempts[0].Price.Prompt; got != oldPrice+7 {
		t.Fatalf("a plan made after the swap has price %v, want %v", got, oldPrice+7)
	}
	if _, err := r.Plan(Request{Models: []string{llama}}); err == nil || err.Status != 404 {
		t.Fatalf("a model removed by the swap still routes: %v", err)
	}
	// The request planned before the swap finishes after it.
	for range 3 {
		r.Report(before.Attempts[0], Outcome{})
	}
	if !r.Stats(ep(nc, gpt, "openai")).Down {
		t.Fatal("failures reported with an endpoint of the old catalog were lost")
	}
	r.Stick("s", ep(oc, gpt, "azure"))
	p, _ := r.Plan(Request{Models: []string{gpt}, SessionID: "s"})
	if p.Strategy != "sticky" || p.Attempts[0] != ep(nc, gpt, "azure") {
		t.Fatalf("a session pinned with an old endpoint: %s %s", p.Strategy, slugs(p.Attempts, false))
	}
}

// TestSwapConcurrent swaps catalogs while goroutines plan and report (run
// with -race): every plan is made over one whole catalog.
func TestSwapConcurrent(t *testing.T) {
	r := New(testCatalog(), Options{Rand: seeded(3)})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				p, err := r.Plan(Request{Models: []string{gpt}})
				if err != nil {
					t.Error(err)
					return
				}
				for _, e := range p.Attempts {
					if e.Model != p.Attempts[0].Model {
						t.Error("a plan mixes endpoints of two catalogs")
						return
					}
				}
				r.Report(p.Attempts[0], Outcome{Success: true, Status: 200})
			}
		}()
	}
	for range 50 {
		r.Swap(testCatalog())
	}
	wg.Wait()
}
