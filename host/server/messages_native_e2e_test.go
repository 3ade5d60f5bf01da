package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// The Messages front door's native mode (docs/front-doors.md): routed to
// an Anthropic-format provider, a Messages request goes through as the
// client sent it and the provider's answer comes back as it sent it. The
// payloads are Anthropic's documented ones (testdata/messages_native/SOURCES.md).

// nativeFixture reads a file of testdata/messages_native.
func nativeFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "messages_native", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// anthropicFake is an Anthropic Messages upstream that records what it
// received and answers with a fixture: JSON, or the SSE stream when the
// request asks for one; with down set, Anthropic's 529.
type anthropicFake struct {
	json, sse []byte
	down      atomic.Bool

	mu     sync.Mutex
	bodies [][]byte
	header []http.Header
}

func (f *anthropicFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.header = append(f.header, r.Header.Clone())
	f.mu.Unlock()
	switch {
	case f.down.Load():
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	case gjson.GetBytes(body, "stream").Bool():
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(f.sse)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(f.json)
	}
}

// last is the last request received, and its headers.
func (f *anthropicFake) last(t *testing.T) ([]byte, http.Header) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		t.Fatal("the Anthropic upstream received nothing")
	}
	return f.bodies[len(f.bodies)-1], f.header[len(f.header)-1]
}

func (f *anthropicFake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// startNative is a gateway with test/claude on the fake Anthropic
// upstream and test/chat on the OpenAI-format demo upstream alpha.
func startNative(t *testing.T) (*gatewaytest.Gateway, *anthropicFake) {
	t.Helper()
	f := &anthropicFake{json: nativeFixture(t, "message_thinking.json"), sse: nativeFixture(t, "stream_thinking.sse")}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	yml := `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: anth, name: Anthropic, adapter: anthropic, base_url: "` + srv.URL + `", api_key_env: ANTH_KEY, data_collection: deny, region: us}
  - {slug: alpha, name: alpha, adapter: openai, base_url: "{{url:alpha}}", data_collection: deny, region: us}
models:
  - id: test/claude
    kind: chat
    context_length: 400000
    endpoints:
      - {provider: anth, upstream_model: claude-test-1, max_output: 32000, price: {prompt: 3, completion: 15}}
  - id: test/chat
    kind: chat
    context_length: 400000
    endpoints:
      - {provider: alpha, upstream_model: echo, max_output: 32000, price: {prompt: 1, completion: 2}}
`
	g := start(t, gatewaytest.Options{ConfigYAML: yml, Providers: []string{"alpha"},
		Env: map[string]string{"ANTH_KEY": "sk-ant-test-0123456789"}})
	return g, f
}

// A multi-turn request with a thinking block and its signature, a
// redacted_thinking block and cache_control breakpoints reaches the
// Anthropic upstream byte for byte, without the gateway's own fields;
// anthropic-beta is forwarded; the answer's thinking block and signature,
// stop_sequence and cache usage reach the client as the upstream sent
// them; the generation is charged by the upstream's usage.
func TestMessagesNativeJSON(t *testing.T) {
	g, f := startNative(t)
	req := nativeFixture(t, "request_thinking_tools.json")
	resp, b, err := g.Request(http.MethodPost, "/messages?beta=true", string(req), anthropicHeaders(g.Key)...)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if want := nativeFixture(t, "message_thinking.json"); !bytes.Equal(b, want) {
		t.Fatalf("the client got\n%s\nnot the upstream's answer\n%s", b, want)
	}

	sent, h := f.last(t)
	for _, k := range []string{"messages", "system", "tools", "thinking", "stop_sequences", "max_tokens"} {
		if got, want := gjson.GetBytes(sent, k).Raw, gjson.GetBytes(req, k).Raw; got != want {
			t.Fatalf("%s sent upstream\n%s\nnot as the client wrote it\n%s", k, got, want)
		}
	}
	// The whole body: the client's, its model the provider's, without the
	// gateway's fields.
	want, _ := sjson.SetBytes(req, "model", "claude-test-1")
	want, _ = sjson.DeleteBytes(want, "session_id")
	want, _ = sjson.DeleteBytes(want, "provider")
	if !bytes.Equal(sent, want) {
		t.Fatalf("sent upstream\n%s\nwant\n%s", sent, want)
	}
	if sig := gjson.GetBytes(sent, "messages.1.content.0.signature").Str; sig != "BDaL4VrbR2Oj0hO4XpJxT28J5TILnCrrUXoKiiNBZW9P+nr8XSj1zuZzAl4egiCCpQNvfyUuFFJP5CncdYZEQPPmLxYsNrcs...." {
		t.Fatalf("signature %q", sig)
	}
	if h.Get("anthropic-beta") != "context-management-2025-06-27" || h.Get("x-api-key") != "sk-ant-test-0123456789" || h.Get("anthropic-version") == "" {
		t.Fatalf("upstream headers %v", h)
	}

	// Billing: the upstream's usage, input + both cache counts as prompt.
	id := resp.Header.Get("X-Generation-Id")
	rec := generation(t, g, g.Key, id)
	if rec.Get("tokens_prompt").Int() != 50+1200+800 || rec.Get("tokens_completion").Int() != 503 ||
		rec.Get("model").Str != "test/claude" || rec.Get("provider_name").Str != "anth" || rec.Get("status").Str != "success" {
		t.Fatalf("generation %s", rec.Raw)
	}
	// … the same charge as the same answer on the translated path.
	resp, chat := post(t, g, "/chat/completions", `{"model":"test/claude","max_tokens":16000,"messages":[{"role":"user","content":"What's the weather in Paris?"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, chat.Raw)
	}
	viaChat := generation(t, g, g.Key, chat.Get("id").Str)
	for _, k := range []string{"total_cost", "tokens_prompt", "tokens_completion", "native_tokens_cached"} {
		if rec.Get(k).Raw != viaChat.Get(k).Raw {
			t.Fatalf("%s: native %s, translated %s\n%s\n%s", k, rec.Get(k).Raw, viaChat.Get(k).Raw, rec.Raw, viaChat.Raw)
		}
	}
	if rec.Get("total_cost").Float() <= 0 || rec.Get("upstream_anomaly").Exists() && rec.Get("upstream_anomaly").Type != gjson.Null {
		t.Fatalf("generation %s", rec.Raw)
	}
	t.Run("held on the native body", func(t *testing.T) { nativeHoldFromNativeBody(t, g, f) })
}

// A native stream: the upstream's events — thinking_delta,
// signature_delta, ping, the usage — reach the client as they came, and
// the generation is charged by the upstream's usage.
func TestMessagesNativeStream(t *testing.T) {
	g, f := startNative(t)
	req, _ := sjson.SetBytes(nativeFixture(t, "request_thinking_tools.json"), "stream", true)
	resp, b, err := g.Request(http.MethodPost, "/messages?beta=true", string(req), anthropicHeaders(g.Key)...)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, b)
	}
	// Keep-alive comments may go out between events while the upstream is
	// quiet; everything else is the upstream's stream.
	var got []byte
	for line := range bytes.Lines(b) {
		if !bytes.HasPrefix(line, []byte(":")) {
			got = append(got, line...)
		}
	}
	if want := nativeFixture(t, "stream_thinking.sse"); !bytes.Equal(got, want) {
		t.Fatalf("the client got\n%s\nnot the upstream's stream\n%s", got, want)
	}
	sent, _ := f.last(t)
	if gjson.GetBytes(sent, "messages.1.content.0.signature").Str == "" || !gjson.GetBytes(sent, "stream").Bool() {
		t.Fatalf("sent upstream %s", sent)
	}
	rec := generation(t, g, g.Key, resp.Header.Get("X-Generation-Id"))
	if rec.Get("tokens_prompt").Int() != 25+1800 || rec.Get("tokens_completion").Int() != 15 || rec.Get("status").Str != "success" || rec.Get("total_cost").Float() <= 0 {
		t.Fatalf("generation %s", rec.Raw)
	}

	// An error event the provider sends inside the stream ends it with the
	// gateway's error event, once (no message_stop), and the generation
	// failed.
	start, _, _ := bytes.Cut(f.sse, []byte("\n\n"))
	start = append(start, "\n\n"...)
	streamErr, err := os.ReadFile(filepath.Join("..", "..", "plugins", "anthropic", "testdata", "stream_error.sse"))
	if err != nil {
		t.Fatal(err)
	}
	f.sse = append(bytes.Clone(start), streamErr...)
	resp, b, err = g.Request(http.MethodPost, "/messages?beta=true", string(req), anthropicHeaders(g.Key)...)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for line := range bytes.Lines(b) {
		if !bytes.HasPrefix(line, []byte(":")) {
			got = append(got, line...)
		}
	}
	rest, ok := bytes.CutPrefix(got, start)
	if resp.StatusCode != 200 || !ok || bytes.Count(rest, []byte("event: error\n")) != 1 || bytes.Contains(rest, []byte("message_stop")) {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	data := gjson.GetBytes(bytes.TrimPrefix(bytes.TrimSpace(rest), []byte("event: error\ndata: ")), "error")
	if !strings.Contains(data.Get("message").Str, "Overloaded") || data.Get("type").Str == "" {
		t.Fatalf("error event %s", rest)
	}
	if rec := generation(t, g, g.Key, resp.Header.Get("X-Generation-Id")); rec.Get("status").Str != "error" {
		t.Fatalf("generation %s", rec.Raw)
	}
}

// Routed to an endpoint that does not speak Messages — named, or as a
// fallback after the Anthropic one failed — or with a plugin that may
// edit the request, the request is translated as before: thinking blocks
// and cache_control are dropped, and no signature reaches the client.
func TestMessagesNativeOnlyToAnthropic(t *testing.T) {
	g, f := startNative(t)
	alpha := g.Upstreams["alpha"]
	req := nativeFixture(t, "request_thinking_tools.json")
	translated := func(t *testing.T, sent []byte, answer gjson.Result) {
		t.Helper()
		for _, s := range []string{"signature", "redacted_thinking", "cache_control", "session_id"} {
			if bytes.Contains(sent, []byte(s)) {
				t.Fatalf("%s sent upstream: %s", s, sent)
			}
		}
		if !strings.HasPrefix(answer.Get("id").Str, "msg_") || answer.Get(`content.#(type=="thinking")`).Exists() || strings.Contains(answer.Raw, "signature") {
			t.Fatalf("answer %s", answer.Raw)
		}
	}

	t.Run("named", func(t *testing.T) {
		body, _ := sjson.SetBytes(req, "model", "test/chat")
		resp, answer := post(t, g, "/messages", string(body), anthropicHeaders(g.Key)...)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, answer.Raw)
		}
		translated(t, alpha.Last().Body, answer)
	})

	t.Run("fallback", func(t *testing.T) {
		f.down.Store(true)
		defer f.down.Store(false)
		n := f.count()
		body, _ := sjson.SetRawBytes(req, "models", []byte(`["test/claude","test/chat"]`))
		resp, answer := post(t, g, "/messages", string(body), anthropicHeaders(g.Key)...)
		if resp.StatusCode != 200 || f.count() != n+1 {
			t.Fatalf("%d (anthropic reached %d times) %s", resp.StatusCode, f.count()-n, answer.Raw)
		}
		// The failed attempt went natively; the fallback, translated.
		if sent, _ := f.last(t); gjson.GetBytes(sent, "messages.1.content.0.signature").Str == "" {
			t.Fatalf("first attempt sent %s", sent)
		}
		translated(t, alpha.Last().Body, answer)
		if rec := generation(t, g, g.Key, resp.Header.Get("X-Generation-Id")); rec.Get("provider_name").Str != "alpha" || rec.Get("attempts").Int() != 2 {
			t.Fatalf("generation %s", rec.Raw)
		}
	})

	t.Run("plugin", func(t *testing.T) {
		body, _ := sjson.SetRawBytes(req, "plugins", []byte(`[{"id":"response-healing"}]`))
		resp, answer := post(t, g, "/messages", string(body), anthropicHeaders(g.Key)...)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, answer.Raw)
		}
		sent, _ := f.last(t)
		translated(t, sent, answer)
	})
}
