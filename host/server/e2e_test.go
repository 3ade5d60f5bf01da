package server_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

func start(t *testing.T, opts gatewaytest.Options) *gatewaytest.Gateway {
	t.Helper()
	opts.Quiet = true
	g, err := gatewaytest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// newAccount creates an account with a management key and funds it with
// credits (nanos; 0: none); it returns the account id and the key's secret.
func newAccount(t *testing.T, g *gatewaytest.Gateway, name string, credits int64) (string, string) {
	t.Helper()
	acct, err := g.Keys.CreateAccount(name)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := g.Keys.CreateKey(acct.ID, name+"-admin", "", true)
	if err != nil {
		t.Fatal(err)
	}
	if credits > 0 {
		if _, err := g.Ledger.TopUp(acct.ID, billing.Nanos(credits), "test credits"); err != nil {
			t.Fatal(err)
		}
	}
	return acct.ID, key
}

const hello = `{"model":"test/chat","messages":[{"role":"user","content":"hello there"}]}`

func post(t *testing.T, g *gatewaytest.Gateway, path, body string, headers ...string) (*http.Response, gjson.Result) {
	t.Helper()
	resp, b, err := g.Request(http.MethodPost, path, body, headers...)
	if err != nil {
		t.Fatal(err)
	}
	if !gjson.ValidBytes(b) {
		t.Fatalf("response is not JSON (status %d): %q", resp.StatusCode, b)
	}
	return resp, gjson.ParseBytes(b)
}

// wantError checks the spec's error envelope: error.code equals the status.
func wantError(t *testing.T, resp *http.Response, body gjson.Result, status int, msgPart string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, body.Raw)
	}
	if got := body.Get("error.code").Int(); got != int64(status) {
		t.Fatalf("error.code %d, want %d; body %s", got, status, body.Raw)
	}
	if msg := body.Get("error.message").Str; !strings.Contains(msg, msgPart) {
		t.Fatalf("error.message %q does not contain %q", msg, msgPart)
	}
}

func TestAuthentication(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	cases := []struct {
		name, header, want string
	}{
		{"missing header", "", "Missing Authentication header"},
		{"wrong scheme", "Basic abc", "Bearer"},
		{"unknown key", "Bearer sk-sy-v1-nope000000000000000000000000", "Invalid API key"},
		{"empty bearer", "Bearer ", "Missing Authentication header"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, g, "/chat/completions", hello, "Authorization", tc.header)
			wantError(t, resp, body, 401, tc.want)
			if strings.Contains(body.Raw, "nope000") {
				t.Fatal("the rejected credential is echoed back")
			}
		})
	}
}

func TestChatCompletion(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, body := post(t, g, "/chat/completions",
		`{"model":"test/chat","messages":[{"role":"user","content":"hello there"}],"temperature":0.3,"top_k":4,"provider":{"sort":"price"},"plugins":[],"session_id":"abc"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body.Raw)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("content type %q", ct)
	}
	if !strings.HasPrefix(body.Get("id").Str, "gen-") {
		t.Errorf("id %q is not a generation id", body.Get("id").Str)
	}
	for path, want := range map[string]string{
		"object":                  "chat.completion",
		"model":                   "test/chat",
		"choices.0.message.role":  "assistant",
		"choices.0.finish_reason": "stop",
		"choices.0.index":         "0",
	} {
		if got := body.Get(path).String(); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if !strings.Contains(body.Get("choices.0.message.content").Str, "You said: hello there") {
		t.Errorf("content %q", body.Get("choices.0.message.content").Str)
	}
	if !body.Get("system_fingerprint").Exists() || body.Get("created").Int() == 0 {
		t.Errorf("required keys missing: %s", body.Raw)
	}
	for _, f := range []string{"prompt_tokens", "completion_tokens", "total_tokens"} {
		if !body.Get("usage." + f).Exists() {
			t.Errorf("usage.%s missing", f)
		}
	}
	// What reached the provider: the adapter's translation.
	up := g.Upstreams["alpha"].Last()
	ub := gjson.ParseBytes(up.Body)
	if ub.Get("model").Str != "echo" {
		t.Errorf("upstream model %q, want the provider's name echo", ub.Get("model").Str)
	}
	for _, gone := range []string{"provider", "plugins", "session_id", "top_k"} {
		if ub.Get(gone).Exists() {
			t.Errorf("%s was sent upstream: %s", gone, up.Body)
		}
	}
	if ub.Get("temperature").Float() != 0.3 {
		t.Errorf("temperature not passed through: %s", up.Body)
	}
	if up.Header.Get("Authorization") != "" {
		t.Errorf("a keyless provider got an Authorization header %q", up.Header.Get("Authorization"))
	}
}

func TestProviderKeyStaysInHost(t *testing.T) {
	const secret = "sk-upstream-secret-1234567890"
	g := start(t, gatewaytest.Options{
		Env:    map[string]string{"ALPHA_KEY": secret},
		Mutate: func(c *config.Config) { c.Providers[0].APIKeyEnv = "ALPHA_KEY" },
	})
	resp, body := post(t, g, "/chat/completions", hello)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	if got := g.Upstreams["alpha"].Last().Header.Get("Authorization"); got != "Bearer "+secret {
		t.Fatalf("upstream Authorization %q: the host did not substitute the key", got)
	}
	// An upstream that quotes the key back must not make it reach the client.
	g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 400, ErrorBody: `{"error":{"message":"bad key ` + secret + ` given"}}`})
	resp, body = post(t, g, "/chat/completions", hello)
	wantError(t, resp, body, 400, "[redacted]")
	if strings.Contains(body.Raw, secret) {
		t.Fatal("the provider key leaked into a response")
	}
}

func TestStreaming(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	req, _ := http.NewRequest("POST", g.URL+"/chat/completions",
		strings.NewReader(`{"model":"test/chat","stream":true,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"stream me"}]}`))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	req.Header.Set("X-Service-Metadata", "enabled")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var chunks []gjson.Result
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, ":") {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected line %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		if done {
			t.Fatalf("data after [DONE]: %s", data)
		}
		chunks = append(chunks, gjson.Parse(data))
	}
	if !done {
		t.Fatal("stream did not end with [DONE]")
	}
	var text strings.Builder
	id := chunks[0].Get("id").Str
	for _, c := range chunks {
		if c.Get("object").Str != "chat.completion.chunk" || c.Get("model").Str != "test/chat" || c.Get("id").Str != id {
			t.Fatalf("bad chunk %s", c.Raw)
		}
		text.WriteString(c.Get("choices.0.delta.content").Str)
	}
	if !strings.Contains(text.String(), "You said: stream me") {
		t.Fatalf("streamed text %q", text.String())
	}
	last := chunks[len(chunks)-1]
	if !last.Get("usage.total_tokens").Exists() {
		t.Fatalf("final chunk has no usage: %s", last.Raw)
	}
	if last.Get("service_metadata.requested").Str != "test/chat" {
		t.Fatalf("final chunk has no service_metadata: %s", last.Raw)
	}
	up := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	if !up.Get("stream_options.include_usage").Bool() {
		t.Fatalf("adapter did not ask the upstream for usage: %s", up.Raw)
	}
}

// readStream returns the raw SSE text of a streaming chat call.
func readStream(t *testing.T, g *gatewaytest.Gateway, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", g.URL+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

func TestStreamDebugEchoFirst(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	raw := readStream(t, g, `{"model":"test/chat","stream":true,"debug":{"echo_upstream_body":true},"messages":[{"role":"user","content":"x"}]}`)
	first, _, _ := strings.Cut(strings.TrimPrefix(raw, "data: "), "\n")
	echo := gjson.Get(first, "debug.echo_upstream_body")
	if echo.Get("model").Str != "echo" || !echo.Get("stream_options.include_usage").Bool() {
		t.Fatalf("first chunk is not the upstream body echo: %s", first)
	}
}

func TestStreamKeepAliveAndCut(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		c.KeepAlive = config.Duration(20 * time.Millisecond)
	}})
	g.Upstreams["alpha"].SetFaults(demo.Faults{ChunkDelay: 60 * time.Millisecond, CutAfter: 3})
	raw := readStream(t, g, `{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"a b c d e f"}]}`)
	if !strings.Contains(raw, ": SWITCHYARD PROCESSING") {
		t.Errorf("no keep-alive comment while the upstream was silent:\n%s", raw)
	}
	if !strings.Contains(raw, `"finish_reason":"error"`) || !strings.Contains(raw, "ended the stream before it was complete") {
		t.Errorf("a cut stream did not end with an error chunk:\n%s", raw)
	}
	if !strings.HasSuffix(strings.TrimSpace(raw), "data: [DONE]") {
		t.Errorf("stream does not end with [DONE]:\n%s", raw)
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	up := g.Upstreams["alpha"]
	up.SetFaults(demo.Faults{ChunkDelay: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/chat/completions",
		strings.NewReader(`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"one two three four five six seven"}]}`))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for up.Cancelled() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the upstream stream was not cancelled after the client went away")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGracefulShutdownDrainsStreams(t *testing.T) {
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Upstreams["alpha"].SetFaults(demo.Faults{ChunkDelay: 30 * time.Millisecond})
	req, _ := http.NewRequest("POST", g.URL+"/chat/completions",
		strings.NewReader(`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"drain me please"}]}`))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- g.Server.Shutdown(ctx)
	}()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	if !strings.HasSuffix(strings.TrimSpace(b.String()), "data: [DONE]") || !strings.Contains(b.String(), "drain") {
		t.Fatalf("stream was cut by shutdown:\n%s", b.String())
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
}

func TestSessionHeaderAndMetadata(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	for _, h := range []string{"X-Service-Metadata", "X-Service-Experimental-Metadata"} {
		resp, body := post(t, g, "/chat/completions", hello, h, "enabled")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", h, resp.StatusCode, body.Raw)
		}
		m := body.Get("service_metadata")
		if m.Get("requested").Str != "test/chat" || m.Get("endpoints.total").Int() < 1 || m.Get("attempt").Int() != 1 {
			t.Fatalf("%s: service_metadata %s", h, m.Raw)
		}
	}
	_, body := post(t, g, "/chat/completions", hello)
	if body.Get("service_metadata").Exists() {
		t.Fatal("service_metadata present without the header")
	}
	resp, body := post(t, g, "/chat/completions", hello, "X-Session-Id", strings.Repeat("s", 257))
	wantError(t, resp, body, 400, "x-session-id")
}

func TestChatErrors(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) { c.MaxBodyBytes = 64 << 10 }})
	cases := []struct {
		name, body string
		status     int
		msg        string
	}{
		{"empty body", ``, 400, "empty"},
		{"not json", `{"model":`, 400, "JSON"},
		{"no messages", `{"model":"test/chat","messages":[]}`, 400, "messages"},
		{"temperature range", `{"model":"test/chat","temperature":2.5,"messages":[{"role":"user","content":"x"}]}`, 400, "temperature"},
		{"stop count", `{"model":"test/chat","stop":["a","b","c","d","e"],"messages":[{"role":"user","content":"x"}]}`, 400, "stop"},
		{"unknown provider field", `{"model":"test/chat","provider":{"fast":true},"messages":[{"role":"user","content":"x"}]}`, 400, "provider.fast"},
		{"unknown model", `{"model":"nobody/nothing","messages":[{"role":"user","content":"x"}]}`, 404, "nobody/nothing"},
		{"embedding model for chat", `{"model":"test/embed","messages":[{"role":"user","content":"x"}]}`, 404, "test/embed"},
		{"too large", `{"model":"test/chat","messages":[{"role":"user","content":"` + strings.Repeat("x", 70<<10) + `"}]}`, 413, "64 KiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, g, "/chat/completions", tc.body)
			wantError(t, resp, body, tc.status, tc.msg)
		})
	}
}

func TestUpstreamErrorMapping(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		c.Timeouts.Attempt = config.Duration(300 * time.Millisecond)
	}})
	up := g.Upstreams["alpha"]
	cases := []struct {
		name   string
		faults demo.Faults
		status int
		msg    string
	}{
		{"server error", demo.Faults{Status: 500}, 502, "demo fault"},
		{"rate limited", demo.Faults{Status: 429}, 429, "alpha"},
		{"unavailable", demo.Faults{Status: 503}, 503, "alpha"},
		{"overloaded", demo.Faults{Status: 529}, 529, "alpha"},
		{"gateway timeout", demo.Faults{Status: 504}, 524, "alpha"},
		{"bad request passes through", demo.Faults{Status: 400, ErrorBody: `{"error":{"message":"Invalid 'messages[0]'","type":"invalid_request_error"}}`}, 400, "Invalid 'messages[0]'"},
		{"provider auth failure hides upstream text", demo.Faults{Status: 401, ErrorBody: `{"error":{"message":"Incorrect API key provided: sk-abc***xyz","type":"invalid_request_error","code":"invalid_api_key"}}`}, 502, "rejected the gateway's credentials"},
		{"slow first byte", demo.Faults{Delay: time.Second}, 524, "did not respond within"},
		{"non-json error", demo.Faults{Status: 502, ErrorBody: "upstream connect error"}, 502, "upstream connect error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up.SetFaults(tc.faults)
			resp, body := post(t, g, "/chat/completions", hello)
			wantError(t, resp, body, tc.status, tc.msg)
			if strings.Contains(body.Raw, "sk-abc") {
				t.Fatal("an upstream credential fragment leaked")
			}
		})
	}
	up.SetFaults(demo.Faults{})
	// Connection refused: the upstream is gone.
	g2 := start(t, gatewaytest.Options{ConfigYAML: strings.ReplaceAll(gatewaytest.DefaultYAML([]string{"alpha"}), "{{url:alpha}}", "http://127.0.0.1:1/v1")})
	resp, body := post(t, g2, "/chat/completions", hello)
	wantError(t, resp, body, 502, "could not reach provider alpha")
}

func TestFallbackAcrossProviders(t *testing.T) {
	g := start(t, gatewaytest.Options{Providers: []string{"alpha", "beta"}})
	g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 500})
	g.Upstreams["beta"].SetFaults(demo.Faults{Status: 500})
	resp, body := post(t, g, "/chat/completions", `{"model":"test/chat","provider":{"order":["alpha","beta"]},"messages":[{"role":"user","content":"x"}]}`)
	wantError(t, resp, body, 502, "")
	g.Upstreams["beta"].SetFaults(demo.Faults{})
	resp, body = post(t, g, "/chat/completions", `{"model":"test/chat","provider":{"order":["alpha","beta"]},"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 || body.Get("provider").Str != "beta" {
		t.Fatalf("no fallback to beta: %d %s", resp.StatusCode, body.Raw)
	}
	resp, body = post(t, g, "/chat/completions", `{"model":"test/chat","provider":{"order":["alpha","beta"],"allow_fallbacks":false},"messages":[{"role":"user","content":"x"}]}`)
	wantError(t, resp, body, 502, "alpha")
}

// TestTranslationRunsInWasm swaps the adapter for another build and for a
// broken module: the output follows the module, so no Go path hides it.
// The stock build declares its request hooks native and proves it at load
// (docs/abi.md §native hooks), so the host runs them; the swapped-in
// builds declare the same but compute something else, so they are called.
func TestTranslationRunsInWasm(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	up := g.Upstreams["alpha"]
	nativeHooks := func() string {
		mod, release := g.Modules.Acquire("openai")
		defer release()
		return strings.Join(mod.NativeHooks(), ",")
	}
	post(t, g, "/chat/completions", hello)
	if got := up.Last().Header.Get("X-Switchyard-Adapter"); got != "openai/1.0.0" {
		t.Fatalf("adapter header %q", got)
	}
	if got := nativeHooks(); got != "chat_request,embed_request" {
		t.Fatalf("the stock adapter's native hooks: %q", got)
	}
	root := gatewaytest.Root()
	variant, err := os.ReadFile(filepath.Join(root, "build", "testdata", "openai-variant.wasm"))
	if err != nil {
		t.Fatalf("variant build missing (make build): %v", err)
	}
	mf, _ := os.ReadFile(filepath.Join(root, "plugins", "openai", "manifest.json"))
	m, _ := manifest.Parse(mf)
	variantManifest := strings.Replace(string(mf), `"version": "1.0.0"`, `"version": "1.0.1-variant"`, 1)
	ctx := context.Background()
	if _, err := g.Modules.Publish(ctx, []byte(variantManifest), variant, "test"); err != nil {
		t.Fatal(err)
	}
	if err := g.Modules.Activate(ctx, m.Name, "1.0.1-variant"); err != nil {
		t.Fatal(err)
	}
	resp, body := post(t, g, "/chat/completions", hello)
	if resp.StatusCode != 200 {
		t.Fatalf("variant: %d %s", resp.StatusCode, body.Raw)
	}
	if got := up.Last().Header.Get("X-Switchyard-Adapter"); got != "openai/variant" {
		t.Fatalf("after the swap the upstream saw adapter %q, want openai/variant", got)
	}
	if got := nativeHooks(); got != "" {
		t.Fatalf("the variant build runs %q natively although it computes otherwise", got)
	}
	// A module whose chat hook fails: the request fails, nothing falls back to Go.
	broken, err := os.ReadFile(filepath.Join(root, "build", "testdata", "failing.wasm"))
	if err != nil {
		t.Fatalf("failing module missing (make build): %v", err)
	}
	bm := strings.Replace(string(mf), `"version": "1.0.0"`, `"version": "9.9.9"`, 1)
	if _, err := g.Modules.Publish(ctx, []byte(bm), broken, "test"); err != nil {
		t.Fatal(err)
	}
	if err := g.Modules.Activate(ctx, m.Name, "9.9.9"); err != nil {
		t.Fatal(err)
	}
	before := up.Count()
	resp, body = post(t, g, "/chat/completions", hello)
	wantError(t, resp, body, 502, "module openai@9.9.9 failed in chat_request")
	if up.Count() != before {
		t.Fatal("a request reached the upstream although the adapter failed")
	}
}

func TestEmbeddings(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	vec := func(s string) []float32 { return demo.Vector(s, 16) }
	t.Run("string and batch in order", func(t *testing.T) {
		resp, body := post(t, g, "/embeddings", `{"model":"test/embed","input":["first","second","third"]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
		data := body.Get("data").Array()
		if len(data) != 3 {
			t.Fatalf("%d entries", len(data))
		}
		for i, in := range []string{"first", "second", "third"} {
			want := vec(`"` + in + `"`)
			got := data[i].Get("embedding").Array()
			if data[i].Get("index").Int() != int64(i) || len(got) != 16 || float32(got[0].Float()) != want[0] {
				t.Fatalf("entry %d is not the embedding of %q: %s", i, in, data[i].Raw)
			}
		}
		if body.Get("model").Str != "test/embed" || !body.Get("usage.prompt_tokens").Exists() {
			t.Fatalf("response %s", body.Raw)
		}
	})
	t.Run("multimodal text is flattened for the provider", func(t *testing.T) {
		resp, body := post(t, g, "/embeddings", `{"model":"test/text-embed","input":[{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
		sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
		if sent.Get("input.0").Str != "a\nb" {
			t.Fatalf("upstream input %s", sent.Get("input").Raw)
		}
	})
	t.Run("image input on an image model", func(t *testing.T) {
		resp, body := post(t, g, "/embeddings", `{"model":"test/embed","input":[{"content":[{"type":"text","text":"cat"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`)
		if resp.StatusCode != 200 || len(body.Get("data").Array()) != 1 {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
	})
	t.Run("image input on a text model", func(t *testing.T) {
		resp, body := post(t, g, "/embeddings", `{"model":"test/text-embed","input":[{"content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`)
		wantError(t, resp, body, 400, "does not accept image input")
	})
	t.Run("base64", func(t *testing.T) {
		resp, body := post(t, g, "/embeddings", `{"model":"test/embed","input":"hi","encoding_format":"base64"}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body.Raw)
		}
		raw, err := base64.StdEncoding.DecodeString(body.Get("data.0.embedding").Str)
		if err != nil || len(raw) != 64 {
			t.Fatalf("not base64 float32s: %s", body.Get("data.0.embedding").Raw)
		}
		if got, want := math.Float32frombits(binary.LittleEndian.Uint32(raw)), vec(`hi`)[0]; got != want {
			t.Fatalf("first float %v, want %v", got, want)
		}
	})
	errs := []struct {
		name, body string
		status     int
		msg        string
	}{
		{"missing model", `{"input":"x"}`, 400, "model"},
		{"missing input", `{"model":"test/embed"}`, 400, "input"},
		{"unknown model", `{"model":"no/such","input":"x"}`, 404, "no/such"},
		{"chat model", `{"model":"test/chat","input":"x"}`, 404, "not an embedding model"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, g, "/embeddings", tc.body)
			wantError(t, resp, body, tc.status, tc.msg)
		})
	}
	t.Run("upstream overloaded", func(t *testing.T) {
		g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 529})
		defer g.Upstreams["alpha"].SetFaults(demo.Faults{})
		resp, body := post(t, g, "/embeddings", `{"model":"test/embed","input":"x"}`)
		wantError(t, resp, body, 529, "alpha")
	})
}

func TestModelLists(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	resp, b, err := g.Request("GET", "/embeddings/models", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", err, resp)
	}
	var ids []string
	gjson.GetBytes(b, "data").ForEach(func(_, v gjson.Result) bool {
		ids = append(ids, v.Get("id").Str)
		if v.Get("id").Str == "test/embed" && v.Get("context_length").Int() != 8192 {
			t.Errorf("context_length %s", v.Raw)
		}
		return true
	})
	if strings.Join(ids, ",") != "test/embed,test/text-embed" {
		t.Fatalf("embedding models %v", ids)
	}
	resp, b, _ = g.Request("GET", "/models", "")
	// The catalog's three models, and the router model ids of the router
	// plugins installed (routers.go; routers_e2e_test.go checks them).
	catalog, routers := 0, map[string]bool{}
	for _, m := range gjson.GetBytes(b, "data").Array() {
		if r := m.Get("router").Str; r != "" {
			routers[m.Get("id").Str] = true
		} else {
			catalog++
		}
	}
	if resp.StatusCode != 200 || catalog != 3 || !routers["switchyard/auto"] || !routers["switchyard/pareto-code"] {
		t.Fatalf("models: %s", b)
	}
	resp, b, _ = g.Request("GET", "/embeddings/models", "", "Authorization", "")
	if resp.StatusCode != 401 {
		t.Fatalf("unauthenticated list: %d %s", resp.StatusCode, b)
	}
}

// TestRequestDeadline: the whole request past timeouts.request is a 408,
// for JSON and for a stream that has started.
func TestRequestDeadline(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) {
		c.Timeouts.Request = config.Duration(400 * time.Millisecond)
		c.Timeouts.Attempt = config.Duration(5 * time.Second)
	}})
	g.Upstreams["alpha"].SetFaults(demo.Faults{Delay: 2 * time.Second})
	resp, body := post(t, g, "/chat/completions", hello)
	wantError(t, resp, body, 408, "time limit")
	g.Upstreams["alpha"].SetFaults(demo.Faults{ChunkDelay: 300 * time.Millisecond})
	raw := readStream(t, g, `{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"a b c d e f g"}]}`)
	if !strings.Contains(raw, `"code":408`) || !strings.HasSuffix(strings.TrimSpace(raw), "data: [DONE]") {
		t.Fatalf("%s", raw)
	}
	// An upstream 422 keeps its meaning.
	g.Upstreams["alpha"].SetFaults(demo.Faults{Status: 422})
	resp, body = post(t, g, "/chat/completions", hello)
	wantError(t, resp, body, 422, "alpha")
}
