package dispatch

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/wasm"
)

// repoRoot is the repository's top folder, where make builds the modules.
var repoRoot = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}()

// passthrough is an adapter whose response hooks the host skips: what the
// upstream sent is what the reader normalises.
var passthrough = &wasm.Module{ID: "passthrough@1", Manifest: &manifest.Manifest{
	Name: "passthrough", Passthrough: []string{"chat_response", "chat_stream_event", "embed_response"}}}

var (
	failingOnce sync.Once
	failingMod  *wasm.Module
	failingErr  error
)

// failingAdapter is build/testdata/failing.wasm (make wasm), a module whose
// every hook fails, declared with both response hooks.
func failingAdapter(t *testing.T) *wasm.Module {
	t.Helper()
	failingOnce.Do(func() {
		bin, err := os.ReadFile(filepath.Join(repoRoot, "build", "testdata", "failing.wasm"))
		if err != nil {
			failingErr = err
			return
		}
		m, err := manifest.Parse([]byte(`{"name":"failing","version":"1.0.0","abi":1,"kind":"adapter",
			"hooks":["chat_request","chat_response","embed_request","embed_response","error"]}`))
		if err != nil {
			failingErr = err
			return
		}
		e := wasm.NewEngine(wasm.Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero"), Log: slog.New(slog.DiscardHandler)})
		failingMod, failingErr = e.Load(context.Background(), m, bin)
	})
	if failingErr != nil {
		t.Fatalf("the failing test module (run `make wasm` first): %v", failingErr)
	}
	return failingMod
}

// chatBody is a chat completion of about n bytes.
func chatBody(n int) []byte {
	text := strings.Repeat("x", max(n-200, 1))
	return []byte(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"` + text + `"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
}

// embeddingsBody is a list of one embedding of about n bytes.
func embeddingsBody(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5`)
	for b.Len() < n-80 {
		b.WriteString(",0.25")
	}
	b.WriteString(`]}],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}`)
	return b.Bytes()
}

// readerCall is a call whose response is what handler answers, as the
// attempt loop hands it to a Job.Read.
func readerCall(t *testing.T, d *Dispatcher, mod *wasm.Module, handler http.HandlerFunc) *Call {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := &Call{Resp: resp, Module: mod, d: d, Endpoint: &catalog.Endpoint{
		Model: &catalog.Model{ID: "v/m"}, Provider: &catalog.Provider{Slug: "prov"}}}
	t.Cleanup(c.Close)
	return c
}

// TestReadersAgree: the embeddings reader is bounded, fails and marks its
// failures retryable exactly as the chat reader does (issue 30 §5): an
// answer over the configured limit is an error, not a truncated body; a
// connection dropped mid-body and an adapter that fails on the answer are
// errors another endpoint may not have.
func TestReadersAgree(t *testing.T) {
	const limit = 8 << 10
	d := &Dispatcher{MaxResponseBytes: limit}
	type body func(n int) []byte
	cases := []struct {
		name    string
		failing bool // the adapter's response hook fails
		size    int
		serve   func(w http.ResponseWriter, b []byte)
		// wantStatus 0: the reader succeeds.
		wantStatus int
		wantMsg    string
	}{
		{name: "within the limit", size: limit / 2, serve: whole},
		{name: "over the limit, no length declared", size: 4 * limit, serve: chunked,
			wantStatus: http.StatusBadGateway, wantMsg: "limits.max_upstream_body_bytes"},
		{name: "over the limit, length declared", size: 4 * limit, serve: whole,
			wantStatus: http.StatusBadGateway, wantMsg: "limits.max_upstream_body_bytes"},
		{name: "connection dropped mid-body", size: limit / 2, serve: dropped,
			wantStatus: http.StatusBadGateway, wantMsg: "connection closed before the response was complete"},
		{name: "adapter fails on the answer", failing: true, size: 100, serve: whole,
			wantStatus: http.StatusBadGateway, wantMsg: "deliberate failure"},
	}
	readers := []struct {
		kind string
		body body
		read func(context.Context, *Call) ([]byte, *apierr.Error)
	}{
		{"chat", chatBody, ReadChat},
		{"embeddings", embeddingsBody, ReadEmbeddings(1, false)},
	}
	for _, tc := range cases {
		for _, r := range readers {
			t.Run(tc.name+"/"+r.kind, func(t *testing.T) {
				mod := passthrough
				if tc.failing {
					mod = failingAdapter(t)
				}
				b := r.body(tc.size)
				c := readerCall(t, d, mod, func(w http.ResponseWriter, _ *http.Request) { tc.serve(w, b) })
				out, err := r.read(context.Background(), c)
				if tc.wantStatus == 0 {
					if err != nil {
						t.Fatalf("error %d %q, want the answer", err.Status, err.Message)
					}
					if len(out) < tc.size/2 {
						t.Fatalf("answer of %d bytes, want about %d", len(out), tc.size)
					}
					return
				}
				if err == nil {
					t.Fatalf("an answer of %d bytes, want error %d %q", len(out), tc.wantStatus, tc.wantMsg)
				}
				if err.Status != tc.wantStatus || !err.Retryable || !strings.Contains(err.Message, tc.wantMsg) {
					t.Fatalf("error %d retryable=%v %q, want %d retryable containing %q",
						err.Status, err.Retryable, err.Message, tc.wantStatus, tc.wantMsg)
				}
			})
		}
	}
}

func whole(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// chunked sends b in pieces with no length declared.
func chunked(w http.ResponseWriter, b []byte) {
	for len(b) > 0 {
		n := min(len(b), 1000)
		_, _ = w.Write(b[:n])
		w.(http.Flusher).Flush()
		b = b[n:]
	}
}

// dropped declares b's length, sends half of it and closes the connection.
func dropped(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b[:len(b)/2])
	w.(http.Flusher).Flush()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}
