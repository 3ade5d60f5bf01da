package examples_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/conformance"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/host/wasm/kithost"
)

// TestGuestLibraryHostCalls runs each guest library's host function
// wrappers against the real host (kithost: the engine with a kv store,
// loopback allowed): log, kv_*, count_tokens, chat, chat_batch,
// chat_reserve and http, each result as the module read it (a 70 KiB kv
// value, so results larger than a library's first buffer), a hook's
// failure output and a hook the module lacks. For Rust also a panic: a
// trap (Rust on wasm32 cannot unwind, docs/plugins.md section 6; the module
// is built without log-panics), whose message reaches the failure through
// the guest's stderr (host/wasm stderr.go). The modules are
// build/examples/<lang>/hostcalls.wasm (`make -C examples`; Rust needs
// rustc and libstd-rust-dev-wasm32).
func TestGuestLibraryHostCalls(t *testing.T) {
	for _, lib := range []struct {
		lang, dir, logged, missingHook string
		kv                             []string
		panics                         bool
	}{
		{lang: "rust", dir: "rust", logged: "hello from rust", missingHook: "hook post_chunk is not implemented by this module",
			kv: []string{"get 71680", "deleted", "evicted 0"}, panics: true},
		{lang: "assemblyscript", dir: "as", logged: "hello from assemblyscript", missingHook: "hook 9 is not implemented by this module",
			kv: []string{"get 71680", "deleted"}},
	} {
		t.Run(lib.lang, func(t *testing.T) {
			bin, err := os.ReadFile(filepath.Join("..", "build", "examples", lib.dir, "hostcalls.wasm"))
			if err != nil {
				t.Fatalf("read the %s host-calls test module (run `make -C examples`): %v", lib.lang, err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				w.WriteHeader(201)
				_, _ = w.Write([]byte(r.Method + " " + r.Header.Get("X-Test") + " " + string(b)))
			}))
			t.Cleanup(srv.Close)
			h, err := kithost.New(filepath.Join(os.TempDir(), "switchyard-test-examples"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Close(context.Background()) })
			mf := `{"name":"` + lib.dir + `-hostcalls","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request","post_response"],
				"grants":{"host_functions":["log","http","chat","count_tokens","kv"],"http_domains":["127.0.0.1"]},
				"limits":{"memory_pages":64,"timeout_ms":5000,"pool_size":2}}`
			mod, err := h.Load(context.Background(), []byte(mf), bin)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = mod.Close(context.Background()) })
			// The calls are metered against the env's account (a gateway
			// module's time counts against the calling account's minute),
			// whose burst is a few hundred ms: the tokenizer's one-time load
			// (the first count in this process) would spend it on a loaded
			// machine, so it loads here.
			if _, err := tokenize.Count("openai/gpt-4o", "warm up"); err != nil {
				t.Fatal(err)
			}
			ctx := h.WithEnv(context.Background(), conformance.Env{
				Account: "acct-1",
				Chat: func(_ context.Context, body []byte) (int, []byte, error) {
					return 200, append([]byte("answer to "), body...), nil
				},
				Reserve: func(_ context.Context, plan []byte) (int, []byte, int, error) {
					return 402, []byte(`{"error":{"reason":"insufficient_credits"}}`), 0, nil
				},
			})
			cases := []struct {
				op, arg string
				want    []string
			}{
				{"log", "", []string{"logged"}},
				{"kv", "", lib.kv},
				{"tokens", "hello world", []string{"2"}},
				{"chat", `{"model":"m"}`, []string{"200", `answer to {"model":"m"}`, "200", `answer to {"n":1}`, "200", `answer to {"n":2}`,
					"402", `{"error":{"reason":"insufficient_credits"}}`}},
				{"http", srv.URL + "/x", []string{"201", "POST 1 ping", "error -1: "}},
			}
			for _, tc := range cases {
				t.Run(tc.op, func(t *testing.T) {
					out, err := mod.Call(ctx, abi.HookPreRequest, []byte(`{}`), []byte(tc.op), []byte(tc.arg))
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, f := range out {
						got = append(got, string(f))
					}
					if len(got) != len(tc.want) {
						t.Fatalf("got %q, want %q", got, tc.want)
					}
					for i := range got {
						if got[i] != tc.want[i] && !(strings.HasSuffix(tc.want[i], ": ") && strings.HasPrefix(got[i], tc.want[i])) {
							t.Fatalf("field %d: got %q, want %q (all: %q)", i, got[i], tc.want[i], got)
						}
					}
				})
			}
			var logged bool
			for _, l := range h.Logs() {
				logged = logged || (l.Level == 2 && l.Message == lib.logged)
			}
			if !logged {
				t.Errorf("the module's log line did not reach the host: %+v", h.Logs())
			}

			// A hook's failure output names the hook; the instance is kept.
			_, err = mod.Call(ctx, abi.HookPostResponse, []byte(`{}`), []byte("oops"))
			var f *conformance.Failure
			if !errors.As(err, &f) || f.Broke || f.Status != 502 || !strings.Contains(f.Message, "failed in post_response: refused 4 bytes") {
				t.Fatalf("post_response: %v", err)
			}
			// A hook the module lacks says so.
			_, err = mod.Call(ctx, abi.HookPostChunk, []byte(`{}`), []byte(`{}`))
			if !errors.As(err, &f) || !strings.Contains(f.Message, lib.missingHook) {
				t.Fatalf("post_chunk: %v", err)
			}
			if !lib.panics {
				return
			}
			// A panic traps (no unwinding on wasm32): the call fails naming
			// the hook and carrying the panic's message, which the library's
			// panic hook wrote to stderr; the instance is discarded; the next
			// call works.
			_, err = mod.Call(ctx, abi.HookPreRequest, []byte(`{}`), []byte("panic"), []byte("abc"))
			if !errors.As(err, &f) || !f.Broke || !strings.Contains(f.Message, "failed in pre_request: trapped") ||
				!strings.Contains(f.Message, "(the module wrote: panic in pre_request:") {
				t.Fatalf("panic: %v", err)
			}
			if _, err := mod.Call(ctx, abi.HookPreRequest, []byte(`{}`), []byte("log")); err != nil {
				t.Fatalf("after the panic: %v", err)
			}
		})
	}
}

// TestASExtismHostCalls runs extism:host/user count_tokens and chat from a
// guest built with the Extism AssemblyScript PDK (the way docs/plugins.md
// section 5 shows): the result block's status byte and frame as the guest
// read them, and a denied call's code. The module is
// build/examples/as/extism-hostcalls.wasm (`make -C examples`).
func TestASExtismHostCalls(t *testing.T) {
	bin, err := os.ReadFile(filepath.Join("..", "build", "examples", "as", "extism-hostcalls.wasm"))
	if err != nil {
		t.Fatalf("read the Extism host-calls test module (run `make -C examples`): %v", err)
	}
	h, err := kithost.New(filepath.Join(os.TempDir(), "switchyard-test-examples"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	mf := `{"name":"as-extism-hostcalls","version":"1.0.0","abi":1,"kind":"plugin","runtime":"extism","hooks":["pre_request","post_response"],
		"grants":{"host_functions":["count_tokens","chat"]},"limits":{"memory_pages":64,"pool_size":1}}`
	mod, err := h.Load(context.Background(), []byte(mf), bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mod.Close(context.Background()) })
	out, err := mod.Call(context.Background(), abi.HookPreRequest, []byte(`{}`), []byte("hello world"))
	if err != nil || len(out) != 1 || string(out[0]) != "2" {
		t.Fatalf("count_tokens: %q %v, want [2]", out, err)
	}
	ctx := h.WithEnv(context.Background(), conformance.Env{Account: "a", Chat: func(_ context.Context, body []byte) (int, []byte, error) {
		return 200, append([]byte("answer to "), body...), nil
	}})
	out, err = mod.Call(ctx, abi.HookPostResponse, []byte(`{}`), []byte(`{"model":"m"}`))
	if err != nil || len(out) != 2 || string(out[0]) != "200" || string(out[1]) != `answer to {"model":"m"}` {
		t.Fatalf("chat: %q %v", out, err)
	}
	// Outside a request chat is denied: code 1, which as the hook's output
	// status fails the call with the host's message.
	_, err = mod.Call(context.Background(), abi.HookPostResponse, []byte(`{}`), []byte(`{}`))
	var f *conformance.Failure
	if !errors.As(err, &f) || f.Broke || !strings.Contains(f.Message, "chat is not available to this call") {
		t.Fatalf("chat outside a request: %v", err)
	}
	// Not granted: refused at load, naming the import.
	_, err = h.Load(context.Background(), []byte(strings.Replace(mf, `"count_tokens","chat"`, `"count_tokens"`, 1)), bin)
	if err == nil || !strings.Contains(err.Error(), "extism:host/user.chat which its manifest does not grant") {
		t.Fatalf("chat not granted: %v", err)
	}
}
