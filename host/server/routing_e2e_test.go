package server_test

// Routing acceptance tests over loopback HTTP: provider preferences, fault
// fallbacks, sticky sessions and load balancing, each observed the way a
// client observes it (the response's provider and model, service_metadata,
// status codes, the stream) plus what each fake upstream received (its
// request count: nothing may be sent twice).

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// rtStart starts a test gateway with the OpenAI adapter as its only module:
// these tests need no other, and loading each Go-built module takes seconds
// under the race detector.
func rtStart(t *testing.T, opts gatewaytest.Options) *gatewaytest.Gateway {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"openai.json", "openai.wasm"} {
		b, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "build", "wasm", f))
		if err != nil {
			t.Fatalf("%v (run make wasm)", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mutate := opts.Mutate
	opts.Mutate = func(c *config.Config) {
		c.ModulesDir = dir
		if mutate != nil {
			mutate(c)
		}
	}
	return start(t, opts)
}

// rtCounts snapshots the request count of every fake upstream.
func rtCounts(g *gatewaytest.Gateway) map[string]int64 {
	out := map[string]int64{}
	for slug, up := range g.Upstreams {
		out[slug] = up.Count()
	}
	return out
}

// rtWantCalls checks that, since before, each upstream received exactly the
// number of requests in want (absent: none).
func rtWantCalls(t *testing.T, g *gatewaytest.Gateway, before map[string]int64, want map[string]int64) {
	t.Helper()
	now := rtCounts(g)
	for slug := range now {
		if got := now[slug] - before[slug]; got != want[slug] {
			t.Errorf("upstream %s received %d requests, want %d (all deltas: %v)", slug, got, want[slug], rtDelta(before, now))
		}
	}
}

func rtDelta(before, now map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range now {
		if v != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// rtWantMeta checks service_metadata of a served request: the strategy,
// which attempt served it out of how many planned, and that exactly the
// serving endpoint is marked selected among total available endpoints.
func rtWantMeta(t *testing.T, meta gjson.Result, requested, model, provider, strategy string, attempt, of, total int) {
	t.Helper()
	if !meta.Exists() {
		t.Fatal("no service_metadata although X-Service-Metadata: enabled was sent")
	}
	if got := meta.Get("requested").Str; got != requested {
		t.Errorf("service_metadata.requested %q, want %q", got, requested)
	}
	if got := meta.Get("strategy").Str; got != strategy {
		t.Errorf("service_metadata.strategy %q, want %q (%s)", got, strategy, meta.Raw)
	}
	if got := meta.Get("attempt").Int(); got != int64(attempt) {
		t.Errorf("service_metadata.attempt %d, want %d (%s)", got, attempt, meta.Raw)
	}
	sum := meta.Get("summary").Str
	if !strings.HasPrefix(sum, model+" via "+provider+" (") || !strings.HasSuffix(sum, fmt.Sprintf("attempt %d of %d)", attempt, of)) {
		t.Errorf("service_metadata.summary %q, want %q via %q, attempt %d of %d", sum, model, provider, attempt, of)
	}
	if model != requested && !strings.Contains(sum, "fallback from "+requested) {
		t.Errorf("service_metadata.summary %q does not say the request fell back from %s", sum, requested)
	}
	if got := meta.Get("endpoints.total").Int(); got != int64(total) {
		t.Errorf("service_metadata.endpoints.total %d, want %d", got, total)
	}
	var selected []string
	for _, ep := range meta.Get("endpoints.available").Array() {
		if ep.Get("selected").Bool() {
			selected = append(selected, ep.Get("model").Str+"@"+ep.Get("provider").Str)
		}
	}
	if len(selected) != 1 || selected[0] != model+"@"+provider {
		t.Errorf("endpoints marked selected: %v, want exactly [%s@%s]", selected, model, provider)
	}
}

// rtPrefsYAML: three providers of test/chat whose prices rank differently
// per dimension, and whose privacy properties differ:
//
//	provider  prompt  completion  blended (3p+c)/4  data_collection  zdr    params
//	acme      1       6           2.25              allow            false  temperature
//	bolt      2       2           2.00 (cheapest)   deny             false  temperature, top_k
//	core      3       9           4.50              allow            true   temperature, top_k
//
// test/solo lives on its own provider (made to fail), test/backup on bolt
// and test/pricey on core, for the `models` and `route` cases.
const rtPrefsYAML = `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: acme, name: Acme Cloud, adapter: openai, base_url: "{{url:acme}}", data_collection: allow, region: us}
  - {slug: bolt, name: Bolt AI, adapter: openai, base_url: "{{url:bolt}}", data_collection: deny, region: eu}
  - {slug: core, name: Core Compute, adapter: openai, base_url: "{{url:core}}", data_collection: allow, zdr: true, region: us}
  - {slug: solo, adapter: openai, base_url: "{{url:solo}}", data_collection: deny, region: us}
models:
  - id: test/chat
    context_length: 8192
    endpoints:
      - {provider: acme, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 6}, supported_parameters: [temperature, max_tokens]}
      - {provider: bolt, upstream_model: echo, max_output: 1024, price: {prompt: 2, completion: 2}, supported_parameters: [temperature, top_k, max_tokens]}
      - {provider: core, upstream_model: echo, max_output: 1024, price: {prompt: 3, completion: 9}, supported_parameters: [temperature, top_k, max_tokens]}
  - id: test/solo
    endpoints:
      - {provider: solo, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}
  - id: test/backup
    endpoints:
      - {provider: bolt, upstream_model: echo, max_output: 1024, price: {prompt: 2, completion: 2}}
  - id: test/pricey
    endpoints:
      - {provider: core, upstream_model: echo, max_output: 1024, price: {prompt: 3, completion: 9}}
`

// TestRoutingPreferences: each provider preference, sent through the HTTP
// API, decides which endpoint serves the request.
func TestRoutingPreferences(t *testing.T) {
	g := rtStart(t, gatewaytest.Options{Providers: []string{"acme", "bolt", "core", "solo"}, ConfigYAML: rtPrefsYAML})
	// test/solo's only endpoint is broken; only the `models` case uses it.
	g.Upstreams["solo"].SetFaults(demo.Faults{Status: 500})

	msgs := `"messages":[{"role":"user","content":"route me"}]`
	chat := func(fields string) string { return `{"model":"test/chat",` + msgs + fields + `}` }
	type tc struct {
		name     string
		body     string
		status   int
		model    string // serving model; default test/chat
		provider string
		strategy string
		attempt  int // default 1
		of       int // planned attempts
		total    int // available endpoints; default 3
		calls    map[string]int64
		err      []string         // error message parts
		rejected map[string]int64 // error.metadata.rejected_by
		sent     func(t *testing.T, upstream gjson.Result)
	}
	cases := []tc{
		{name: "order", body: chat(`,"provider":{"order":["core","acme"]}`),
			provider: "core", strategy: "order", of: 2},
		{name: "only", body: chat(`,"provider":{"only":["bolt"]}`),
			provider: "bolt", strategy: "load-balance", of: 1},
		{name: "only two with sort", body: chat(`,"provider":{"only":["acme","core"],"sort":"price"}`),
			provider: "acme", strategy: "sort:price", of: 2},
		{name: "ignore by display name and slug", body: chat(`,"provider":{"ignore":["ACME CLOUD","bolt"]}`),
			provider: "core", strategy: "load-balance", of: 1},
		{name: "order + only + ignore", body: chat(`,"provider":{"order":["acme","bolt","core"],"only":["bolt","core"],"ignore":["bolt"]}`),
			provider: "core", strategy: "order", of: 1},
		{name: "sort price is by blended price", body: chat(`,"provider":{"sort":"price"}`),
			provider: "bolt", strategy: "sort:price", of: 3},
		{name: "sort + max_price removes the sort winner", body: chat(`,"provider":{"sort":"price","max_price":{"prompt":"1.5"}}`),
			provider: "acme", strategy: "sort:price", of: 1},
		{name: "sort + max_price at the limit passes", body: chat(`,"provider":{"sort":"price","max_price":{"completion":6}}`),
			provider: "bolt", strategy: "sort:price", of: 2},
		{name: "max_price excludes every endpoint", body: chat(`,"provider":{"max_price":{"prompt":"0.5"}}`),
			status: 404, err: []string{"test/chat", "provider.max_price.prompt=0.5"},
			rejected: map[string]int64{"provider.max_price.prompt": 3}},
		{name: "zdr", body: chat(`,"provider":{"zdr":true}`),
			provider: "core", strategy: "load-balance", of: 1},
		{name: "data_collection deny", body: chat(`,"provider":{"data_collection":"deny"}`),
			provider: "bolt", strategy: "load-balance", of: 1},
		{name: "zdr + data_collection deny, none qualifies", body: chat(`,"provider":{"zdr":true,"data_collection":"deny"}`),
			status: 404, err: []string{"provider.zdr=true", "provider.data_collection=deny"},
			rejected: map[string]int64{"provider.zdr": 2, "provider.data_collection": 2}},
		{name: "require_parameters", body: chat(`,"top_k":3,"temperature":0.5,"provider":{"order":["acme","core"],"require_parameters":true}`),
			provider: "core", strategy: "order", of: 1,
			sent: func(t *testing.T, up gjson.Result) {
				if up.Get("top_k").Int() != 3 || up.Get("temperature").Float() != 0.5 {
					t.Errorf("core supports top_k and temperature but received %s", up.Raw)
				}
			}},
		{name: "without require_parameters the unsupported one is dropped", body: chat(`,"top_k":3,"temperature":0.5,"provider":{"order":["acme","core"]}`),
			provider: "acme", strategy: "order", of: 2,
			sent: func(t *testing.T, up gjson.Result) {
				if up.Get("top_k").Exists() || up.Get("temperature").Float() != 0.5 {
					t.Errorf("acme does not support top_k: it must be dropped and temperature kept; received %s", up.Raw)
				}
			}},
		{name: "require_parameters nobody supports", body: chat(`,"top_a":0.2,"provider":{"require_parameters":true}`),
			status: 404, err: []string{"provider.require_parameters=true", "top_a"},
			rejected: map[string]int64{"provider.require_parameters": 3}},
		{name: "allow_fallbacks false plans one attempt", body: chat(`,"provider":{"order":["acme","bolt"],"allow_fallbacks":false}`),
			provider: "acme", strategy: "order", of: 1},
		{name: "models fallback list", body: `{"model":"test/solo","models":["test/backup"],` + msgs + `}`,
			model: "test/backup", provider: "bolt", strategy: "load-balance", attempt: 2, of: 2, total: 2,
			calls: map[string]int64{"solo": 1, "bolt": 1}},
		{name: "route fallback keeps the primary model first", body: `{"model":"test/pricey","models":["test/chat"],"provider":{"sort":"price"},"route":"fallback",` + msgs + `}`,
			model: "test/pricey", provider: "core", strategy: "sort:price", of: 4, total: 4},
		{name: "route sort ranks all models together", body: `{"model":"test/pricey","models":["test/chat"],"provider":{"sort":"price"},"route":"sort",` + msgs + `}`,
			model: "test/chat", provider: "bolt", strategy: "sort:price", of: 4, total: 4},
		{name: "explicit partition wins over route", body: `{"model":"test/pricey","models":["test/chat"],"provider":{"sort":{"by":"price","partition":"model"}},"route":"sort",` + msgs + `}`,
			model: "test/pricey", provider: "core", strategy: "sort:price", of: 4, total: 4},
		{name: "route null", body: chat(`,"route":null,"provider":{"order":["bolt"]}`),
			provider: "bolt", strategy: "order", of: 1},
		{name: "route with an unknown value", body: chat(`,"route":"cheapest"`),
			status: 400, err: []string{"route"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := rtCounts(g)
			resp, body := post(t, g, "/chat/completions", c.body, "X-Service-Metadata", "enabled")
			if c.status != 0 && c.status != 200 {
				wantError(t, resp, body, c.status, c.err[0])
				for _, part := range c.err[1:] {
					if !strings.Contains(body.Get("error.message").Str, part) {
						t.Errorf("error message %q does not name %q", body.Get("error.message").Str, part)
					}
				}
				for k, n := range c.rejected {
					if got := body.Get("error.metadata.rejected_by").Get(gjson.Escape(k)).Int(); got != n {
						t.Errorf("error.metadata.rejected_by[%s] = %d, want %d (%s)", k, got, n, body.Get("error.metadata").Raw)
					}
				}
				rtWantCalls(t, g, before, nil) // nothing went upstream
				return
			}
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body.Raw)
			}
			model := c.model
			if model == "" {
				model = "test/chat"
			}
			if body.Get("provider").Str != c.provider || body.Get("model").Str != model {
				t.Fatalf("served by %s@%s, want %s@%s", body.Get("model").Str, body.Get("provider").Str, model, c.provider)
			}
			attempt, total := max(c.attempt, 1), c.total
			if total == 0 {
				total = 3
			}
			requested := gjson.Get(c.body, "model").Str
			rtWantMeta(t, body.Get("service_metadata"), requested, model, c.provider, c.strategy, attempt, c.of, total)
			calls := c.calls
			if calls == nil {
				calls = map[string]int64{c.provider: 1}
			}
			rtWantCalls(t, g, before, calls)
			if c.sent != nil {
				c.sent(t, gjson.ParseBytes(g.Upstreams[c.provider].Last().Body))
			}
		})
	}
}

// rtSSE is a streaming chat response as the client saw it.
type rtSSE struct {
	status int
	header http.Header
	raw    string
	chunks []gjson.Result // data events other than [DONE], in order
	done   int            // number of [DONE] sentinels
	last   bool           // [DONE] was the last event
	body   gjson.Result   // the JSON body of a non-stream (error) answer
}

func rtStream(t *testing.T, g *gatewaytest.Gateway, body string, headers ...string) rtSSE {
	t.Helper()
	req, _ := http.NewRequest("POST", g.URL+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := rtSSE{status: resp.StatusCode, header: resp.Header}
	var raw strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		raw.WriteString(sc.Text())
		raw.WriteByte('\n')
	}
	out.raw = raw.String()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		out.body = gjson.Parse(out.raw)
		return out
	}
	for _, line := range strings.Split(out.raw, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		out.last = data == "[DONE]"
		if data == "[DONE]" {
			out.done++
			continue
		}
		out.chunks = append(out.chunks, gjson.Parse(data))
	}
	return out
}

func (s rtSSE) text() string {
	var b strings.Builder
	for _, c := range s.chunks {
		b.WriteString(c.Get("choices.0.delta.content").Str)
	}
	return b.String()
}

// TestRoutingFaults: an upstream failure on the first endpoint moves the
// request to the second (or ends it with the documented status), and no
// upstream receives the request twice. Every case has its own model on its
// own pair of fake providers (<case>a first, <case>b second), so one
// gateway serves them all without their health statistics mixing.
func TestRoutingFaults(t *testing.T) {
	const refused = "http://127.0.0.1:1/v1" // nothing listens on port 1
	// Hand-made upstreams, each counting the requests it receives.
	custom := map[string]*atomic.Int64{} // base URL → requests
	serve := func(h http.HandlerFunc) string {
		n := new(atomic.Int64)
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1); h(w, r) }))
		t.Cleanup(hs.Close)
		custom[hs.URL+"/v1"] = n
		return hs.URL + "/v1"
	}
	// 200 and headers, then never the body.
	stalled := serve(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	// 200 with JSON that is not a chat completion.
	garbage := serve(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
	})

	// 200 whose JSON nests ten million levels deep: a syntax check that
	// recursed per level (gjson.Valid) overflowed the goroutine's stack,
	// a fatal error that ended the whole gateway (jsonwalk.Valid).
	deepJSON := serve(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices":` + strings.Repeat("[", 10_000_000)))
	})
	deepSSE := serve(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":" + strings.Repeat("[", 10_000_000) + "\n\n"))
	})

	type tc struct {
		name   string
		a, b   demo.Faults
		aURL   string // instead of a fake upstream for <case>a
		stream bool
		prefs  string // extra provider preferences
		status int    // default 200
		served string // "a" or "b" on success
		calls  [2]int64
		errIn  string // on error: the message names this provider ("a"/"b")
		// noContent: a stream served by "a" that ends in its error chunk
		// before any content.
		noContent bool
	}
	slow := demo.Faults{Delay: 10 * time.Second} // past the attempt limit below
	cases := []tc{
		{name: "500", a: demo.Faults{Status: 500}, served: "b", calls: [2]int64{1, 1}},
		{name: "429", a: demo.Faults{Status: 429}, served: "b", calls: [2]int64{1, 1}},
		{name: "529", a: demo.Faults{Status: 529}, served: "b", calls: [2]int64{1, 1}},
		// The provider's 402 is the operator's balance with it, not the
		// caller's: 503, and the next provider serves (was a 400, no fallback).
		{name: "402 from the provider falls back", a: demo.Faults{Status: 402}, served: "b", calls: [2]int64{1, 1}},
		{name: "402 from the only provider is 503", a: demo.Faults{Status: 402}, prefs: `,"allow_fallbacks":false`, status: 503, errIn: "a", calls: [2]int64{1, 0}},
		{name: "slow first byte", a: slow, served: "b", calls: [2]int64{1, 1}},
		{name: "connection refused", aURL: refused, served: "b", calls: [2]int64{0, 1}},
		{name: "headers then no body", aURL: stalled, served: "b", calls: [2]int64{1, 1}},
		{name: "200 that is not a chat completion", aURL: garbage, served: "b", calls: [2]int64{1, 1}},
		{name: "200 nested ten million deep", aURL: deepJSON, served: "b", calls: [2]int64{1, 1}},
		// The deep event is dropped as no chunk; the stream then ends
		// without one, as any stream of only unreadable events does.
		{name: "stream nested ten million deep", stream: true, aURL: deepSSE, served: "a", noContent: true, calls: [2]int64{1, 0}},
		{name: "400 is the caller's fault: no fallback", a: demo.Faults{Status: 400}, status: 400, errIn: "a", calls: [2]int64{1, 0}},
		{name: "every endpoint fails: last error", a: demo.Faults{Status: 429}, b: demo.Faults{Status: 500}, status: 502, errIn: "b", calls: [2]int64{1, 1}},
		{name: "every endpoint fails: last error 529", a: demo.Faults{Status: 500}, b: demo.Faults{Status: 529}, status: 529, errIn: "b", calls: [2]int64{1, 1}},
		{name: "allow_fallbacks false returns the primary's error", a: demo.Faults{Status: 500}, prefs: `,"allow_fallbacks":false`, status: 502, errIn: "a", calls: [2]int64{1, 0}},
		{name: "stream 500 before content", stream: true, a: demo.Faults{Status: 500}, served: "b", calls: [2]int64{1, 1}},
		{name: "stream 429 before content", stream: true, a: demo.Faults{Status: 429}, served: "b", calls: [2]int64{1, 1}},
		{name: "stream slow first byte", stream: true, a: slow, served: "b", calls: [2]int64{1, 1}},
		{name: "stream connection refused", stream: true, aURL: refused, served: "b", calls: [2]int64{0, 1}},
		{name: "stream cut after content: no fallback", stream: true, a: demo.Faults{CutAfter: 3}, served: "a", calls: [2]int64{1, 0}},
		{name: "stream every endpoint fails", stream: true, a: demo.Faults{Status: 500}, b: demo.Faults{Status: 503}, status: 503, errIn: "b", calls: [2]int64{1, 1}},
	}

	var y strings.Builder
	y.WriteString("demo: false\nproviders:\n")
	var fakes []string
	for i, c := range cases {
		a, b := fmt.Sprintf("f%da", i), fmt.Sprintf("f%db", i)
		aURL := "{{url:" + a + "}}"
		if c.aURL != "" {
			aURL = c.aURL
		} else {
			fakes = append(fakes, a)
		}
		fakes = append(fakes, b)
		fmt.Fprintf(&y, "  - {slug: %s, adapter: openai, base_url: %q, data_collection: deny}\n", a, aURL)
		fmt.Fprintf(&y, "  - {slug: %s, adapter: openai, base_url: \"{{url:%s}}\", data_collection: deny}\n", b, b)
	}
	y.WriteString("models:\n")
	for i := range cases {
		fmt.Fprintf(&y, "  - id: test/f%d\n    endpoints:\n", i)
		fmt.Fprintf(&y, "      - {provider: f%da, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}\n", i)
		fmt.Fprintf(&y, "      - {provider: f%db, upstream_model: echo, max_output: 1024, price: {prompt: 2, completion: 4}}\n", i)
	}
	g := rtStart(t, gatewaytest.Options{Providers: fakes, ConfigYAML: y.String(), Mutate: func(c *config.Config) {
		// Long enough for a healthy loopback answer on a busy machine,
		// short enough to keep the slow cases quick.
		c.Timeouts.Attempt = config.Duration(time.Second)
	}})

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := fmt.Sprintf("f%da", i), fmt.Sprintf("f%db", i)
			slug := map[string]string{"a": a, "b": b}
			if up := g.Upstreams[a]; up != nil {
				up.SetFaults(c.a)
			}
			g.Upstreams[b].SetFaults(c.b)
			var customBefore int64
			if n := custom[c.aURL]; n != nil {
				customBefore = n.Load()
			}
			model := fmt.Sprintf("test/f%d", i)
			words := "fallback case " + fmt.Sprint(i)
			body := fmt.Sprintf(`{"model":%q,"stream":%v,"provider":{"order":[%q,%q]%s},"messages":[{"role":"user","content":%q}]}`,
				model, c.stream, a, b, c.prefs, words)

			var status int
			var errBody, final gjson.Result
			var genID string
			if c.stream {
				s := rtStream(t, g, body, "X-Service-Metadata", "enabled")
				status, errBody, genID = s.status, s.body, s.header.Get("X-Generation-Id")
				if status == 200 {
					if s.done != 1 || !s.last {
						t.Fatalf("want exactly one [DONE], at the end; got %d (last: %v):\n%s", s.done, s.last, s.raw)
					}
					for _, ch := range s.chunks {
						if p := ch.Get("provider").Str; p != slug[c.served] {
							t.Fatalf("a chunk from provider %q in a stream served by %s:\n%s", p, slug[c.served], s.raw)
						}
					}
					final = s.chunks[len(s.chunks)-1]
					if c.served == "a" { // cut after content
						if s.text() == "" && !c.noContent {
							t.Fatalf("the upstream sent content before the cut, the client got none:\n%s", s.raw)
						}
						if final.Get("choices.0.finish_reason").Str != "error" || final.Get("error.code").Int() != 502 ||
							!strings.Contains(final.Get("error.message").Str, a) {
							t.Fatalf("the cut stream does not end with an error chunk naming %s: %s", a, final.Raw)
						}
						for _, ch := range s.chunks[:len(s.chunks)-1] {
							if ch.Get("error").Exists() {
								t.Fatalf("error before the end of the stream: %s", ch.Raw)
							}
						}
					} else {
						if !strings.Contains(s.text(), "You said: "+words) {
							t.Fatalf("the stream is not one complete answer: %q\n%s", s.text(), s.raw)
						}
						if strings.Contains(s.raw, `"error"`) {
							t.Fatalf("a clean fallback stream carries an error:\n%s", s.raw)
						}
					}
				}
			} else {
				resp, res := post(t, g, "/chat/completions", body, "X-Service-Metadata", "enabled")
				status, errBody, final, genID = resp.StatusCode, res, res, resp.Header.Get("X-Generation-Id")
				if c.status == 0 && status != 200 {
					t.Fatalf("status %d: %s", status, res.Raw)
				}
				if status == 529 && resp.Header.Get("Retry-After") == "" {
					t.Error("529 without Retry-After")
				}
			}

			if want := max(c.status, 200); status != want {
				t.Fatalf("status %d, want %d: %s", status, want, errBody.Raw)
			}
			if c.status > 200 {
				if got := errBody.Get("error.code").Int(); got != int64(c.status) {
					t.Fatalf("error.code %d, want %d: %s", got, c.status, errBody.Raw)
				}
				if msg := errBody.Get("error.message").Str; !strings.Contains(msg, slug[c.errIn]) {
					t.Errorf("error message %q does not name provider %s", msg, slug[c.errIn])
				}
				upstream := map[string]int{"a": c.a.Status, "b": c.b.Status}[c.errIn]
				if md := errBody.Get("error.metadata"); md.Get("provider_name").Str != slug[c.errIn] || md.Get("upstream_status").Int() != int64(upstream) {
					t.Errorf("error.metadata %s, want provider_name %s and upstream_status %d", md.Raw, slug[c.errIn], upstream)
				}
				// The routing metadata of the failure says what happened.
				meta := errBody.Get("service_metadata")
				made := c.calls[0] + c.calls[1]
				if meta.Get("attempt").Int() != made {
					t.Errorf("service_metadata.attempt %d, but %d upstream attempts were made: %s", meta.Get("attempt").Int(), made, meta.Raw)
				}
				if sum := meta.Get("summary").Str; !strings.Contains(sum, fmt.Sprintf(", %d attempt", made)) {
					t.Errorf("service_metadata.summary %q, but %d upstream attempts were made", sum, made)
				}
				if !meta.Get("pipeline").IsArray() {
					t.Errorf("service_metadata.pipeline is %s, want a list (spec 2.2): %s", meta.Get("pipeline").Raw, meta.Raw)
				}
			} else {
				if c.served == "b" {
					if final.Get("provider").Str != b || final.Get("model").Str != model {
						t.Fatalf("served by %s@%s, want %s@%s: %s", final.Get("model").Str, final.Get("provider").Str, model, b, final.Raw)
					}
					meta := final.Get("service_metadata")
					rtWantMeta(t, meta, model, model, b, "order", 2, 2, 2)
					if final.Get("usage.cost").Float() <= 0 {
						t.Errorf("no cost on the answer: %s", final.Get("usage").Raw)
					}
				}
				if genID == "" {
					t.Fatal("no X-Generation-Id")
				}
				gen := generation(t, g, g.Key, genID)
				made := c.calls[0] + c.calls[1]
				if c.aURL == refused {
					made++ // the refused connection was an attempt too
				}
				if gen.Get("attempts").Int() != made || gen.Get("provider_name").Str != slug[c.served] {
					t.Errorf("generation: %d attempts by %s, want %d by %s: %s", gen.Get("attempts").Int(), gen.Get("provider_name").Str, made, slug[c.served], gen.Raw)
				}
			}

			// Nothing sent twice, and nothing sent to the second endpoint
			// when there must be no fallback.
			if up := g.Upstreams[a]; up != nil && up.Count() != c.calls[0] {
				t.Errorf("%s received %d requests, want %d", a, up.Count(), c.calls[0])
			}
			if n := custom[c.aURL]; n != nil {
				if got := n.Load() - customBefore; got != c.calls[0] {
					t.Errorf("%s (%s) received %d requests, want %d", a, c.aURL, got, c.calls[0])
				}
			}
			if n := g.Upstreams[b].Count(); n != c.calls[1] {
				t.Errorf("%s received %d requests, want %d", b, n, c.calls[1])
			}
		})
	}
}

// rtEqualPriceYAML: models each served by three providers at one price, so
// load balancing alone would spread a session's requests.
func rtEqualPriceYAML(models map[string][]string) (string, []string) {
	var y strings.Builder
	y.WriteString("demo: false\nproviders:\n")
	var slugs []string
	ids := make([]string, 0, len(models))
	for id := range models {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		for _, p := range models[id] {
			if !slices.Contains(slugs, p) {
				slugs = append(slugs, p)
				fmt.Fprintf(&y, "  - {slug: %s, adapter: openai, base_url: \"{{url:%s}}\", data_collection: deny}\n", p, p)
			}
		}
	}
	y.WriteString("models:\n")
	for _, id := range ids {
		fmt.Fprintf(&y, "  - id: %s\n    endpoints:\n", id)
		for _, p := range models[id] {
			fmt.Fprintf(&y, "      - {provider: %s, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}\n", p)
		}
	}
	return y.String(), slugs
}

// TestRoutingStickySessions: the requests of a session (session_id in the
// body, or the x-session-id header) stay on one endpoint while it is
// healthy; when it fails the session moves once and stays moved.
func TestRoutingStickySessions(t *testing.T) {
	yml, slugs := rtEqualPriceYAML(map[string][]string{
		"test/body":   {"p1", "p2", "p3"},
		"test/header": {"q1", "q2", "q3"},
		"test/both":   {"r1", "r2", "r3"},
	})
	g := rtStart(t, gatewaytest.Options{Providers: slugs, ConfigYAML: yml})

	send := func(t *testing.T, model, session, header string) gjson.Result {
		t.Helper()
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"stick"}]`
		if session != "" {
			body += `,"session_id":"` + session + `"`
		}
		body += `}`
		hdr := []string{"X-Service-Metadata", "enabled"}
		if header != "" {
			hdr = append(hdr, "X-Session-Id", header)
		}
		resp, res := post(t, g, "/chat/completions", body, hdr...)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, res.Raw)
		}
		return res
	}

	for _, c := range []struct{ name, model, body, header string }{
		{"session_id in the body", "test/body", "sess-body", ""},
		{"x-session-id header", "test/header", "", "sess-header"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := rtCounts(g)
			first := send(t, c.model, c.body, c.header)
			pinned := first.Get("provider").Str
			for i := 2; i <= 20; i++ {
				res := send(t, c.model, c.body, c.header)
				if p := res.Get("provider").Str; p != pinned {
					t.Fatalf("request %d of the session went to %s, the session is on %s", i, p, pinned)
				}
				if s := res.Get("service_metadata.strategy").Str; s != "sticky" {
					t.Fatalf("request %d: strategy %q, want sticky", i, s)
				}
			}
			rtWantCalls(t, g, before, map[string]int64{pinned: 20})

			// The pinned endpoint starts failing: one failed attempt, then
			// the session moves and stays on its new endpoint.
			g.Upstreams[pinned].SetFaults(demo.Faults{Status: 500})
			t.Cleanup(func() { g.Upstreams[pinned].SetFaults(demo.Faults{}) })
			before = rtCounts(g)
			res := send(t, c.model, c.body, c.header)
			moved := res.Get("provider").Str
			if moved == pinned || res.Get("service_metadata.attempt").Int() != 2 {
				t.Fatalf("the failing pinned endpoint %s still served, or no fallback: %s", pinned, res.Raw)
			}
			for i := 0; i < 10; i++ {
				res := send(t, c.model, c.body, c.header)
				if p := res.Get("provider").Str; p != moved {
					t.Fatalf("after moving to %s the session went to %s", moved, p)
				}
				if s := res.Get("service_metadata.strategy").Str; s != "sticky" || res.Get("service_metadata.attempt").Int() != 1 {
					t.Fatalf("after moving: strategy %q attempt %d, want sticky on attempt 1", s, res.Get("service_metadata.attempt").Int())
				}
			}
			rtWantCalls(t, g, before, map[string]int64{pinned: 1, moved: 11})
		})
	}

	t.Run("the body wins over the header", func(t *testing.T) {
		x := send(t, "test/both", "sess-A", "").Get("provider").Str
		// Find a header session pinned elsewhere (each new session is
		// balanced over three equal endpoints: 2/3 chance per try).
		var hdr, y string
		for i := 0; i < 40 && (y == "" || y == x); i++ {
			hdr = fmt.Sprintf("sess-B%d", i)
			y = send(t, "test/both", "", hdr).Get("provider").Str
		}
		if y == x {
			t.Fatal("40 new sessions all landed on one of three equal endpoints")
		}
		for i := 0; i < 5; i++ {
			if p := send(t, "test/both", "sess-A", hdr).Get("provider").Str; p != x {
				t.Fatalf("body session_id sess-A is on %s, header session %s on %s; both given, served by %s", x, hdr, y, p)
			}
		}
		if p := send(t, "test/both", "", hdr).Get("provider").Str; p != y {
			t.Fatalf("header session %s moved from %s to %s", hdr, y, p)
		}
	})
}

// TestRoutingLoadBalancing: with no preferences the first attempt is drawn
// with the weights of docs/routing.md, weight = 1/blended², blended =
// (3·prompt + completion)/4; a free endpoint gets the largest weight of its
// model.
func TestRoutingLoadBalancing(t *testing.T) {
	type ep struct {
		provider           string
		prompt, completion float64
	}
	// The example table of docs/routing.md, and a model with a free endpoint.
	models := map[string][]ep{
		"test/gpt":  {{"deepinfra", 1, 4}, {"together", 1.5, 6}, {"openai", 2.5, 10}, {"azure", 2.5, 10}},
		"test/free": {{"freebie", 0, 0}, {"together", 1.5, 6}, {"openai", 2.5, 10}},
	}
	docShares := map[string]float64{"deepinfra": 0.567, "together": 0.252, "openai": 0.091, "azure": 0.091}
	requests := map[string]int{"test/gpt": 300, "test/free": 200}

	var y strings.Builder
	y.WriteString("demo: false\nproviders:\n")
	slugs := []string{"deepinfra", "together", "openai", "azure", "freebie"}
	for _, p := range slugs {
		fmt.Fprintf(&y, "  - {slug: %s, adapter: openai, base_url: \"{{url:%s}}\", data_collection: deny}\n", p, p)
	}
	y.WriteString("models:\n")
	for _, id := range []string{"test/gpt", "test/free"} {
		fmt.Fprintf(&y, "  - id: %s\n    endpoints:\n", id)
		for _, e := range models[id] {
			fmt.Fprintf(&y, "      - {provider: %s, upstream_model: echo, max_output: 256, price: {prompt: %g, completion: %g}}\n", e.provider, e.prompt, e.completion)
		}
	}
	g := rtStart(t, gatewaytest.Options{Providers: slugs, ConfigYAML: y.String()})

	for _, id := range []string{"test/gpt", "test/free"} {
		t.Run(id, func(t *testing.T) {
			// Expected shares from the documented formula.
			w := map[string]float64{}
			maxW, sum := 0.0, 0.0
			for _, e := range models[id] {
				if b := (3*e.prompt + e.completion) / 4; b > 0 {
					w[e.provider] = 1 / (b * b)
					maxW = max(maxW, w[e.provider])
				}
			}
			for _, e := range models[id] {
				if w[e.provider] == 0 {
					w[e.provider] = maxW
				}
				sum += w[e.provider]
			}
			if id == "test/gpt" { // the doc's table agrees with its formula
				for p, share := range docShares {
					if math.Abs(w[p]/sum-share) > 0.001 {
						t.Errorf("docs/routing.md gives %s %.1f%%, its formula %.1f%%", p, 100*share, 100*w[p]/sum)
					}
				}
			}

			before := rtCounts(g)
			n := requests[id]
			served := map[string]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			jobs := make(chan int)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range jobs {
						resp, b, err := g.Request("POST", "/chat/completions", `{"model":"`+id+`","messages":[{"role":"user","content":"balance"}]}`)
						if err != nil || resp.StatusCode != 200 {
							t.Errorf("request failed: %v %s", err, b)
							continue
						}
						mu.Lock()
						served[gjson.GetBytes(b, "provider").Str]++
						mu.Unlock()
					}
				}()
			}
			for i := range n {
				jobs <- i
			}
			close(jobs)
			wg.Wait()

			// Each request reached exactly the upstream that answered it.
			want := map[string]int64{}
			for p, k := range served {
				want[p] = int64(k)
			}
			rtWantCalls(t, g, before, want)

			// Pearson's chi-square against the documented shares; the bounds
			// are the 99.99th percentiles for 3 and 2 degrees of freedom, so
			// a correct balancer fails this once in 10,000 runs.
			chi2 := 0.0
			var report []string
			for _, e := range models[id] {
				exp := float64(n) * w[e.provider] / sum
				d := float64(served[e.provider]) - exp
				chi2 += d * d / exp
				report = append(report, fmt.Sprintf("%s %d (expected %.1f)", e.provider, served[e.provider], exp))
			}
			bound := map[int]float64{3: 21.11, 2: 18.42}[len(models[id])-1]
			if chi2 > bound {
				t.Errorf("split %s: chi-square %.1f > %.2f, not the documented weights", strings.Join(report, ", "), chi2, bound)
			}
			t.Logf("%s: %s, chi-square %.2f", id, strings.Join(report, ", "), chi2)
		})
	}
}
