package gateway_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// catalogYAML is the test catalog with test/chat at the given prompt and
// completion prices ($/M tokens) and an alias to it.
func catalogYAML(prompt, completion int) string {
	return fmt.Sprintf(`demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: alpha, name: alpha, adapter: openai, base_url: "{{url:alpha}}"}
models:
  - id: test/chat
    kind: chat
    context_length: 8192
    aliases: [chatty]
    endpoints:
      - {provider: alpha, upstream_model: echo, max_output: 1024, price: {prompt: %d, completion: %d}}
`, prompt, completion)
}

func startReloadable(t *testing.T) *gatewaytest.Gateway {
	t.Helper()
	g, err := gatewaytest.Start(gatewaytest.Options{ConfigYAML: catalogYAML(1, 2), ConfigFile: true, Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

const hello = `{"model":"chatty","messages":[{"role":"user","content":"hello there"}],"max_tokens":16}`

func chat(t *testing.T, g *gatewaytest.Gateway) gjson.Result {
	t.Helper()
	resp, b, err := g.Request("POST", "/chat/completions", hello)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("chat: %d %s", resp.StatusCode, b)
	}
	return gjson.ParseBytes(b)
}

// wantCost checks usage.cost against the prices in $/M tokens.
func wantCost(t *testing.T, body gjson.Result, prompt, completion float64) {
	t.Helper()
	u := body.Get("usage")
	want := (u.Get("prompt_tokens").Float()*prompt + u.Get("completion_tokens").Float()*completion) / 1e6
	if got := u.Get("cost").Float(); got <= 0 || fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", want) {
		t.Fatalf("usage.cost %v, want %v at $%v/$%v per M (%s)", got, want, prompt, completion, u.Raw)
	}
}

func reload(t *testing.T, g *gatewaytest.Gateway, key string) (int, gjson.Result) {
	t.Helper()
	resp, b, err := g.Request("POST", "/admin/reload", "", "Authorization", "Bearer "+key)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, gjson.ParseBytes(b)
}

// TestReloadUnderLoad reloads the catalog, cycling through three price
// sets, for as long as 8 clients send 25 requests each: no request fails,
// each is charged wholly at one of the price sets (never a mix of two
// catalogs), and a price change applies to the requests sent after the
// reload that made it.
func TestReloadUnderLoad(t *testing.T) {
	g := startReloadable(t)
	wantCost(t, chat(t, g), 1, 2)

	const clients, perClient, maxReloads = 8, 25, 500
	prices := [][2]float64{{1, 2}, {2, 3}, {3, 4}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	fail := func(f string, a ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(f, a...))
		mu.Unlock()
	}
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perClient {
				resp, b, err := g.Request("POST", "/chat/completions", hello)
				if err != nil || resp.StatusCode != 200 {
					fail("%v %v %s", err, resp, b)
					continue
				}
				u := gjson.GetBytes(b, "usage")
				got := fmt.Sprintf("%.9f", u.Get("cost").Float())
				ok := false
				for _, p := range prices {
					want := (u.Get("prompt_tokens").Float()*p[0] + u.Get("completion_tokens").Float()*p[1]) / 1e6
					ok = ok || got == fmt.Sprintf("%.9f", want)
				}
				if !ok {
					fail("cost %s matches none of the catalogs' prices (%s)", got, u.Raw)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	reloads := 0
	for loading := true; loading && reloads < maxReloads; reloads++ {
		p := prices[reloads%len(prices)]
		if err := g.WriteConfig(catalogYAML(int(p[0]), int(p[1]))); err != nil {
			t.Fatal(err)
		}
		if st, body := reload(t, g, g.Key); st != 200 || body.Get("data.models").Int() != 1 {
			t.Fatalf("reload %d: %d %s", reloads, st, body.Raw)
		}
		select {
		case <-done:
			loading = false
		default:
		}
	}
	<-done
	t.Logf("%d reloads during %d requests", reloads, clients*perClient)
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed during %d reloads, first: %s", len(failures), clients*perClient, reloads, failures[0])
	}

	if err := g.WriteConfig(catalogYAML(5, 7)); err != nil {
		t.Fatal(err)
	}
	if st, body := reload(t, g, g.Key); st != 200 {
		t.Fatalf("reload: %d %s", st, body.Raw)
	}
	wantCost(t, chat(t, g), 5, 7)
	// /models lists the new price too.
	_, b, _ := g.Request("GET", "/models", "")
	if p := gjson.GetBytes(b, `data.#(id=="test/chat").pricing.prompt`).String(); p != "0.000005" {
		t.Fatalf("/models prompt price %q after reload, want 0.000005 (%s)", p, b)
	}
}

// TestReloadRefusesInvalid: a file that does not build a catalog is refused
// with its reason, and the old catalog keeps serving.
func TestReloadRefusesInvalid(t *testing.T) {
	g := startReloadable(t)
	cases := []struct{ name, yml, reason string }{
		{"yaml", "models: [", "config: yaml"},
		{"unknown field", catalogYAML(1, 2) + "modles: []\n", "field modles not found"},
		{"bad model id", strings.Replace(catalogYAML(1, 2), "id: test/chat", "id: chat", 1), `model id "chat" must be <vendor>/<model_name>`},
		{"alias to nothing", catalogYAML(1, 2) + "aliases: {fast: test/none}\n", `alias "fast" names model "test/none", which is not defined`},
		{"adapter not loaded", strings.Replace(catalogYAML(1, 2), "adapter: openai", "adapter: nosuch", 1), `adapter module "nosuch" is not loaded`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := g.WriteConfig(tc.yml); err != nil {
				t.Fatal(err)
			}
			st, body := reload(t, g, g.Key)
			if st != http.StatusUnprocessableEntity || !strings.Contains(body.Get("error.message").Str, tc.reason) ||
				!strings.Contains(body.Get("error.message").Str, "previous configuration keeps serving") {
				t.Fatalf("reload of an invalid file: %d %s, want 422 naming %q", st, body.Raw, tc.reason)
			}
			wantCost(t, chat(t, g), 1, 2)
		})
	}
}

// TestReloadOperatorOnly: an ordinary key and a tenant's management key
// cannot reload the gateway's configuration.
func TestReloadOperatorOnly(t *testing.T) {
	g := startReloadable(t)
	_, b, err := g.Request("POST", "/keys", `{"name":"plain"}`)
	if err != nil {
		t.Fatal(err)
	}
	plain := gjson.GetBytes(b, "key").Str
	if plain == "" {
		t.Fatalf("create key: %s", b)
	}
	if st, body := reload(t, g, plain); st != http.StatusForbidden {
		t.Fatalf("reload with an ordinary key: %d %s", st, body.Raw)
	}
	if st, body := reload(t, g, "sk-sy-v1-nonsense"); st != http.StatusUnauthorized {
		t.Fatalf("reload with a wrong key: %d %s", st, body.Raw)
	}
}

// waitPrice sends requests until their cost is at the given prices ($/M
// tokens), for at most 10 s.
func waitPrice(t *testing.T, g *gatewaytest.Gateway, prompt, completion float64, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		u := chat(t, g).Get("usage")
		want := (u.Get("prompt_tokens").Float()*prompt + u.Get("completion_tokens").Float()*completion) / 1e6
		if fmt.Sprintf("%.9f", u.Get("cost").Float()) == fmt.Sprintf("%.9f", want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the price did not change within 10s (%s)", what, u.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReloadOnFileChange: saving the file reloads it; an invalid save is
// refused and the next valid one applies.
func TestReloadOnFileChange(t *testing.T) {
	g := startReloadable(t)
	if err := g.GW.WatchFile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteConfig(catalogYAML(3, 4)); err != nil {
		t.Fatal(err)
	}
	waitPrice(t, g, 3, 4, "file change")
	if err := g.WriteConfig("models: ["); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteConfig(catalogYAML(6, 8)); err != nil {
		t.Fatal(err)
	}
	waitPrice(t, g, 6, 8, "file change after an invalid save")
}

// TestReloadOnSIGHUP: with no file watch, a changed file applies on SIGHUP.
func TestReloadOnSIGHUP(t *testing.T) {
	g := startReloadable(t)
	g.GW.ReloadOnSIGHUP(t.Context())
	if err := g.WriteConfig(catalogYAML(6, 8)); err != nil {
		t.Fatal(err)
	}
	wantCost(t, chat(t, g), 1, 2) // nothing reloads it by itself
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitPrice(t, g, 6, 8, "SIGHUP")
}

// TestReloadDuringStream: a stream that started before a reload is charged
// at the prices it started with; the next request at the new ones.
func TestReloadDuringStream(t *testing.T) {
	g := startReloadable(t)
	g.Upstreams["alpha"].SetFaults(demo.Faults{ChunkDelay: 20 * time.Millisecond})
	req, err := http.NewRequest("POST", g.URL+"/chat/completions", strings.NewReader(
		`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"one two three four five six"}],"max_tokens":64}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+g.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	// The first chunk has arrived: the request is routed and in flight.
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: {") {
	}
	if err := g.WriteConfig(catalogYAML(5, 7)); err != nil {
		t.Fatal(err)
	}
	if st, body := reload(t, g, g.Key); st != 200 {
		t.Fatalf("reload: %d %s", st, body.Raw)
	}
	var usage gjson.Result
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "[DONE]" {
			if u := gjson.Get(d, "usage"); u.Exists() && u.Type != gjson.Null {
				usage = u
			}
		}
	}
	if !usage.Exists() {
		t.Fatal("the stream ended without usage")
	}
	wantCost(t, gjson.Parse(`{"usage":`+usage.Raw+`}`), 1, 2)
	g.Upstreams["alpha"].SetFaults(demo.Faults{})
	wantCost(t, chat(t, g), 5, 7)
}

// TestReloadRateLimitsAndRestartRequired: rate_limits apply live; settings
// that only a restart applies are named, and keep their old values.
func TestReloadRateLimitsAndRestartRequired(t *testing.T) {
	g := startReloadable(t)
	if st, body := reload(t, g, g.Key); st != 200 || body.Get("data.restart_required").Raw != "[]" {
		t.Fatalf("reloading the same file: %d %s", st, body.Raw)
	}
	chat(t, g)
	if err := g.WriteConfig(catalogYAML(1, 2) + "rate_limits: {requests_per_minute: 1}\nlimits: {max_connections: 77}\n"); err != nil {
		t.Fatal(err)
	}
	st, body := reload(t, g, g.Key)
	if st != 200 || body.Get("data.restart_required").Raw != `["limits"]` {
		t.Fatalf("reload: %d %s, want restart_required [\"limits\"]", st, body.Raw)
	}
	if g.GW.Config.Limits.MaxConnections == 77 {
		t.Fatal("a setting that needs a restart changed in the running configuration")
	}
	chat(t, g) // the first request of the minute under the new limit
	resp, b, err := g.Request("POST", "/chat/completions", hello)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second request under a reloaded limit of 1 per minute: %d %s", resp.StatusCode, b)
	}
	_, b, _ = g.Request("GET", "/accounts/me/rate_limits", "")
	if gjson.GetBytes(b, "data.defaults.requests_per_minute").Int() != 1 {
		t.Fatalf("the account's view of the defaults after a reload: %s", b)
	}
}
