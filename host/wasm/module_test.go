package wasm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/agentbody"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/tidwall/gjson"
)

// loadOpenAI loads the adapter that `make build` produced.
func loadOpenAI(t testing.TB) *wasm.Module {
	t.Helper()
	root := filepath.Join("..", "..")
	bin, err := os.ReadFile(filepath.Join(root, "build", "wasm", "openai.wasm"))
	if err != nil {
		t.Fatalf("read adapter (run `make build` first): %v", err)
	}
	mf, err := os.ReadFile(filepath.Join(root, "plugins", "openai", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(mf)
	if err != nil {
		t.Fatal(err)
	}
	e := wasm.NewEngine(wasm.Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero")})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	mod, err := e.Load(context.Background(), m, bin)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func TestOpenAIChatRequest(t *testing.T) {
	mod := loadOpenAI(t)
	body := `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}],"stream":true,"provider":{"sort":"price"},"top_k":3,"temperature":0.5,"reasoning":{"effort":"low"},"session_id":"s1"}`
	out, err := mod.Call(context.Background(), abi.HookChatRequest, []byte(`{"model":"gpt-4o-2024","drop":["top_k"]}`), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out.Field(0)); got != "POST" {
		t.Fatalf("method %q", got)
	}
	if got := string(out.Field(1)); got != "/chat/completions" {
		t.Fatalf("path %q", got)
	}
	if h := string(out.Field(2)); !strings.Contains(h, "Authorization: Bearer "+abi.APIKeyPlaceholder) {
		t.Fatalf("headers %q lack the key placeholder", h)
	}
	up := out.Field(3)
	if !gjson.ValidBytes(up) {
		t.Fatalf("invalid upstream body %s", up)
	}
	checks := map[string]string{
		"model":                        "gpt-4o-2024",
		"temperature":                  "0.5",
		"reasoning_effort":             "low",
		"stream_options.include_usage": "true",
		"messages.0.content":           "hi",
	}
	for path, want := range checks {
		if got := gjson.GetBytes(up, path).String(); got != want {
			t.Errorf("%s = %q, want %q (body %s)", path, got, want, up)
		}
	}
	for _, gone := range []string{"provider", "top_k", "session_id", "reasoning"} {
		if gjson.GetBytes(up, gone).Exists() {
			t.Errorf("%s should be dropped: %s", gone, up)
		}
	}
}

// BenchmarkAdapterHooks measures each hook of the OpenAI adapter through the
// native ABI: one copy in, the guest's transform, one copy out. The
// response and stream hooks are declared passthrough, so the host never
// calls them on the request path; they are measured for adapters that do.
func BenchmarkAdapterHooks(b *testing.B) {
	mod := loadOpenAI(b)
	chat := func(n int) []byte {
		return []byte(`{"model":"openai/gpt-4o","messages":[{"role":"system","content":"` + strings.Repeat("x", n) + `"},{"role":"user","content":"hi"}],"temperature":0.5,"provider":{"sort":"price"}}`)
	}
	chunk := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}`)
	ctx := []byte(`{"model":"gpt-4o","provider":"openai","stream":false,"drop":["top_k"]}`)
	cases := []struct {
		name   string
		hook   abi.Hook
		fields [][]byte
	}{
		{"chat_request/1KB", abi.HookChatRequest, [][]byte{ctx, chat(900)}},
		{"chat_request/10KB", abi.HookChatRequest, [][]byte{ctx, chat(10 << 10)}},
		{"chat_request/100KB", abi.HookChatRequest, [][]byte{ctx, chat(100 << 10)}},
		// The request path's agent-shaped bodies (docs/performance.md).
		{"chat_request/agent/1KB", abi.HookChatRequest, [][]byte{ctx, agentbody.Chat("openai/gpt-4o", false, 1<<10)}},
		{"chat_request/agent/32KB", abi.HookChatRequest, [][]byte{ctx, agentbody.Chat("openai/gpt-4o", false, 32<<10)}},
		{"chat_request/agent/128KB", abi.HookChatRequest, [][]byte{ctx, agentbody.Chat("openai/gpt-4o", false, 128<<10)}},
		{"chat_request/agent/1024KB", abi.HookChatRequest, [][]byte{ctx, agentbody.Chat("openai/gpt-4o", false, 1<<20)}},
		{"embed_request/batch8", abi.HookEmbedRequest, [][]byte{ctx, []byte(`{"model":"openai/te3","input":["a","b","c","d","e","f","g","h"]}`)}},
		{"chat_stream_event", abi.HookChatStreamEvent, [][]byte{ctx, chunk, nil}},
		{"error", abi.HookError, [][]byte{ctx, []byte("429"), []byte(`{"error":{"message":"Rate limit reached","type":"requests"}}`)}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			size := 0
			for _, f := range tc.fields {
				size += len(f)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := mod.Call(context.Background(), tc.hook, tc.fields...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
