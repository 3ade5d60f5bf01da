package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// heldUpstream answers OpenAI chat completions only once release is
// closed, so a test can hold requests in flight for as long as it needs.
func heldUpstream(t *testing.T) (url string, arrived *atomic.Int64, release func()) {
	t.Helper()
	gate := make(chan struct{})
	arrived = &atomic.Int64{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		arrived.Add(1)
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"echo","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	var once atomic.Bool
	release = func() {
		if once.CompareAndSwap(false, true) {
			close(gate)
		}
	}
	t.Cleanup(func() { release(); hs.CloseClientConnections(); hs.Close() })
	return hs.URL + "/v1", arrived, release
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i == 1000 {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Global load shedding: with max_requests_in_flight 4 and four requests
// held upstream, the fifth request is refused at once with 503, Retry-After
// and the spec's envelope (before authentication: even a request without a
// key), /health still answers; once the held requests finish, requests are
// served again.
func TestLoadSheddingOverInFlightBound(t *testing.T) {
	const bound = 4
	url, arrived, release := heldUpstream(t)
	g := start(t, gatewaytest.Options{
		ConfigYAML: strings.ReplaceAll(gatewaytest.DefaultYAML([]string{"alpha"}), "{{url:alpha}}", url),
		Mutate:     func(c *config.Config) { c.Limits.MaxRequestsInFlight = bound },
	})
	done := make(chan int, bound)
	for range bound {
		go func() {
			resp, _, err := g.Request(http.MethodPost, "/chat/completions", hello)
			if err != nil {
				done <- 0
				return
			}
			done <- resp.StatusCode
		}()
	}
	waitFor(t, "the held requests to reach the upstream", func() bool { return arrived.Load() == bound })

	for _, auth := range []string{"Bearer " + g.Key, ""} {
		resp, body := post(t, g, "/chat/completions", hello, "Authorization", auth)
		wantError(t, resp, body, http.StatusServiceUnavailable, "overloaded")
		if resp.Header.Get("Retry-After") == "" {
			t.Fatalf("503 without Retry-After: %v", resp.Header)
		}
	}
	resp, err := http.Get(strings.TrimSuffix(g.URL, "/api/v1") + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/health while shedding: %v %v", resp, err)
	}
	resp.Body.Close()

	release()
	for range bound {
		if s := <-done; s != http.StatusOK {
			t.Fatalf("a held request ended with %d", s)
		}
	}
	resp, body := post(t, g, "/chat/completions", hello)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after the load: %d %s", resp.StatusCode, body.Raw)
	}
}

// rawPost sends a POST with the given headers and returns the connection
// after writing part of the body.
func rawPost(t *testing.T, g *gatewaytest.Gateway, headers, partial string) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(strings.TrimSuffix(g.URL, "/api/v1"), "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a hang fails instead of blocking
	if _, err := io.WriteString(c, "POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"+headers+"\r\n"+partial); err != nil {
		t.Fatal(err)
	}
	return c
}

func readResponse(t *testing.T, c net.Conn) (*http.Response, gjson.Result) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, gjson.ParseBytes(b)
}

// Request body bytes in flight are bounded across connections: while one
// authenticated upload holds most of the budget, another gets 503 with
// Retry-After (not more memory); once the first finishes, the second is
// served.
func TestBodyBytesInFlightBudget(t *testing.T) {
	const budget = 1 << 20
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) { c.Limits.MaxBodyBytesInFlight = budget }})
	pad := func(n int) string {
		return `{"model":"test/chat","messages":[{"role":"user","content":"hi"}],"user":"` + strings.Repeat("u", n) + `"}`
	}
	big := pad(900 << 10)
	auth := "Authorization: Bearer " + g.Key + "\r\nContent-Type: application/json\r\n"
	// The first upload's bytes are held once the gateway has read them:
	// until then a second request may still fit, so retry until it is
	// refused. While the first is still growing its buffer, a second one
	// in flight can take the budget first and the first is refused
	// instead (on a loaded machine): then start over with a new first.
	answered := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		defer func() { _ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) }()
		var one [1]byte
		n, err := c.Read(one[:])
		var ne net.Error
		return n > 0 || (err != nil && !(errors.As(err, &ne) && ne.Timeout()))
	}
	var first net.Conn
	var resp *http.Response
	var body gjson.Result
	for attempt := 0; resp == nil || resp.StatusCode == http.StatusOK; attempt++ {
		if attempt == 10 {
			t.Fatal("the first upload was refused ten times over: its bytes were never held")
		}
		first = rawPost(t, g, auth+fmt.Sprintf("Content-Length: %d\r\n", len(big)), big[:len(big)-10])
		for i := 0; i < 500; i++ {
			if resp, body = post(t, g, "/chat/completions", pad(600<<10)); resp.StatusCode != http.StatusOK || answered(first) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wantError(t, resp, body, http.StatusServiceUnavailable, "request bodies in flight")
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	if _, err := io.WriteString(first, big[len(big)-10:]); err != nil {
		t.Fatal(err)
	}
	if r, b := readResponse(t, first); r.StatusCode != http.StatusBadRequest && r.StatusCode != http.StatusOK {
		t.Fatalf("first upload: %d %s", r.StatusCode, b.Raw)
	}
	resp, body = post(t, g, "/chat/completions", pad(600<<10))
	if resp.StatusCode == http.StatusServiceUnavailable {
		t.Fatalf("the budget was not given back: %s", body.Raw)
	}
}

// A chunked body (no Content-Length) over max_body_bytes is refused with
// 413 and the envelope while it is read, and a chunked body within the
// limit is served: the limit holds for bodies whose size is not declared.
func TestChunkedBodyLimit(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) { c.MaxBodyBytes = 64 << 10 }})
	auth := "Authorization: Bearer " + g.Key + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
	chunk := func(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }
	over := `{"model":"test/chat","messages":[{"role":"user","content":"` + strings.Repeat("x", 70<<10) + `"}]}`
	c := rawPost(t, g, auth, chunk(over[:40<<10])+chunk(over[40<<10:])+"0\r\n\r\n")
	resp, body := readResponse(t, c)
	wantError(t, resp, body, http.StatusRequestEntityTooLarge, "64 KiB")

	c = rawPost(t, g, auth, chunk(hello[:20])+chunk(hello[20:])+"0\r\n\r\n")
	if resp, body := readResponse(t, c); resp.StatusCode != http.StatusOK || body.Get("choices.0.message.content").Str == "" {
		t.Fatalf("chunked body within the limit: %d %s", resp.StatusCode, body.Raw)
	}
}

// A request rejected before its body was read (here 401) closes its
// connection after the answer, instead of parsing the unread body as the
// next request on a keep-alive connection.
func TestUnreadBodyClosesConnection(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	c := rawPost(t, g, fmt.Sprintf("Content-Length: %d\r\n", len(hello)), hello)
	resp, body := readResponse(t, c)
	wantError(t, resp, body, http.StatusUnauthorized, "Missing Authentication header")
	if !resp.Close {
		t.Fatalf("connection kept alive after an unread body: %v", resp.Header)
	}
}

// A connection that sends nothing, or stops in the middle of its headers,
// is closed by the gateway after limits.header_timeout instead of holding
// a descriptor and a connection slot until the client leaves.
func TestSilentConnectionsAreClosed(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) { c.Limits.HeaderTimeout = config.Duration(time.Second) }})
	addr := strings.TrimPrefix(strings.TrimSuffix(g.URL, "/api/v1"), "http://")
	for _, sent := range []string{"", "POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // the test's own bound, far past the gateway's
		_, _ = io.WriteString(c, sent)
		_, err = io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Fatalf("after sending %q: the gateway did not close the connection: %v", sent, err)
		}
	}
}

// A pre_request plugin's rewrite is held to max_body_bytes like the
// client's request: a body just under the limit that the plugin grows past
// it is a 502 naming the limit, and nothing goes upstream.
func TestPluginOutputOverBodyLimit(t *testing.T) {
	body := withPlugins(`[{"id":"testplugin","mode":"rewrite"}]`) // rewrite adds "[checked] " (10 bytes)
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) { c.MaxBodyBytes = len(body) + 5 }})
	// Published through the registry: the module's upload is itself over
	// this tiny body limit.
	wasmPath, mf := testPlugin(t)
	bin, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Modules.PublishAndActivate(context.Background(), "", []byte(mf), bin, "test"); err != nil {
		t.Fatal(err)
	}
	resp, b := post(t, g, "/chat/completions", body)
	wantError(t, resp, b, http.StatusBadGateway, "over the gateway's limit")
	if n := g.Upstreams["alpha"].Count(); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
}

// A non-streaming upstream answer over limits.max_upstream_body_bytes is a
// 502 that names the limit, whether the upstream declares its length or
// not; an answer within it is served.
func TestUpstreamAnswerOverLimit(t *testing.T) {
	var size atomic.Int64
	var declare atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		content := strings.Repeat("x", int(size.Load()))
		b := `{"id":"x","object":"chat.completion","created":1,"model":"echo","choices":[{"index":0,"message":{"role":"assistant","content":"` + content + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
		w.Header().Set("Content-Type", "application/json")
		if declare.Load() { // else net/http sends it chunked
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		}
		_, _ = io.WriteString(w, b)
	}))
	t.Cleanup(hs.Close)
	g := start(t, gatewaytest.Options{
		ConfigYAML: strings.ReplaceAll(gatewaytest.DefaultYAML([]string{"alpha"}), "{{url:alpha}}", hs.URL+"/v1"),
		Mutate:     func(c *config.Config) { c.Limits.MaxUpstreamBodyBytes = 1 << 20 },
	})
	size.Store(2 << 20)
	for _, d := range []bool{true, false} {
		declare.Store(d)
		resp, body := post(t, g, "/chat/completions", hello)
		wantError(t, resp, body, http.StatusBadGateway, "limits.max_upstream_body_bytes")
	}
	size.Store(512 << 10)
	resp, body := post(t, g, "/chat/completions", hello)
	if resp.StatusCode != http.StatusOK || len(body.Get("choices.0.message.content").Str) != 512<<10 {
		t.Fatalf("an answer within the limit: %d %.200s", resp.StatusCode, body.Raw)
	}
}

// Over max_body_bytes the client reads the 413 envelope every time, though
// it uploads its whole body before reading (no Expect: 100-continue), as
// Node's fetch and the openai SDKs do: the gateway answers from the
// declared length and its lingering close drains the upload instead of
// resetting the connection.
func TestOversizedBodyGets413Reliably(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	for _, size := range []int{11 << 20, 64 << 20} {
		body := strings.Repeat("x", size)
		for round := range 3 {
			c := rawPost(t, g, "Authorization: Bearer "+g.Key+"\r\nContent-Type: application/json\r\n"+fmt.Sprintf("Content-Length: %d\r\n", size), "")
			_, _ = io.WriteString(c, body) // may fail once the gateway has answered
			resp, b := readResponse(t, c)
			c.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || b.Get("error.code").Int() != 413 || !strings.Contains(b.Get("error.message").Str, "10 MiB") {
				t.Fatalf("%d MiB, round %d: %d %s", size>>20, round, resp.StatusCode, b.Raw)
			}
		}
	}
}

// An open stream counts as in flight for its whole length, not only until
// its handler returns: with max_requests_in_flight 1, a request made while
// a stream is still sending is shed, and served once the stream is over.
func TestOpenStreamCountsAsInFlight(t *testing.T) {
	g := start(t, gatewaytest.Options{Mutate: func(c *config.Config) { c.Limits.MaxRequestsInFlight = 1 }})
	// Ten words half a second apart: the stream stays open for seconds
	// after its first chunk.
	g.Upstreams["alpha"].SetFaults(demo.Faults{ChunkDelay: 500 * time.Millisecond, Reply: "one two three four five six seven eight nine ten"})
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/chat/completions",
		strings.NewReader(`{"model":"test/chat","stream":true,"messages":[{"role":"user","content":"slowly"}]}`))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for { // the first chunk with content: the stream is under way
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended early: %v", err)
		}
		if strings.Contains(line, `"content":"one`) {
			break
		}
	}
	r2, body := post(t, g, "/chat/completions", hello)
	wantError(t, r2, body, http.StatusServiceUnavailable, "overloaded")
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("stream did not finish: %q", rest)
	}
	waitFor(t, "the stream's slot to be given back", func() bool {
		r3, _, err := g.Request(http.MethodPost, "/chat/completions", hello)
		return err == nil && r3.StatusCode == http.StatusOK
	})
}

// A compressed request body is refused with 415 before anything decodes
// it: fiber would expand it whole, with no bound (a 50 KB gzip of 50 MB
// here; 300 KB became a 1.4 GB peak). Content-Encoding: identity is the
// body as it is.
func TestCompressedBodyRefused(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	gz := func(s string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = io.WriteString(zw, s)
		_ = zw.Close()
		return b.String()
	}
	bomb := gz(`{"model":"test/chat","messages":[{"role":"user","content":"` + strings.Repeat("A", 50<<20) + `"}]}`)
	for _, tc := range []struct{ name, body, encoding string }{
		{"gzip", gz(hello), "gzip"},
		{"bomb", bomb, "gzip"},
		{"deflate spelled oddly", gz(hello), " Deflate "},
		{"br", gz(hello), "br"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.Ledger.Balance(g.AccountID)
			resp, body := post(t, g, "/chat/completions", tc.body, "Content-Encoding", tc.encoding)
			wantError(t, resp, body, http.StatusUnsupportedMediaType, "send the JSON uncompressed")
			if after := g.Ledger.Balance(g.AccountID); after != before {
				t.Fatalf("a refused request moved the balance: %+v → %+v", before, after)
			}
		})
	}
	resp, body := post(t, g, "/chat/completions", hello, "Content-Encoding", "identity")
	if resp.StatusCode != http.StatusOK || body.Get("choices.0.message.content").Str == "" {
		t.Fatalf("identity: %d %s", resp.StatusCode, body.Raw)
	}
}
