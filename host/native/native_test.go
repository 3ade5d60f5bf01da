package native_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/switchyard/switchyard/host/agentbody"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/native"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/switchyard/switchyard/host/wire"
)

var root = filepath.Join("..", "..")

// load loads the binary at path (relative to the repository) with the
// OpenAI adapter's manifest, edited by edit, on an engine that offers the
// native hooks when natives is true. It returns the module and what the
// engine logged.
func load(t testing.TB, path string, natives bool, edit func(string) string) (*wasm.Module, *bytes.Buffer) {
	t.Helper()
	return loadAs(t, "openai", path, natives, edit)
}

// loadAs is load with the manifest of plugins/<plugin>.
func loadAs(t testing.TB, plugin, path string, natives bool, edit func(string) string) (*wasm.Module, *bytes.Buffer) {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatalf("run `make build` first: %v", err)
	}
	mf, err := os.ReadFile(filepath.Join(root, "plugins", plugin, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(mf)
	if edit != nil {
		text = edit(text)
	}
	m, err := manifest.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	cfg := wasm.Config{CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero"), Log: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))}
	if natives {
		cfg.Natives = native.Hooks()
	}
	e := wasm.NewEngine(cfg)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	mod, err := e.Load(context.Background(), m, bin)
	if err != nil {
		t.Fatal(err)
	}
	return mod, &logs
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func call(t testing.TB, m *wasm.Module, hook abi.Hook, fields ...[]byte) []string {
	t.Helper()
	out, err := m.Call(context.Background(), hook, fields...)
	if err != nil {
		t.Fatalf("%s: %v", hook, err)
	}
	s := make([]string, len(out.Fields))
	for i, f := range out.Fields {
		s[i] = string(f)
	}
	return s
}

// requests are the OpenAI adapter's documented test requests
// (plugins/openai/testdata/requests.json): inputs the samples were not
// written from, to compare the native hook with the module on.
func requests(t testing.TB) [][2][]byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "plugins", "openai", "testdata", "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Ctx     json.RawMessage `json:"ctx"`
		Unified json.RawMessage `json:"unified"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	var out [][2][]byte
	for _, c := range cases {
		var ctx struct {
			Model string   `json:"model"`
			Drop  []string `json:"drop"`
		}
		_ = json.Unmarshal(c.Ctx, &ctx)
		for _, stream := range []bool{false, true} {
			actx := wire.AdapterCtx{Model: ctx.Model, Provider: "openai", Stream: stream, Drop: ctx.Drop, GenerationID: "gen-x", CatalogModel: "openai/" + ctx.Model}
			out = append(out, [2][]byte{actx.JSON(), c.Unified})
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d requests in requests.json", len(out))
	}
	return out
}

// TestStockAdapterRunsNatively: the adapter as built declares its request
// hooks native and answers the samples identically, so the host runs them
// itself; on every documented request the native answer is the module's.
func TestStockAdapterRunsNatively(t *testing.T) {
	nat, logs := load(t, "build/wasm/openai.wasm", true, nil)
	if got := strings.Join(nat.NativeHooks(), ","); got != "chat_request,embed_request" {
		t.Fatalf("native hooks %q, want chat_request,embed_request (log: %s)", got, logs)
	}
	guest, _ := load(t, "build/wasm/openai.wasm", false, nil)
	if len(guest.NativeHooks()) != 0 {
		t.Fatalf("an engine without natives runs %v natively", guest.NativeHooks())
	}
	for i, r := range requests(t) {
		got := call(t, nat, abi.HookChatRequest, r[0], r[1])
		want := call(t, guest, abi.HookChatRequest, r[0], r[1])
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("request %d: native\n %q\nmodule\n %q", i, got, want)
		}
	}
	embed := []string{`{"model":"openai/te3","input":"x"}`, `{"model":"openai/te3","input":["a",{"content":[{"type":"text","text":"b"}]}],"dimensions":8}`}
	for _, body := range embed {
		ctx := wire.AdapterCtx{Model: "te3", Provider: "openai"}.JSON()
		if got, want := call(t, nat, abi.HookEmbedRequest, ctx, []byte(body)), call(t, guest, abi.HookEmbedRequest, ctx, []byte(body)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("embed %s: native %q, module %q", body, got, want)
		}
	}
	// The stamp says which build translated: name/version, as the
	// module's own build stamps it.
	got := call(t, nat, abi.HookChatRequest, requests(t)[0][0], requests(t)[0][1])
	if !strings.Contains(got[2], "X-Switchyard-Adapter: openai/1.0.0\n") {
		t.Fatalf("headers %q", got[2])
	}
}

// TestDeclarationIsChecked: a module that declares the native hooks but
// computes something else — another build, a broken build, a name the
// host does not implement — keeps being called, and the log says why.
func TestDeclarationIsChecked(t *testing.T) {
	cases := []struct {
		name, path string
		edit       func(string) string
		wantLog    string
		wantHooks  string
	}{
		{"variant build", "build/testdata/openai-variant.wasm", nil, "output field 2 differs", ""},
		{"failing build", "build/testdata/failing.wasm", nil, "the module failed", ""},
		{"unknown implementation", "build/wasm/openai.wasm",
			func(s string) string { return strings.Replace(s, `"openai-chat/3"`, `"openai-chat/9"`, 1) },
			"does not implement", "embed_request"},
		{"implementation of another hook", "build/wasm/openai.wasm",
			func(s string) string { return strings.Replace(s, `"openai-chat/3"`, `"openai-embed/1"`, 1) },
			"does not implement", "embed_request"},
		{"version stamped differently", "build/wasm/openai.wasm",
			func(s string) string { return strings.Replace(s, `"version": "1.0.0"`, `"version": "1.0.1"`, 1) },
			"differs", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mod, logs := load(t, tc.path, true, tc.edit)
			if got := strings.Join(mod.NativeHooks(), ","); got != tc.wantHooks {
				t.Fatalf("native hooks %q, want %q", got, tc.wantHooks)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Fatalf("log lacks %q:\n%s", tc.wantLog, logs)
			}
		})
	}
	// The variant is called: its own stamp reaches the upstream headers.
	variant, _ := load(t, "build/testdata/openai-variant.wasm", true, nil)
	r := requests(t)[0]
	if got := call(t, variant, abi.HookChatRequest, r[0], r[1]); !strings.Contains(got[2], "openai/variant") {
		t.Fatalf("variant headers %q", got[2])
	}
	failing, _ := load(t, "build/testdata/failing.wasm", true, nil)
	if _, err := failing.Call(context.Background(), abi.HookChatRequest, r[0], r[1]); err == nil {
		t.Fatal("a failing module's chat_request succeeded: something ran in its place")
	}
}

// TestNativeConcurrent: the native hook runs on many goroutines at once
// (the module's adapter state is per call, not global) and each call gets
// its own answer.
func TestNativeConcurrent(t *testing.T) {
	nat, _ := load(t, "build/wasm/openai.wasm", true, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				model := fmt.Sprintf("m-%d-%d", g, i)
				drop := []string{}
				if i%2 == 0 {
					drop = []string{"temperature"}
				}
				ctx := wire.AdapterCtx{Model: model, Provider: "openai", Drop: drop}.JSON()
				out, err := nat.Call(context.Background(), abi.HookChatRequest, ctx, []byte(`{"messages":[{"role":"user","content":"x"}],"temperature":0.5}`))
				if err != nil {
					errs <- err
					return
				}
				body := string(out.Field(3))
				if !strings.Contains(body, `"model":"`+model+`"`) || strings.Contains(body, "temperature") != (i%2 == 1) {
					errs <- fmt.Errorf("call %d/%d got %s", g, i, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestBorrowedOutput: Call's output is the caller's — later calls, on the
// pooled buffers it came from, do not change it — while CallBorrowed
// lends the pooled buffer itself until Release (no copy, no allocation of
// the body's size).
func TestBorrowedOutput(t *testing.T) {
	nat, _ := load(t, "build/wasm/openai.wasm", true, nil)
	call := func(borrow bool, model string) *wasm.Output {
		ctx := wire.AdapterCtx{Model: model, Provider: "openai"}.JSON()
		body := []byte(`{"messages":[{"role":"user","content":"x"}]}`)
		var out *wasm.Output
		var err error
		if borrow {
			out, err = nat.CallBorrowed(context.Background(), abi.HookChatRequest, ctx, body)
		} else {
			out, err = nat.Call(context.Background(), abi.HookChatRequest, ctx, body)
		}
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	kept := call(false, "model-a")
	if kept.Lent() {
		t.Fatal("Call lent its output")
	}
	keptBody := string(kept.Field(3))
	lent := call(true, "model-b")
	if !lent.Lent() || !strings.Contains(string(lent.Field(3)), `"model":"model-b"`) {
		t.Fatalf("CallBorrowed: lent %v, body %s", lent.Lent(), lent.Field(3))
	}
	lent.Release()
	lent.Release() // twice is harmless
	if lent.Field(3) != nil {
		t.Fatal("a released output still has its fields")
	}
	again := call(true, "model-c") // likely on the buffer just released
	defer again.Release()
	if got := string(kept.Field(3)); got != keptBody {
		t.Fatalf("Call's output changed under a later call:\n%s\nwas\n%s", got, keptBody)
	}
}

// FuzzNativeMatchesModule: on any request body, the native chat hook
// answers what the module answers — including failing when it fails.
func FuzzNativeMatchesModule(f *testing.F) {
	for _, r := range requests(f) {
		f.Add(string(r[0]), string(r[1]))
	}
	f.Add(`{"model":"m","drop":["seed"]}`, `{"seed":1,"reasoning":{"effort":5},"plugins":[{"id":"web"}]}`)
	f.Add(`{}`, `not json`)
	f.Add(`{"model":"m"}`, `{"messages":"\ud800","stream":"yes"}`)
	nat, _ := load(f, "build/wasm/openai.wasm", true, nil)
	guest, _ := load(f, "build/wasm/openai.wasm", false, nil)
	f.Fuzz(func(t *testing.T, ctx, body string) {
		got, gerr := nat.Call(context.Background(), abi.HookChatRequest, []byte(ctx), []byte(body))
		want, werr := guest.Call(context.Background(), abi.HookChatRequest, []byte(ctx), []byte(body))
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("native error %v, module error %v", gerr, werr)
		}
		if gerr != nil {
			return
		}
		if fmt.Sprintf("%q", got.Fields) != fmt.Sprintf("%q", want.Fields) {
			t.Fatalf("native %q\nmodule %q", got.Fields, want.Fields)
		}
	})
}

// BenchmarkChatRequest: the OpenAI adapter's chat_request on a 1 KB body,
// in the module and native, and natively on a 128 KB agent-shaped body
// (the request path's adapter call, issue 29).
func BenchmarkChatRequest(b *testing.B) {
	ctx := wire.AdapterCtx{Model: "gpt-4o", Provider: "openai", Drop: []string{"top_k"}, GenerationID: "gen-1", CatalogModel: "openai/gpt-4o"}.JSON()
	small := []byte(`{"model":"openai/gpt-4o","messages":[{"role":"system","content":"` + strings.Repeat("x", 900) + `"},{"role":"user","content":"hi"}],"temperature":0.5,"provider":{"sort":"price"}}`)
	for _, tc := range []struct {
		name    string
		natives bool
		body    []byte
	}{{"module", false, small}, {"native", true, small}, {"native/agent128KB", true, agentbody.Chat("openai/gpt-4o", false, 128<<10)}} {
		name, natives, body := tc.name, tc.natives, tc.body
		b.Run(name, func(b *testing.B) {
			mod, _ := load(b, "build/wasm/openai.wasm", natives, nil)
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := mod.Call(context.Background(), abi.HookChatRequest, ctx, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAdaptersRunNatively: the Anthropic, Gemini, Bedrock and Cohere
// adapters as built declare their chat hooks native and answer the samples
// identically, so the host runs them itself; on the adapters' documented
// requests in contexts the samples do not use (other models, dropped
// parameters, the native Messages mode), on their recorded answers and on
// every event of their recorded streams, the native answer is the
// module's.
func TestAdaptersRunNatively(t *testing.T) {
	for _, tc := range []struct {
		name             string
		ctxs             []wire.AdapterCtx
		answers, streams []string
	}{
		{"anthropic", []wire.AdapterCtx{
			{Model: "claude-haiku-4-5", Provider: "anthropic", Stream: true, Drop: []string{"temperature"}},
			{Model: "claude-opus-4-1", Provider: "anthropic", Native: "messages", Beta: "context-1m-2025-08-07"},
		}, []string{"message_tool_use.json", "message_web_search.json", "message_cache_read.json"},
			[]string{"stream_basic.sse", "stream_tool_use.sse", "stream_thinking.sse", "stream_web_search.sse", "stream_error.sse"}},
		{"gemini", []wire.AdapterCtx{
			{Model: "gemini-2.5-pro", Provider: "google", Stream: true, Drop: []string{"temperature"}},
			{Model: "gemini-2.5-pro", Provider: "vertex", API: "vertex"},
		}, []string{"response_google_search.json", "response_thinking.json", "response_parallel_calls.json"},
			[]string{"stream_basic.sse", "stream_google_search.sse", "stream_thinking_function_call.sse"}},
		{"bedrock", []wire.AdapterCtx{
			{Model: "meta.llama3-70b-instruct-v1:0", Provider: "bedrock", Stream: true, Drop: []string{"temperature"}},
		}, []string{"converse_response.json", "converse_tool_use.json"}, []string{"converse_stream_tool.jsonl"}},
		{"cohere", []wire.AdapterCtx{
			{Model: "command-r7b-12-2024", Provider: "cohere", Stream: true, Drop: []string{"temperature"}},
		}, []string{"chat_response.json", "chat_thinking.json", "chat_tool_call.json"}, []string{"stream_text.sse", "stream_tool.sse"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := "build/wasm/" + tc.name + ".wasm"
			nat, logs := loadAs(t, tc.name, bin, true, nil)
			if got := strings.Join(nat.NativeHooks(), ","); got != "chat_request,chat_response,chat_stream_event" {
				t.Fatalf("native hooks %q (log: %s)", got, logs)
			}
			guest, _ := loadAs(t, tc.name, bin, false, nil)
			same := func(what string, hook abi.Hook, fields ...[]byte) *wasm.Output {
				t.Helper()
				got, gerr := nat.Call(context.Background(), hook, fields...)
				want, werr := guest.Call(context.Background(), hook, fields...)
				if (gerr == nil) != (werr == nil) {
					t.Fatalf("%s: native error %v, module error %v", what, gerr, werr)
				}
				if gerr == nil && fmt.Sprintf("%q", got.Fields) != fmt.Sprintf("%q", want.Fields) {
					t.Errorf("%s: native\n %q\nmodule\n %q", what, got.Fields, want.Fields)
				}
				return got
			}
			testdata := func(name string) []byte {
				b, err := os.ReadFile(filepath.Join(root, "plugins", tc.name, "testdata", name))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			var cases []struct {
				Name    string          `json:"name"`
				Unified json.RawMessage `json:"unified"`
			}
			if err := json.Unmarshal(testdata("requests.json"), &cases); err != nil || len(cases) < 3 {
				t.Fatalf("requests.json: %v (%d cases)", err, len(cases))
			}
			for _, c := range cases {
				for _, actx := range tc.ctxs {
					same(c.Name, abi.HookChatRequest, actx.JSON(), c.Unified)
				}
			}
			if out := same("stamp", abi.HookChatRequest, tc.ctxs[0].JSON(), cases[0].Unified); out != nil && !strings.Contains(string(out.Field(2)), "X-Switchyard-Adapter: "+tc.name+"/1.0.0\n") {
				t.Fatalf("headers %q", out.Field(2))
			}
			ctx := tc.ctxs[0].JSON()
			for _, name := range tc.answers {
				same(name, abi.HookChatResponse, ctx, testdata(name))
			}
			for _, name := range tc.streams {
				state := []byte{}
				for _, line := range strings.Split(string(testdata(name)), "\n") {
					data, ok := strings.CutPrefix(line, "data: ")
					if !ok && (!strings.HasSuffix(name, ".jsonl") || strings.TrimSpace(line) == "") {
						continue
					}
					if !ok {
						data = line
					}
					out := same(name+": "+data, abi.HookChatStreamEvent, ctx, []byte(data), state)
					if out == nil {
						break
					}
					state = out.Field(0)
				}
			}
		})
	}
}

// BenchmarkAnthropicStreamEvent: one content_block_delta event of a
// stream, in the module and native.
func BenchmarkAnthropicStreamEvent(b *testing.B) {
	ctx := wire.AdapterCtx{Model: "claude-opus-4-1", Provider: "anthropic", Stream: true}.JSON()
	ev := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there, how are you today?"}}`)
	state := []byte(`{"id":"msg_1","model":"claude-opus-4-1","in":11,"cr":0,"cw":0,"tool":-1}`)
	for _, natives := range []bool{false, true} {
		b.Run(map[bool]string{false: "module", true: "native"}[natives], func(b *testing.B) {
			mod, _ := loadAs(b, "anthropic", "build/wasm/anthropic.wasm", natives, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := mod.Call(context.Background(), abi.HookChatStreamEvent, ctx, ev, state); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
