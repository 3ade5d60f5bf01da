package dispatch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/hangup"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/wasm"
)

// The attempt loop's contract, over loopback upstreams speaking OpenAI's
// format through the built OpenAI adapter (make wasm): the order endpoints
// are tried in, which failures fall back, that the hold is settled exactly
// once whatever happens, and the two time limits.

// openAIRegistry is a module registry with the built OpenAI adapter active.
func openAIRegistry(t *testing.T) *modules.Registry {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join(repoRoot, "build", "wasm", "openai.wasm"))
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	mf, err := os.ReadFile(filepath.Join(repoRoot, "plugins", "openai", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "modules.db"))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	e := wasm.NewEngine(wasm.Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero-cache"), Log: quiet})
	reg, err := modules.Open(db, e, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(); _ = e.Close(context.Background()); _ = db.Close() })
	if _, err := reg.PublishAndActivate(context.Background(), "", mf, bin, "test"); err != nil {
		t.Fatal(err)
	}
	return reg
}

// fakeUpstream is one provider's loopback server; it records the requests it
// got and answers with its behaviour.
type fakeUpstream struct {
	slug   string
	srv    *httptest.Server
	mu     sync.Mutex
	calls  int
	answer func(w http.ResponseWriter, r *http.Request)
}

func (u *fakeUpstream) count() int { u.mu.Lock(); defer u.mu.Unlock(); return u.calls }

const completion = `{"id":"up-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
	`"message":{"role":"assistant","content":"hello from %s"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}}`

// behaviours of an upstream.
func ok(slug string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(strings.Replace(completion, "%s", slug, 1)))
	}
}

func status(code int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"error":{"message":"upstream says ` + http.StatusText(code) + `"}}`))
	}
}

// hang answers nothing until the gateway gives up on the request. It reads
// the body first: the server notices a closed connection (and ends the
// request's context) only once the body is read.
func hang(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// fixture is a dispatcher over a fresh ledger and router, and a model
// v/m served by one endpoint per upstream, tried in the order given.
type fixture struct {
	d    *Dispatcher
	key  *keys.Key
	ups  []*fakeUpstream
	slug []string
}

const credit = 10 * billing.NanosPerUSD

func newFixture(t *testing.T, reg *modules.Registry, answers ...func(http.ResponseWriter, *http.Request)) *fixture {
	t.Helper()
	return newPricedFixture(t, reg, nil, answers...)
}

// newPricedFixture is newFixture whose i-th endpoint has prices[i] (when
// given; else $1 and $2 per million tokens).
func newPricedFixture(t *testing.T, reg *modules.Registry, prices []catalog.Price, answers ...func(http.ResponseWriter, *http.Request)) *fixture {
	t.Helper()
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	l, err := billing.Open(db, billing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if _, err := l.TopUp("acct", credit, "test"); err != nil {
		t.Fatal(err)
	}
	m := &catalog.Model{ID: "v/m", Kind: catalog.KindChat, ContextLength: 8192}
	c := &catalog.Catalog{Models: map[string]*catalog.Model{m.ID: m}, Providers: map[string]*catalog.Provider{}}
	f := &fixture{key: &keys.Key{Hash: "keyhash", AccountID: "acct"}}
	for i, a := range answers {
		u := &fakeUpstream{slug: string(rune('a' + i)), answer: a}
		u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u.mu.Lock()
			u.calls++
			u.mu.Unlock()
			u.answer(w, r)
		}))
		t.Cleanup(u.srv.Close)
		p := &catalog.Provider{Slug: u.slug, Name: u.slug, BaseURL: u.srv.URL, Adapter: "openai", DataCollection: "allow"}
		c.Providers[p.Slug] = p
		price := catalog.Price{Prompt: 1, Completion: 2}
		if i < len(prices) {
			price = prices[i]
		}
		m.Endpoints = append(m.Endpoints, &catalog.Endpoint{Model: m, Provider: p, UpstreamModel: "m",
			Price: price, ContextLength: 8192, MaxOutput: 1000, Supported: map[string]bool{}})
		f.ups = append(f.ups, u)
		f.slug = append(f.slug, u.slug)
	}
	f.d = &Dispatcher{Router: route.New(c, route.Options{}), Ledger: l, Modules: reg,
		Client: &http.Client{Transport: &http.Transport{}}, AttemptTimeout: 5 * time.Second, RequestTimeout: time.Minute,
		Log: slog.New(slog.DiscardHandler)}
	return f
}

func (f *fixture) job(genID string, noFallbacks bool) *Job {
	return &Job{Key: f.key, GenID: genID, Read: ReadChat, PromptBound: 20,
		Route: route.Request{Models: []string{"v/m"}, Prefs: route.Preferences{Order: f.slug, NoFallbacks: noFallbacks}},
		Body:  []byte(`{"model":"v/m","messages":[{"role":"user","content":"hi"}]}`)}
}

// settled checks the ledger after a run: nothing held any more, the record
// is status, and the account paid exactly the record's charge.
func (f *fixture) settled(t *testing.T, genID, status string) *billing.Generation {
	t.Helper()
	g, err := f.d.Ledger.Generation(genID)
	if err != nil {
		t.Fatalf("no generation record: %v", err)
	}
	b := f.d.Ledger.Balance("acct")
	if g.Status != status {
		t.Errorf("record status %q, want %q (%+v)", g.Status, status, g)
	}
	if b.Held != 0 {
		t.Errorf("%s still held after the run", b.Held)
	}
	if b.Usage != g.Charged || b.Balance != credit-g.Charged {
		t.Errorf("the account paid %s (balance %s), the record charged %s", b.Usage, b.Balance, g.Charged)
	}
	return g
}

// TestRunFallback: endpoints are tried in the plan's order; a retryable
// failure (5xx, 429, a time-out) goes on to the next, one another endpoint
// cannot fix (400) or fallbacks turned off stops; a run whose every
// attempt failed returns the last failure, settled with nothing charged.
func TestRunFallback(t *testing.T) {
	reg := openAIRegistry(t)
	cases := []struct {
		name        string
		answers     []func(http.ResponseWriter, *http.Request)
		noFallbacks bool
		attemptTO   time.Duration
		wantFrom    string // the provider that answered; "" when the run fails
		wantStatus  int
		wantCalls   []int // requests each upstream got
	}{
		{name: "first answers", answers: hf(ok("a"), ok("b")), wantFrom: "a", wantCalls: []int{1, 0}},
		{name: "5xx falls back", answers: hf(status(500), ok("b"), ok("c")), wantFrom: "b", wantCalls: []int{1, 1, 0}},
		{name: "429 falls back", answers: hf(status(429), ok("b")), wantFrom: "b", wantCalls: []int{1, 1}},
		{name: "two failures, then the third", answers: hf(status(502), status(503), ok("c")), wantFrom: "c", wantCalls: []int{1, 1, 1}},
		{name: "a silent upstream times out and falls back", answers: hf(hang, ok("b")), attemptTO: 300 * time.Millisecond,
			wantFrom: "b", wantCalls: []int{1, 1}},
		{name: "400 does not fall back", answers: hf(status(400), ok("b")), wantStatus: 400, wantCalls: []int{1, 0}},
		{name: "no fallbacks asked for", answers: hf(status(500), ok("b")), noFallbacks: true, wantStatus: 502, wantCalls: []int{1, 0}},
		{name: "every attempt fails: the last failure", answers: hf(status(500), status(503)), wantStatus: 503, wantCalls: []int{1, 1}},
		{name: "only a silent upstream", answers: hf(hang), attemptTO: 300 * time.Millisecond, wantStatus: apierr.StatusEdgeTimeout, wantCalls: []int{1}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, reg, tc.answers...)
			if tc.attemptTO > 0 {
				f.d.AttemptTimeout = tc.attemptTO
			}
			gen := "gen-fallback-" + string(rune('a'+i))
			res, aerr := f.d.Run(context.Background(), f.job(gen, tc.noFallbacks))
			var calls []int
			for _, u := range f.ups {
				calls = append(calls, u.count())
			}
			if !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("upstream requests %v, want %v", calls, tc.wantCalls)
			}
			if tc.wantFrom == "" {
				if aerr == nil || aerr.Status != tc.wantStatus {
					t.Fatalf("error %+v, want status %d", aerr, tc.wantStatus)
				}
				if res == nil || res.Attempts != len(tc.wantCalls)-countZero(tc.wantCalls) {
					t.Fatalf("result %+v: want the failed attempts counted", res)
				}
				g := f.settled(t, gen, billing.StatusError)
				if g.Charged != 0 {
					t.Errorf("a failed run charged %s", g.Charged)
				}
				if g.Attempts != res.Attempts {
					t.Errorf("the record counts %d attempts, the run made %d", g.Attempts, res.Attempts)
				}
				return
			}
			if aerr != nil {
				t.Fatalf("error %d %s", aerr.Status, aerr.Message)
			}
			if got := res.Endpoint().Provider.Slug; got != tc.wantFrom {
				t.Fatalf("served by %s, want %s", got, tc.wantFrom)
			}
			if !strings.Contains(string(res.Body), "hello from "+tc.wantFrom) {
				t.Fatalf("body %s", res.Body)
			}
			if res.Settled() {
				t.Fatal("a successful run is settled before its caller settles it")
			}
			if held := f.d.Ledger.Balance("acct").Held; held <= 0 {
				t.Fatalf("nothing held while the answer is unsettled (held %s)", held)
			}
			out, aerr := res.Settle(res.Body, res.Usage(res.Body, nil), "stop")
			if aerr != nil {
				t.Fatal(aerr.Message)
			}
			g := f.settled(t, gen, billing.StatusSuccess)
			if g.Provider != tc.wantFrom || g.Charged <= 0 || g.Attempts != res.Attempts {
				t.Errorf("record provider %s charged %s after %d attempts; served by %s after %d", g.Provider, g.Charged, g.Attempts, tc.wantFrom, res.Attempts)
			}
			if !strings.Contains(string(out), `"cost":`+g.Charged.USD()) {
				t.Errorf("the answer's usage does not carry the charge %s: %s", g.Charged.USD(), out)
			}
		})
	}
}

// TestSettleOnce: a run's hold is settled exactly once: settling again,
// failing or cancelling after the settlement changes nothing, and Record
// gives the one record.
func TestSettleOnce(t *testing.T) {
	reg := openAIRegistry(t)
	after := []struct {
		name string
		then func(r *Result)
	}{
		{"settle again", func(r *Result) {
			_, _ = r.Settle(r.Body, billing.Usage{PromptTokens: 1e6, CompletionTokens: 1e6}, "stop")
		}},
		{"cancel", func(r *Result) { r.Cancel(billing.Usage{PromptTokens: 1e6}) }},
		{"fail", func(r *Result) { r.Fail(apierr.New(502, "broken"), billing.Usage{PromptTokens: 1e6}) }},
	}
	for i, tc := range after {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, reg, ok("a"))
			gen := "gen-once-" + string(rune('a'+i))
			res, aerr := f.d.Run(context.Background(), f.job(gen, false))
			if aerr != nil {
				t.Fatal(aerr.Message)
			}
			if res.Record() != nil {
				t.Fatal("a record before settlement")
			}
			if _, aerr := res.Settle(res.Body, res.Usage(res.Body, nil), "stop"); aerr != nil {
				t.Fatal(aerr.Message)
			}
			first := f.settled(t, gen, billing.StatusSuccess)
			tc.then(res)
			again := f.settled(t, gen, billing.StatusSuccess)
			if again.Charged != first.Charged || again.Usage != first.Usage {
				t.Errorf("after %s the record changed: charged %s → %s, usage %+v → %+v", tc.name, first.Charged, again.Charged, first.Usage, again.Usage)
			}
			if r := res.Record(); r == nil || r.Charged != first.Charged {
				t.Errorf("Record() = %+v, want the settled record", r)
			}
		})
	}
}

// TestRunLimits: the request's own limit (the caller's deadline) ends the
// run without a fallback (408); a client that left ends it without a
// fallback either, settled as cancelled (499).
func TestRunLimits(t *testing.T) {
	reg := openAIRegistry(t)
	t.Run("request deadline", func(t *testing.T) {
		f := newFixture(t, reg, hang, ok("b"))
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, aerr := f.d.Run(ctx, f.job("gen-deadline", false))
		if aerr == nil || aerr.Status != http.StatusRequestTimeout || aerr.Retryable {
			t.Fatalf("error %+v, want a 408 that is not retried", aerr)
		}
		if n := f.ups[1].count(); n != 0 {
			t.Errorf("the fallback got %d requests after the request's time was up", n)
		}
		f.settled(t, "gen-deadline", billing.StatusError)
	})
	t.Run("client gone", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		leave := func(w http.ResponseWriter, r *http.Request) {
			cancel(hangup.ErrClientGone) // the client leaves while the upstream works
			hang(w, r)
		}
		f := newFixture(t, reg, leave, ok("b"))
		_, aerr := f.d.Run(ctx, f.job("gen-gone", false))
		if aerr == nil || aerr.Status != 499 {
			t.Fatalf("error %+v, want 499", aerr)
		}
		if n := f.ups[1].count(); n != 0 {
			t.Errorf("the fallback got %d requests after the client left", n)
		}
		g := f.settled(t, "gen-gone", billing.StatusCancelled)
		if g.Usage.PromptTokens == 0 {
			t.Errorf("a request that reached the upstream was settled without its prompt: %+v", g.Usage)
		}
	})
	t.Run("the fallback costs more than the account has", func(t *testing.T) {
		// b's worst case, 1,020 tokens at $100,000 per million, is past
		// the account's $10: the run ends after a's failure.
		f := newPricedFixture(t, reg, []catalog.Price{{Prompt: 1, Completion: 2}, {Prompt: 1e5, Completion: 1e5}}, status(500), ok("b"))
		res, aerr := f.d.Run(context.Background(), f.job("gen-dear", false))
		if aerr == nil || aerr.Status != http.StatusPaymentRequired {
			t.Fatalf("error %+v, want 402", aerr)
		}
		if n := f.ups[1].count(); n != 0 {
			t.Errorf("the endpoint the account cannot pay for got %d requests", n)
		}
		g := f.settled(t, "gen-dear", billing.StatusError)
		if res == nil || res.Attempts != 1 || g.Attempts != 1 {
			t.Errorf("one attempt made; the result says %v, the record %d", res, g.Attempts)
		}
	})
	t.Run("no funds: nothing attempted", func(t *testing.T) {
		f := newFixture(t, reg, ok("a"))
		f.key = &keys.Key{Hash: "other", AccountID: "empty"}
		res, aerr := f.d.Run(context.Background(), f.job("gen-poor", false))
		if aerr == nil || aerr.Status != http.StatusPaymentRequired || res != nil {
			t.Fatalf("result %v error %+v, want a 402 and no result", res, aerr)
		}
		if n := f.ups[0].count(); n != 0 {
			t.Errorf("the upstream got %d requests with no funds held", n)
		}
		if _, err := f.d.Ledger.Generation("gen-poor"); !errors.Is(err, billing.ErrNotFound) {
			t.Errorf("a record for a request never held: %v", err)
		}
	})
}

func hf(fs ...func(http.ResponseWriter, *http.Request)) []func(http.ResponseWriter, *http.Request) {
	return fs
}

func countZero(xs []int) int {
	n := 0
	for _, x := range xs {
		if x == 0 {
			n++
		}
	}
	return n
}
