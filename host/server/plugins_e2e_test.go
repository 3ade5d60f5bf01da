package server_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/sse"
	"github.com/tidwall/gjson"
)

// publish uploads a built module through the admin API.
func publish(t *testing.T, g *gatewaytest.Gateway, key, wasmPath, manifestJSON, scope string, activate bool) (*http.Response, gjson.Result) {
	t.Helper()
	bin, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatalf("%v (run make build)", err)
	}
	body := fmt.Sprintf(`{"manifest":%s,"wasm":%q,"scope":%q,"activate":%t}`, manifestJSON, base64.StdEncoding.EncodeToString(bin), scope, activate)
	return post(t, g, "/modules", body, "Authorization", "Bearer "+key)
}

func testPlugin(t *testing.T) (string, string) {
	root := gatewaytest.Root()
	m, err := os.ReadFile(filepath.Join(root, "host", "pipeline", "testdata", "testplugin", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "build", "testdata", "testplugin.wasm"), string(m)
}

func withPlugins(plugins string) string {
	return `{"model":"test/chat","messages":[{"role":"user","content":"hello there"}],"plugins":` + plugins + `}`
}

func TestPluginPipeline(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	wasmPath, mf := testPlugin(t)
	if resp, body := publish(t, g, g.Key, wasmPath, mf, "global", true); resp.StatusCode != 201 {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
	up := g.Upstreams["alpha"]
	cases := []struct {
		name, plugins string
		status        int
		check         func(t *testing.T, body gjson.Result, upstreamCalls int64)
	}{
		{"rewrite", `[{"id":"testplugin","mode":"rewrite"}]`, 200, func(t *testing.T, b gjson.Result, n int64) {
			sent := gjson.ParseBytes(up.Last().Body).Get("messages.0.content").Str
			if sent != "[checked] hello there" {
				t.Fatalf("upstream got %q", sent)
			}
		}},
		{"respond", `[{"id":"testplugin","mode":"respond"}]`, 200, func(t *testing.T, b gjson.Result, n int64) {
			if b.Get("choices.0.message.content").Str != "answered by testplugin" || n != 0 {
				t.Fatalf("%s (upstream calls %d)", b.Raw, n)
			}
			if b.Get("usage.cost").Float() != 0 || !strings.HasPrefix(b.Get("id").Str, "gen-") {
				t.Fatalf("plugin answer %s", b.Raw)
			}
		}},
		{"block", `[{"id":"testplugin","mode":"block"}]`, 403, func(t *testing.T, b gjson.Result, n int64) {
			if b.Get("error.metadata.patterns.0").Str != "forbidden" || b.Get("error.metadata.plugin").Str != "testplugin" || n != 0 {
				t.Fatalf("%s", b.Raw)
			}
			st := b.Get("service_metadata.pipeline.0")
			if st.Get("type").Str != "guardrail" || st.Get("name").Str != "testplugin" || !st.Get("data.detected").Bool() {
				t.Fatalf("pipeline stage %s", b.Get("service_metadata").Raw)
			}
			// Spec 2.2: a guardrail stage names the guardrail, its scope and
			// its engines; the block's metadata lists the endpoints and region.
			if st.Get("guardrail_id").Str != "testplugin" || st.Get("guardrail_scope").Str != "request" || st.Get("data.engines.0").Str != "testplugin" {
				t.Fatalf("guardrail stage %s", st.Raw)
			}
			sm := b.Get("service_metadata")
			if sm.Get("endpoints.total").Int() != 1 || sm.Get("endpoints.available.0.provider").Str != "alpha" ||
				sm.Get("endpoints.available.0.selected").Bool() || !sm.Get("region").Exists() || sm.Get("requested").Str != "test/chat" {
				t.Fatalf("service_metadata of a block %s", sm.Raw)
			}
		}},
		{"post edits the result", `[{"id":"testplugin","mode":"shout"}]`, 200, func(t *testing.T, b gjson.Result, n int64) {
			if b.Get("choices.0.message.content").Str != "SHOUTED" || b.Get("usage.cost").Float() <= 0 {
				t.Fatalf("%s", b.Raw)
			}
			if b.Get("service_metadata.pipeline.#").Int() != 2 {
				t.Fatalf("want pre and post stages: %s", b.Get("service_metadata.pipeline").Raw)
			}
		}},
		{"disabled", `[{"id":"testplugin","enabled":false,"mode":"block"}]`, 200, nil},
		{"trap is a 502 for this request", `[{"id":"testplugin","mode":"trap"}]`, 502, func(t *testing.T, b gjson.Result, n int64) {
			if !strings.Contains(b.Get("error.message").Str, "trapped") {
				t.Fatalf("%s", b.Raw)
			}
		}},
		{"a Go panic is the hook's error, with its line", `[{"id":"testplugin","mode":"panic"}]`, 502, func(t *testing.T, b gjson.Result, n int64) {
			if m := b.Get("error.message").Str; !strings.Contains(m, "failed in pre_request: panic: runtime error: invalid memory address") || !strings.Contains(m, "(at main.go:") {
				t.Fatalf("%s", b.Raw)
			}
		}},
		{"spin is cut at the time limit", `[{"id":"testplugin","mode":"spin"}]`, 502, func(t *testing.T, b gjson.Result, n int64) {
			if !strings.Contains(b.Get("error.message").Str, "time limit of 1000 ms") {
				t.Fatalf("%s", b.Raw)
			}
		}},
		{"bad option value", `[{"id":"testplugin","mode":"explode"}]`, 400, func(t *testing.T, b gjson.Result, n int64) {
			if m := b.Get("error.message").Str; !strings.Contains(m, "plugins[0].mode") || !strings.Contains(m, "testplugin") {
				t.Fatalf("%s", m)
			}
		}},
		{"unknown option", `[{"id":"testplugin","colour":"red"}]`, 400, func(t *testing.T, b gjson.Result, n int64) {
			if m := b.Get("error.message").Str; !strings.Contains(m, "plugins[0]") || !strings.Contains(m, "colour") {
				t.Fatalf("%s", m)
			}
		}},
		{"unknown plugin", `[{"id":"nope"}]`, 400, func(t *testing.T, b gjson.Result, n int64) {
			if m := b.Get("error.message").Str; !strings.Contains(m, `plugins[0].id: unknown plugin "nope"`) {
				t.Fatalf("%s", m)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := up.Count()
			resp, body := post(t, g, "/chat/completions", withPlugins(tc.plugins), "X-Service-Metadata", "enabled")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body.Raw)
			}
			if tc.check != nil {
				tc.check(t, body, up.Count()-before)
			}
			// Whatever the plugin did, the gateway keeps serving.
			if resp, body := post(t, g, "/chat/completions", hello); resp.StatusCode != 200 {
				t.Fatalf("gateway stopped serving after %s: %d %s", tc.name, resp.StatusCode, body.Raw)
			}
		})
	}
	t.Run("stream with a responding plugin", func(t *testing.T) {
		raw := readStream(t, g, `{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"x"}],"plugins":[{"id":"testplugin","mode":"respond"}]}`)
		if !strings.Contains(raw, "answered by testplugin") || !strings.HasSuffix(strings.TrimSpace(raw), "data: [DONE]") {
			t.Fatalf("%s", raw)
		}
	})
	t.Run("stream chunks a plugin breaks", func(t *testing.T) {
		// Every event a client parses is [DONE] or a chunk: the plugin's
		// non-chunk is dropped, and its chunk with raw line breaks arrives
		// whole instead of as a broken event and a stray field.
		raw := readStream(t, g, `{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"a b"}],"plugins":[{"id":"testplugin","mode":"garble"}]}`)
		r := sse.NewReader(strings.NewReader(raw), 1<<20)
		garbled := 0
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			d := string(ev.Data)
			if d == "[DONE]" {
				continue
			}
			if !gjson.Valid(d) || !gjson.Get(d, "choices").IsArray() {
				t.Fatalf("event is not a chunk: %q\n%s", d, raw)
			}
			if gjson.Get(d, "choices.0.delta.content").Str == "G" {
				garbled++
			}
		}
		if garbled == 0 || strings.Contains(raw, "not a chunk") || !strings.Contains(raw, `"cost"`) {
			t.Fatalf("%s", raw)
		}
	})
	t.Run("stream chunks edited", func(t *testing.T) {
		raw := readStream(t, g, `{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"a b"}],"plugins":[{"id":"testplugin","mode":"shout"}]}`)
		if strings.Contains(raw, "You said") || !strings.Contains(raw, `"content":"X"`) || !strings.Contains(raw, `"cost"`) {
			t.Fatalf("%s", raw)
		}
	})
}

func TestResponseHealing(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	// The plugin heals only answers to requests that asked for JSON
	// (response_format json_object or json_schema).
	asJSON := func(plugins string) string {
		return `{"model":"test/chat","messages":[{"role":"user","content":"hello there"}],"response_format":{"type":"json_object"},"plugins":` + plugins + `}`
	}
	reply := "Here you go:\n```json\n{\"city\": \"Oslo\", \"temp\": [1, 2,],}\n```\nAnything else?"
	g.Upstreams["alpha"].SetFaults(demo.Faults{Reply: reply})
	resp, body := post(t, g, "/chat/completions", asJSON(`[{"id":"response-healing"}]`), "X-Service-Metadata", "enabled")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	if got := body.Get("choices.0.message.content").Str; got != `{"city": "Oslo", "temp": [1, 2]}` {
		t.Fatalf("healed content %q", got)
	}
	// pre_request hands response_format over; post_response repairs.
	stage := body.Get(`service_metadata.pipeline.#(hook=="post_response")`)
	if stage.Get("name").Str != "response-healing" || stage.Get("data.repaired").Int() != 1 || stage.Get("data.repairs").Raw != `["fence","trailing_comma"]` {
		t.Fatalf("pipeline %s", body.Get("service_metadata.pipeline").Raw)
	}
	// Not asked for JSON: the answer is left alone, plugin or not (issue 34).
	for _, req := range []string{withPlugins(`[{"id":"response-healing"}]`), hello} {
		_, body = post(t, g, "/chat/completions", req)
		if got := body.Get("choices.0.message.content").Str; got != reply {
			t.Fatalf("content changed without a request for JSON: %q", got)
		}
	}
	g.Upstreams["alpha"].SetFaults(demo.Faults{Reply: "In Python use {} for an empty dict; in Go, func main() {} is the smallest program."})
	_, body = post(t, g, "/chat/completions", withPlugins(`[{"id":"response-healing"}]`))
	if got := body.Get("choices.0.message.content").Str; got != "In Python use {} for an empty dict; in Go, func main() {} is the smallest program." {
		t.Fatalf("prose rewritten: %q", got)
	}
	// Truncated output gets its brackets closed.
	g.Upstreams["alpha"].SetFaults(demo.Faults{Reply: `{"items": [{"name": "a"}, {"name": "b`})
	_, body = post(t, g, "/chat/completions", asJSON(`[{"id":"response-healing"}]`))
	if got := body.Get("choices.0.message.content").Str; got != `{"items": [{"name": "a"}, {"name": "b"}]}` {
		t.Fatalf("healed truncation %q", got)
	}
	// Off when not asked for.
	_, body = post(t, g, "/chat/completions", asJSON(`[]`))
	if got := body.Get("choices.0.message.content").Str; got != `{"items": [{"name": "a"}, {"name": "b` {
		t.Fatalf("content changed without the plugin: %q", got)
	}
}

func TestTenantAndDefaultPlugins(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	wasmPath, mf := testPlugin(t)
	// A second account with its own management key. $10: a plugin that
	// declares no max_fee is held at the operator's $1 ceiling before it
	// runs (docs/plugins.md, "Fees"), beside the model's worst case.
	_, keyB := newAccount(t, g, "tenant-b", 10_000_000_000)
	resp, body := publish(t, g, keyB, wasmPath, mf, "global", true)
	wantError(t, resp, body, 403, "operator")
	if resp, body := publish(t, g, keyB, wasmPath, mf, "account", true); resp.StatusCode != 201 {
		t.Fatalf("tenant publish: %d %s", resp.StatusCode, body.Raw)
	}
	block := withPlugins(`[{"id":"testplugin","mode":"block"}]`)
	resp, body = post(t, g, "/chat/completions", block, "Authorization", "Bearer "+keyB)
	wantError(t, resp, body, 403, "forbidden topic")
	resp, body = post(t, g, "/chat/completions", block)
	wantError(t, resp, body, 400, `unknown plugin "testplugin"`)

	// Default-on for tenant B: runs without being listed, off when disabled.
	resp, b, _ := g.Request("PUT", "/modules/testplugin/default", `{"enabled":true}`, "Authorization", "Bearer "+keyB)
	if resp.StatusCode != 200 {
		t.Fatalf("default: %d %s", resp.StatusCode, b)
	}
	_, body = post(t, g, "/chat/completions", hello, "Authorization", "Bearer "+keyB, "X-Service-Metadata", "enabled")
	if body.Get("service_metadata.pipeline.0.name").Str != "testplugin" {
		t.Fatalf("default plugin did not run: %s", body.Raw)
	}
	_, body = post(t, g, "/chat/completions", withPlugins(`[{"id":"testplugin","enabled":false}]`), "Authorization", "Bearer "+keyB, "X-Service-Metadata", "enabled")
	if body.Get("service_metadata.pipeline.#").Int() != 0 {
		t.Fatalf("disabled default plugin ran: %s", body.Get("service_metadata").Raw)
	}
	// The operator's requests never run tenant B's default.
	_, body = post(t, g, "/chat/completions", hello, "X-Service-Metadata", "enabled")
	if body.Get("service_metadata.pipeline.#").Int() != 0 {
		t.Fatalf("tenant plugin ran for another account: %s", body.Get("service_metadata").Raw)
	}
}

func TestModuleAPIErrors(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	wasmPath, mf := testPlugin(t)
	_, ordinary, err := g.Keys.CreateKey(g.AccountID, "plain", "", false)
	if err != nil {
		t.Fatal(err)
	}
	_ = ordinary
	plain, _, _ := g.Keys.CreateKey(g.AccountID, "plain2", "", false)
	resp, body := publish(t, g, plain, wasmPath, mf, "global", true)
	wantError(t, resp, body, 403, "Only management keys")
	resp, body = post(t, g, "/modules", `{"manifest":`+mf+`,"wasm":"AGFzbQEAAAA="}`)
	wantError(t, resp, body, 422, "missing export switchyard_abi_v1")
	resp, body = post(t, g, "/modules", `{"manifest":`+strings.Replace(mf, `"abi": 1`, `"abi": 3`, 1)+`,"wasm":"AGFzbQEAAAA="}`)
	wantError(t, resp, body, 422, "ABI version 3")
	resp, body = post(t, g, "/modules", `{"manifest":{"name":"x"},"wasm":"AGFzbQEAAAA="}`)
	wantError(t, resp, body, 422, "manifest")
	resp, body = post(t, g, "/modules", `{"wasm":"AGFzbQEAAAA="}`)
	wantError(t, resp, body, 400, "manifest")
	resp, body = post(t, g, "/modules/openai/activate", `{"version":"7.7.7","scope":"global"}`)
	wantError(t, resp, body, 404, "not published")
	resp, body = post(t, g, "/modules/openai/rollback", `{"scope":"global"}`)
	wantError(t, resp, body, 409, "no earlier version")
	// The adapter in service is untouched by all of this.
	if resp, body := post(t, g, "/chat/completions", hello); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
}

// TestHotSwapUnderLoad publishes and activates a new adapter build while
// chat and streaming requests run, then rolls back: no request fails, and a
// request started after each switch is translated by the new active build.
func TestHotSwapUnderLoad(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	up := g.Upstreams["alpha"]
	root := gatewaytest.Root()
	mf, _ := os.ReadFile(filepath.Join(root, "plugins", "openai", "manifest.json"))
	variant := strings.Replace(string(mf), `"version": "1.0.0"`, `"version": "1.1.0"`, 1)

	var stop atomic.Bool
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				stream := i%2 == 1
				body := fmt.Sprintf(`{"model":"test/chat","stream":%t,"messages":[{"role":"user","content":"load %d %d"}]}`, stream, w, i)
				resp, b, err := g.Request("POST", "/chat/completions", body)
				if err == nil && resp.StatusCode == 200 && strings.Contains(string(b), "load") && (!stream || strings.Contains(string(b), "[DONE]")) {
					ok.Add(1)
					continue
				}
				failed.Add(1)
				mu.Lock()
				failures = append(failures, fmt.Sprintf("%v %v %.200s", err, resp, b))
				mu.Unlock()
			}
		}(w)
	}
	probe := func(tag string) string {
		body := `{"model":"test/chat","messages":[{"role":"user","content":"probe ` + tag + `"}]}`
		if resp, b, err := g.Request("POST", "/chat/completions", body); err != nil || resp.StatusCode != 200 {
			t.Fatalf("probe %s: %v %s", tag, err, b)
		}
		return up.AdapterFor("probe " + tag)
	}
	// Each phase lasts until the load has completed some requests in it
	// (not a fixed sleep, which a loaded machine may fill with nothing);
	// the cap only stops a stalled test.
	progress := func(phase string) {
		t.Helper()
		from := ok.Load() + failed.Load()
		for cap := time.Now().Add(2 * time.Minute); ok.Load()+failed.Load() < from+10; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(cap) {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("%s: the load made no progress (%d ok, %d failed)", phase, ok.Load(), failed.Load())
			}
		}
	}
	progress("before the swap")
	if resp, body := publish(t, g, g.Key, filepath.Join(root, "build", "testdata", "openai-variant.wasm"), variant, "global", true); resp.StatusCode != 201 {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
	if got := probe("after-activate"); got != "openai/variant" {
		t.Fatalf("a request after activation used %q", got)
	}
	progress("after activation")
	resp, b, _ := g.Request("POST", "/modules/openai/rollback", `{"scope":"global"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("rollback: %d %s", resp.StatusCode, b)
	}
	if got := probe("after-rollback"); got != "openai/1.0.0" {
		t.Fatalf("a request after rollback used %q", got)
	}
	progress("after rollback")
	stop.Store(true)
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed during the swaps: %v", failed.Load(), failed.Load()+ok.Load(), failures[:min(3, len(failures))])
	}
}

// TestPluginOutboundHTTP: a plugin reaches the network only through the
// host, only to granted domains, and never to private or metadata
// addresses (SSRF), even when granted.
func TestPluginOutboundHTTP(t *testing.T) {
	wasmPath, mf := testPlugin(t)
	fetch := func(g *gatewaytest.Gateway, url string) string {
		t.Helper()
		resp, body := post(t, g, "/chat/completions", withPlugins(`[{"id":"testplugin","mode":"fetch","url":"`+url+`"}]`))
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
		return body.Get("choices.0.message.content").Str
	}
	guarded := start(t, gatewaytest.Options{})
	if resp, body := publish(t, guarded, guarded.Key, wasmPath, mf, "global", true); resp.StatusCode != 201 {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
	port := strings.TrimPrefix(guarded.UpstreamURL["alpha"], "http://127.0.0.1:")
	port = strings.TrimSuffix(port, "/v1")
	for _, tc := range []struct{ name, url, want string }{
		{"not granted", "https://example.com/", "fetch denied: domain example.com is not granted"},
		{"loopback literal", "http://127.0.0.1:" + port + "/v1/models", "fetch denied"},
		{"loopback by name", "http://localhost:" + port + "/v1/models", "fetch denied"},
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/", "fetch denied"},
		{"not http", "file:///etc/passwd", "fetch denied"},
		{"credentials in url", "http://user:pw@localhost:" + port + "/", "fetch denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fetch(guarded, tc.url); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("%q, want prefix %q", got, tc.want)
			}
		})
	}
	if n := guarded.Upstreams["alpha"].Count(); n != 0 {
		t.Fatalf("the guard let %d requests through to the loopback server", n)
	}

	open := start(t, gatewaytest.Options{AllowPrivateNetworks: true})
	if resp, body := publish(t, open, open.Key, wasmPath, mf, "global", true); resp.StatusCode != 201 {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
	got := fetch(open, open.UpstreamURL["alpha"]+"/models")
	if !strings.HasPrefix(got, "fetched 200: ") || !strings.Contains(got, `"echo"`) {
		t.Fatalf("granted fetch: %q", got)
	}
}

// TestPublishRefusesBrokenModule: over the management API, a module that
// loads but cannot work — its post_response panics on every call, or its
// manifest declares a post_chunk it lacks — is a 400 naming the hook and
// the problem (issue 37: it was published, and every request through it
// failed), and it is not listed.
func TestPublishRefusesBrokenModule(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	root := gatewaytest.Root()
	wasmPath := filepath.Join(root, "build", "testdata", "broken.wasm")
	for _, tc := range []struct{ manifest, want string }{
		{"manifest.json", "post_response on the typical input"},
		{"lacking.json", "declares post_chunk, which the module does not implement"},
	} {
		mf, err := os.ReadFile(filepath.Join(root, "abi", "conformance", "testdata", "broken", tc.manifest))
		if err != nil {
			t.Fatal(err)
		}
		resp, body := publish(t, g, g.Key, wasmPath, string(mf), "account", true)
		wantError(t, resp, body, 400, "fails the guest check")
		if msg := body.Get("error.message").Str; !strings.Contains(msg, tc.want) {
			t.Errorf("%s: message %q lacks %q", tc.manifest, msg, tc.want)
		}
	}
	_, list, err := g.Request("GET", "/modules", "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(list), `"broken"`) {
		t.Errorf("a refused module is listed: %s", list)
	}
}
