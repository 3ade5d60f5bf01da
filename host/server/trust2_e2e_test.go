package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// TestUpstreamRestartNo502 (issue 31, item 7): a plain-HTTP provider that
// restarts on the same port leaves the gateway's pool full of connections
// it closed. The next requests are answered by the new process: a pooled
// connection found closed is dropped before anything is sent on it, and a
// retry goes out on a fresh connection, never on another pooled one.
func TestUpstreamRestartNo502(t *testing.T) {
	const pooled = 16
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	// The first process holds each request until pooled of them are in,
	// so the gateway opens (and then keeps) pooled connections.
	var arrived sync.WaitGroup
	arrived.Add(pooled)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	d := demo.New()
	first := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
		}
		d.ServeHTTP(w, r)
	})}
	go func() { _ = first.Serve(ln) }()
	g := rawGatewayAt(t, "http://"+addr+"/v1", false)

	var wg sync.WaitGroup
	for range pooled {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := post(t, g, "/chat/completions", rawHello)
			if resp.StatusCode != 200 {
				t.Errorf("before the restart: status %d: %s", resp.StatusCode, body.Raw)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// The restart: the old process's sockets close (FIN to the gateway),
	// and a new one listens on the same port.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = first.Shutdown(ctx)
	var ln2 net.Listener
	for i := 0; ; i++ {
		if ln2, err = net.Listen("tcp", addr); err == nil {
			break
		}
		if i == 50 {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	second := &http.Server{Handler: demo.New()}
	go func() { _ = second.Serve(ln2) }()
	t.Cleanup(func() { _ = second.Close() })

	failed := 0
	for i := range 2 * pooled {
		resp, body := post(t, g, "/chat/completions", rawHello)
		if resp.StatusCode != 200 {
			failed++
			t.Logf("request %d after the restart: status %d: %s", i, resp.StatusCode, body.Raw)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d requests after the upstream restarted failed", failed, 2*pooled)
	}
}

// TestDefaultRateLimits (issue 31, item 9): a tenant's key is rate limited
// without any configuration, and requests refused at validation count
// against it: a flood of invalid bodies ends in 429s, and the key's next
// valid request is refused too. The operator's own account is limited only
// by what the operator sets (no X-RateLimit headers).
func TestDefaultRateLimits(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	_, key := newAccount(t, g, "flooder", 1_000_000_000)
	const workers, most = 8, 6000 // the default per key is 3,000 a minute
	var sent, bad, limited atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sent.Add(1) <= most && limited.Load() == 0 {
				resp, _, err := g.Request(http.MethodPost, "/chat/completions", `{"model":"test/chat","messages":[]}`, "Authorization", "Bearer "+key)
				if err != nil {
					t.Error(err)
					return
				}
				switch resp.StatusCode {
				case 400:
					bad.Add(1)
				case 429:
					limited.Add(1)
				default:
					t.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("invalid requests from one tenant key: %d answered 400 before the first 429", bad.Load())
	if limited.Load() == 0 {
		t.Fatalf("%d invalid requests from one tenant key, none refused with 429: no default rate limit, or refusals at validation are free", bad.Load())
	}
	// The burst is 3,000, and the allowance refills at 50 a second while
	// the flood runs (a few seconds; 1,000 is twenty of them).
	if bad.Load() > 4000 {
		t.Fatalf("%d requests answered 400, far more than the default 3,000 a minute", bad.Load())
	}
	// The key's valid requests are held to the same allowance (it refills
	// at 50 a second, so one may pass now and then; 200 cannot).
	for i := 0; ; i++ {
		resp, b, err := g.Request(http.MethodPost, "/chat/completions", hello, "Authorization", "Bearer "+key)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == 429 {
			want429(t, resp, string(b), "key_requests_per_minute")
			break
		}
		if i == 200 {
			t.Fatalf("200 valid requests after the flood, none refused: %d %s", resp.StatusCode, b)
		}
	}

	resp, body := post(t, g, "/chat/completions", hello)
	if resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Limit") != "" {
		t.Fatalf("operator's key: status %d, X-RateLimit-Limit %q: %s", resp.StatusCode, resp.Header.Get("X-RateLimit-Limit"), body.Raw)
	}
}

// TestEmbeddingsBatchContextPerInput (issue 31, item 15): the context
// length bounds each input of an embeddings batch, which the provider
// embeds one by one, not their sum: 100 inputs of about 126 tokens fit a
// context of 8,192; one input longer than the context is still a 400.
func TestEmbeddingsBatchContextPerInput(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	input := strings.Repeat("word ", 100) // ~126 tokens by the gateway's estimate
	inputs := make([]string, 100)
	for i := range inputs {
		inputs[i] = strconv.Quote(input)
	}
	resp, body := post(t, g, "/embeddings", `{"model":"test/embed","input":[`+strings.Join(inputs, ",")+`]}`)
	if resp.StatusCode != 200 || len(body.Get("data").Array()) != 100 {
		t.Fatalf("100 inputs of ~126 tokens against a context of 8192: status %d: %.300s", resp.StatusCode, body.Raw)
	}
	long := strconv.Quote(strings.Repeat("word ", 8000)) // ~10,000 tokens
	resp, body = post(t, g, "/embeddings", `{"model":"test/embed","input":["short", `+long+`]}`)
	wantError(t, resp, body, 400, "context")
}

// TestUpstreamZeroUsageCounted (issue 31, item 16): an upstream that
// reports zero tokens for a prompt it answered does not make the request
// free: the gateway counts what was sent and received, charges that, and
// records the anomaly on the generation — as JSON and streamed.
func TestUpstreamZeroUsageCounted(t *testing.T) {
	g := rawGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "embeddings") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"embed","usage":{"prompt_tokens":0,"total_tokens":0}}`))
			return
		}
		if strings.Contains(readBody(r), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"echo\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"a fairly long answer of several words\"},\"finish_reason\":null}]}\n\n" +
				"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"echo\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
				"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"echo\",\"choices\":[],\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":0,\"total_tokens\":0}}\n\n" +
				"data: [DONE]\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c1","object":"chat.completion","created":1,"model":"echo","choices":[{"index":0,"message":{"role":"assistant","content":"a fairly long answer of several words"},"finish_reason":"stop"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`))
	}), false)
	check := func(name, id string) {
		t.Helper()
		gen := generation(t, g, g.Key, id)
		if gen.Get("total_cost").Float() <= 0 || gen.Get("tokens.prompt_tokens").Int() <= 0 { // the record's counts are under tokens (OpenRouter's usage is the cost)
			t.Fatalf("%s: the upstream reported zero usage and the request was free: %s", name, gen.Raw)
		}
		if !strings.Contains(gen.Get("upstream_anomaly").Str, "zero") {
			t.Fatalf("%s: no anomaly recorded: %s", name, gen.Raw)
		}
	}
	resp, body := post(t, g, "/chat/completions", rawHello)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	if body.Get("usage.completion_tokens").Int() <= 0 {
		t.Fatalf("JSON: the client's usage says nothing was generated: %s", body.Raw)
	}
	check("JSON", body.Get("id").Str)

	resp, b, err := g.Request(http.MethodPost, "/chat/completions", `{"model":"test/raw","stream":true,"messages":[{"role":"user","content":"hello there"}]}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %s", err, b)
	}
	id := gjson.Get(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "data: "), "id").Str
	check("stream", id)

	resp, body = post(t, g, "/embeddings", `{"model":"test/raw-embed","input":"some words to embed"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("embeddings: %d %s", resp.StatusCode, body.Raw)
	}
	// An embeddings answer carries no generation id: find its record.
	var id2 string
	for deadline := time.Now().Add(5 * time.Second); id2 == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_ = g.Ledger.Generations(g.AccountID, func(gen *billing.Generation) bool {
			if gen.Model == "test/raw-embed" {
				id2 = gen.ID
			}
			return id2 == ""
		})
	}
	check("embeddings", id2)
}

func readBody(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// TestUpstreamFinishReasonNormalised (issue 31, item 18): a finish_reason
// outside the documented set (stop, length, tool_calls, content_filter,
// error) is mapped into it — a provider's own name for a known reason to
// that reason, anything else to stop — and the upstream's value is kept in
// native_finish_reason; as JSON and streamed, and on the generation record.
func TestUpstreamFinishReasonNormalised(t *testing.T) {
	g := rawGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(readBody(r), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"echo\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}]}\n\n" +
				"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"echo\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"max_tokens\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n" +
				"data: [DONE]\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c1","object":"chat.completion","created":1,"model":"echo","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"<script>weird</script>"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`))
	}), false)
	resp, body := post(t, g, "/chat/completions", rawHello)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	if c := body.Get("choices.0"); c.Get("finish_reason").Str != "stop" || c.Get("native_finish_reason").Str != "<script>weird</script>" {
		t.Fatalf("JSON: an unknown finish_reason reached the client as it was: %s", c.Raw)
	}
	if rec := generation(t, g, g.Key, body.Get("id").Str); rec.Get("finish_reason").Str != "stop" {
		t.Fatalf("generation record: %s", rec.Raw)
	}
	resp, b, err := g.Request(http.MethodPost, "/chat/completions", `{"model":"test/raw","stream":true,"messages":[{"role":"user","content":"hello there"}]}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %s", err, b)
	}
	var final gjson.Result
	for _, line := range strings.Split(string(b), "\n") {
		if ev := gjson.Parse(strings.TrimPrefix(line, "data: ")); ev.Get("choices.0.finish_reason").Type == gjson.String {
			final = ev.Get("choices.0")
		}
	}
	if final.Get("finish_reason").Str != "length" || final.Get("native_finish_reason").Str != "max_tokens" {
		t.Fatalf("stream: finish_reason max_tokens reached the client as it was: %s\n%s", final.Raw, b)
	}
}

// TestPluginSubRequestRunsOwnAccountPlugin (issue 31, item 18): a tenant
// plugin's chat sub-request that runs a plugin of the same account is
// part of the call that made it, and runs in that call's slot: with one
// call in flight per account it used to wait for a slot its own parent
// held, and get 429.
func TestPluginSubRequestRunsOwnAccountPlugin(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		// The call waits for its sub-request: a time limit a loaded
		// machine cannot run into.
		c.TenantModules = config.TenantModules{TimeoutMS: 30_000, ConcurrentCalls: 1, CPUMsPerMinute: 600_000}
	}})
	key := tenant(t, g, "nested", `{"memory_pages": 256, "timeout_ms": 30000, "pool_size": 4}`)
	st, body := postAs(t, g, key, promptWith("hello", `[{"id":"testplugin","mode":"subchat","sub":[{"id":"testplugin","mode":"respond"}]}]`))
	if st != 200 || body.Get("choices.0.message.content").Str != "sub-request 200: answered by testplugin" {
		t.Fatalf("%d %s", st, body.Raw)
	}
}

// TestTenantPluginNotToPrivateHosts (issue 31, item 6): the operator's
// modules.private_hosts are for the gateway's own modules. A tenant's
// plugin that grants itself every domain ("*") is refused there, before
// any byte reaches the host; the same binary published gateway-wide
// reaches it.
func TestTenantPluginNotToPrivateHosts(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		// The alpha upstream stands for an intranet host the operator
		// opened to its own modules.
		for _, p := range c.Providers {
			if p.Slug == "alpha" {
				u, _ := url.Parse(p.BaseURL)
				c.Modules.PrivateHosts = []string{u.Host}
			}
		}
	}})
	if len(g.Config.Modules.PrivateHosts) != 1 {
		t.Fatalf("private hosts %v", g.Config.Modules.PrivateHosts)
	}
	wasmPath, mf := testPlugin(t)
	mf, _ = sjson.Set(mf, "grants.http_domains", []string{"*"})
	target := g.UpstreamURL["alpha"] + "/models"
	fetch := func(key string) string {
		t.Helper()
		status, body := postAs(t, g, key, promptWith("x", `[{"id":"testplugin","mode":"fetch","url":"`+target+`"}]`))
		if status != 200 {
			t.Fatalf("%d %s", status, body.Raw)
		}
		return body.Get("choices.0.message.content").Str
	}
	_, tenantKey := newAccount(t, g, "intruder", 1_000_000_000_000)
	if resp, body := publish(t, g, tenantKey, wasmPath, mf, "account", true); resp.StatusCode != 201 {
		t.Fatalf("tenant publish: %d %s", resp.StatusCode, body.Raw)
	}
	before := g.Upstreams["alpha"].Count()
	if got := fetch(tenantKey); !strings.HasPrefix(got, "fetch denied") {
		t.Fatalf("a tenant's plugin reached the operator's private host: %q", got)
	}
	if n := g.Upstreams["alpha"].Count() - before; n != 0 {
		t.Fatalf("the private host saw %d requests from a tenant's plugin", n)
	}
	if resp, body := publish(t, g, g.Key, wasmPath, mf, "global", true); resp.StatusCode != 201 {
		t.Fatalf("gateway publish: %d %s", resp.StatusCode, body.Raw)
	}
	if got := fetch(g.Key); !strings.HasPrefix(got, "fetched 200: ") {
		t.Fatalf("the gateway's own plugin was refused its private host: %q", got)
	}
}

// TestTenantModuleQuotaAndDelete (issue 31, item 2): an account publishes
// within a quota of module names, versions per module and bytes, and can
// delete what it no longer needs (a version that is not active, or a whole
// module, which then stops running) to make room; another account cannot
// touch its modules.
func TestTenantModuleQuotaAndDelete(t *testing.T) {
	wasmPath, mf := testPlugin(t)
	fi, err := os.Stat(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		c.TenantModules.MaxModules, c.TenantModules.MaxVersionsPerModule = 2, 2
		c.TenantModules.MaxBytes = 3*fi.Size() + fi.Size()/2 // three binaries
	}})
	_, key := newAccount(t, g, "publisher", 1_000_000_000_000)
	_, other := newAccount(t, g, "neighbour", 1_000_000_000_000)
	version := func(name, v string) string {
		m := strings.Replace(mf, `"version": "1.0.0"`, `"version": "`+v+`"`, 1)
		return strings.Replace(m, `"name": "testplugin"`, `"name": "`+name+`"`, 1)
	}
	pub := func(name, v string, activate bool, want int, msg string) {
		t.Helper()
		resp, body := publish(t, g, key, wasmPath, version(name, v), "account", activate)
		if resp.StatusCode != want || !strings.Contains(body.Get("error.message").Str, msg) {
			t.Fatalf("publish %s@%s: %d %s; want %d %q", name, v, resp.StatusCode, body.Raw, want, msg)
		}
	}
	del := func(k, path string, want int, msg string) {
		t.Helper()
		resp, b, err := g.Request(http.MethodDelete, path, "", "Authorization", "Bearer "+k)
		if err != nil || resp.StatusCode != want || !strings.Contains(gjson.GetBytes(b, "error.message").Str, msg) {
			t.Fatalf("DELETE %s: %v %d %s; want %d %q", path, err, resp.StatusCode, b, want, msg)
		}
	}
	pub("testplugin", "1.0.0", true, 201, "")
	pub("testplugin", "1.0.1", false, 201, "")
	pub("testplugin", "1.0.2", false, 403, "keeps 2 versions of module testplugin, its quota")
	pub("second", "1.0.0", false, 201, "")
	pub("third", "1.0.0", false, 403, "keeps 2 modules, its quota")
	pub("second", "1.0.1", false, 403, "past its quota of") // a fourth binary: bytes

	del(other, "/modules/testplugin/versions/1.0.1", 404, "not published")
	del(key, "/modules/testplugin/versions/1.0.0", 409, "is the active version")
	del(key, "/modules/testplugin/versions/1.0.1", 200, "")
	pub("testplugin", "1.0.2", false, 201, "")

	plugin := promptWith("x", `[{"id":"testplugin","mode":"respond"}]`)
	if status, body := postAs(t, g, key, plugin); status != 200 {
		t.Fatalf("the active plugin: %d %s", status, body.Raw)
	}
	del(other, "/modules/testplugin", 404, "not published")
	del(key, "/modules/testplugin", 200, "")
	if status, body := postAs(t, g, key, plugin); status == 200 {
		t.Fatalf("a deleted plugin still runs: %s", body.Raw)
	}
	_, b, _ := g.Request(http.MethodGet, "/modules", "", "Authorization", "Bearer "+key)
	if names := gjson.GetBytes(b, "data.#.name").Raw; strings.Contains(names, "testplugin") || !strings.Contains(names, "second") {
		t.Fatalf("modules after the delete: %s", names)
	}
	pub("third", "1.0.0", false, 201, "")
}

// TestGatewayPluginsMeteredPerAccount (issue 31, item 1): a call of one of
// the gateway's own plugins draws on the calling account's module time,
// the budget its own plugins have, and a call that fails (here: past its
// time limit) counts too. Before, a tenant could make a gateway-wide plugin
// work for as long as it liked for nothing. Other accounts keep theirs; the
// operator's requests are not metered.
func TestGatewayPluginsMeteredPerAccount(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		// 10 ms a second: one spin of a second leaves the budget
		// negative for the rest of the test.
		c.TenantModules.CPUMsPerMinute = 600
	}})
	wasmPath, mf := testPlugin(t)
	if resp, body := publish(t, g, g.Key, wasmPath, mf, "global", true); resp.StatusCode != 201 {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
	_, attacker := newAccount(t, g, "spinner", 1_000_000_000_000)
	_, other := newAccount(t, g, "bystander", 1_000_000_000_000)
	spin := promptWith("x", `[{"id":"testplugin","mode":"spin"}]`)
	respond := promptWith("x", `[{"id":"testplugin","mode":"respond"}]`)
	if status, body := postAs(t, g, attacker, spin); status != 502 || !strings.Contains(body.Get("error.message").Str, "exceeded its time limit") {
		t.Fatalf("first spin: %d %s", status, body.Raw)
	}
	for _, body := range []string{spin, respond} {
		status, b := postAs(t, g, attacker, body)
		if status != 429 || !strings.Contains(b.Get("error.message").Str, "used their module time") {
			t.Fatalf("after a failed second of the gateway's plugin: %d %s, want the account's module time spent", status, b.Raw)
		}
	}
	if status, b := postAs(t, g, other, respond); status != 200 {
		t.Fatalf("another account: %d %s", status, b.Raw)
	}
	for range 2 {
		if status, b := postAs(t, g, g.Key, spin); status != 502 {
			t.Fatalf("the operator's spin: %d %s, want the plugin's own time limit (502), not a budget", status, b.Raw)
		}
	}
}
