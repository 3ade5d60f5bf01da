package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/wasm"
)

// extismCaller is a hand-made Extism module whose pre_request passes its
// whole input block to extism:host/user name, then hands the result block
// back: as its output when its status byte is 0 (the block is then a valid
// hook output: 0 and a frame), else as its error (error_set), so the test
// reads the raw block (docs/abi.md, "Host functions for Extism guests").
func extismCaller(name string) []byte {
	imports := []imp{
		impInputOffset, impErrorSet,
		{module: "extism:host/user", name: name, params: []byte{i64}, results: []byte{i64}},
		{module: "extism:host/env", name: "load_u8", params: []byte{i64}, results: []byte{i32}},
		{module: "extism:host/env", name: "length", params: []byte{i64}, results: []byte{i64}},
		{module: "extism:host/env", name: "output_set", params: []byte{i64, i64}},
	}
	get := []byte{0x20, 0x00} // local.get 0: the result block
	// hand(block) -> rc: if load_u8(block) { error_set(block); 1 } else { output_set(block, length(block)); 0 }
	hand := fn{params: []byte{i64}, results: []byte{i32}, body: bytes.Join([][]byte{
		get, callImport(3), {0x04, i32}, get, callImport(1), i32const(1),
		{0x05}, get, get, callImport(4), callImport(5), i32const(0), {0x0b},
	}, nil)}
	return module(imports, []fn{hand, preRequest(callImport(0), callImport(2), callImport(6))}, 1)
}

// extismResult calls mod's pre_request with fields and splits the block
// the host function returned: its status byte and its frame's fields.
func extismResult(t *testing.T, ctx context.Context, mod *wasm.Module, fields ...[]byte) (byte, [][]byte) {
	t.Helper()
	out, err := mod.Call(ctx, abi.HookPreRequest, fields...)
	if err == nil {
		return 0, out.Fields
	}
	ae := apierr.From(err)
	prefix := "module x@1.0.0 failed in pre_request: "
	if !strings.HasPrefix(ae.Message, prefix) || len(ae.Message) == len(prefix) {
		t.Fatalf("want the result block as the module's error, got %v", err)
	}
	block := []byte(ae.Message[len(prefix):])
	fs, ferr := abi.Fields(nil, block[1:])
	if ferr != nil {
		t.Fatalf("result block %q: %v", block, ferr)
	}
	return block[0], fs
}

func TestExtismHostFunctions(t *testing.T) {
	e, _ := hostEngine(t, nil, nil)
	load := func(name, grants string) *wasm.Module {
		t.Helper()
		mod, err := e.Load(context.Background(), extismManifest(t, `"grants":{"host_functions":[`+grants+`]},`), extismCaller(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return mod
	}
	bg := context.Background()

	t.Run("count_tokens", func(t *testing.T) {
		mod := load("count_tokens", `"count_tokens"`)
		code, out := extismResult(t, bg, mod, []byte("openai/gpt-4o"), []byte("Hello, world. Hello, world."))
		if n, err := strconv.Atoi(string(out[0])); code != 0 || len(out) != 1 || err != nil || n < 4 {
			t.Fatalf("got code %d %q", code, out)
		}
		code, out = extismResult(t, bg, mod, []byte("only a model"))
		if code != byte(-abi.HostFailed) || len(out) != 1 || !strings.Contains(string(out[0]), "takes [model, text]") {
			t.Fatalf("a frame of one field: code %d %q", code, out)
		}
	})

	t.Run("kv", func(t *testing.T) {
		put, get := load("kv_put", `"kv"`), load("kv_get", `"kv"`)
		a := wasm.WithCallEnv(bg, &wasm.CallEnv{Account: "a"})
		b := wasm.WithCallEnv(bg, &wasm.CallEnv{Account: "b"})
		if code, out := extismResult(t, a, get, []byte("k")); code != byte(-abi.HostNotFound) || len(out) != 1 {
			t.Fatalf("a key never written: code %d %q", code, out)
		}
		if code, out := extismResult(t, a, put, []byte("k"), []byte("v\x00 1"), []byte("60")); code != 0 || len(out) != 0 {
			t.Fatalf("kv_put: code %d %q", code, out)
		}
		if code, out := extismResult(t, a, get, []byte("k")); code != 0 || len(out) != 1 || string(out[0]) != "v\x00 1" {
			t.Fatalf("kv_get: code %d %q", code, out)
		}
		if code, _ := extismResult(t, b, get, []byte("k")); code != byte(-abi.HostNotFound) {
			t.Fatalf("another account read the key: code %d", code)
		}
	})

	t.Run("chat", func(t *testing.T) {
		mod := load("chat", `"chat"`)
		var got string
		env := &wasm.CallEnv{Account: "a", Chat: func(_ context.Context, body []byte) (int, []byte, error) {
			got = string(body)
			return 200, []byte(`{"choices":[]}`), nil
		}}
		code, out := extismResult(t, wasm.WithCallEnv(bg, env), mod, []byte(`{"model":"m"}`))
		if code != 0 || len(out) != 2 || string(out[0]) != "200" || string(out[1]) != `{"choices":[]}` || got != `{"model":"m"}` {
			t.Fatalf("chat: code %d %q (the sub-request got %q)", code, out, got)
		}
		if env.ChatCallsUsed() != 1 {
			t.Fatalf("%d chat calls counted, want 1", env.ChatCallsUsed())
		}
		env.Chat = func(context.Context, []byte) (int, []byte, error) { return 0, nil, errors.New("depth limit") }
		if code, out := extismResult(t, wasm.WithCallEnv(bg, env), mod, []byte(`{}`)); code != byte(-abi.HostFailed) || !strings.Contains(string(out[0]), "depth limit") {
			t.Fatalf("a chat that could not run: code %d %q", code, out)
		}
		if code, _ := extismResult(t, bg, mod, []byte(`{}`)); code != byte(-abi.HostDenied) {
			t.Fatalf("chat outside a request: code %d", code)
		}
	})

	t.Run("chat_batch", func(t *testing.T) {
		mod := load("chat_batch", `"chat"`)
		env := &wasm.CallEnv{Account: "a", Chat: func(_ context.Context, body []byte) (int, []byte, error) {
			return 200, append([]byte("re:"), body...), nil
		}}
		code, out := extismResult(t, wasm.WithCallEnv(bg, env), mod, []byte("a"), []byte("b"))
		if code != 0 || len(out) != 4 || string(out[1]) != "re:a" || string(out[3]) != "re:b" {
			t.Fatalf("chat_batch: code %d %q", code, out)
		}
	})

	t.Run("chat_reserve", func(t *testing.T) {
		mod := load("chat_reserve", `"chat"`)
		env := &wasm.CallEnv{Account: "a", Chat: func(context.Context, []byte) (int, []byte, error) { return 200, nil, nil },
			Reserve: func(context.Context, []byte) (int, []byte, int, error) {
				return 200, []byte(`{"held":"0.1","calls":3}`), 3, nil
			}}
		code, out := extismResult(t, wasm.WithCallEnv(bg, env), mod, []byte(`{"calls":[]}`))
		if code != 0 || len(out) != 2 || string(out[0]) != "200" {
			t.Fatalf("chat_reserve: code %d %q", code, out)
		}
	})

	t.Run("refused at load", func(t *testing.T) {
		for _, tc := range []struct {
			name, grants string
			bin          []byte
			want         string
		}{
			{"chat", `"kv"`, extismCaller("chat"), "extism:host/user.chat which its manifest does not grant"},
			{"chat_batch", `"kv"`, extismCaller("chat_batch"), "extism:host/user.chat_batch which its manifest does not grant"},
			{"kv_get", `"chat"`, extismCaller("kv_get"), "extism:host/user.kv_get which its manifest does not grant"},
			{"http_request", `"kv"`, extismCaller("http_request"), "extism:host/user.http_request which its manifest does not grant"},
			{"wrong signature", `"chat"`, module([]imp{{module: "extism:host/user", name: "chat", params: []byte{i32, i32}, results: []byte{i64}}}, []fn{preRequest(i32const(0))}, 1), "want [i64] -> [i64]"},
		} {
			_, err := e.Load(bg, extismManifest(t, `"grants":{"host_functions":[`+tc.grants+`]},`), tc.bin)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want a refusal saying %q", tc.name, err, tc.want)
			}
		}
	})
}

// TestExtismHostHTTP: extism:host/user http_request is the host's guarded
// client, so it loads on a production engine (Extism's own http_request
// does not) and keeps the module to public addresses; on an engine that
// allows private networks it reaches a local server.
func TestExtismHostHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo", r.Method)
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(append([]byte("echo:"), b...))
	}))
	defer srv.Close()
	grant := `"grants":{"host_functions":["http"],"http_domains":["127.0.0.1"]},`
	req := func(url string) [][]byte {
		return [][]byte{[]byte("PUT"), []byte(url), []byte("X-Test: 1\n"), []byte("payload")}
	}
	for _, tc := range []struct {
		name    string
		private bool
		url     string
		code    byte
		want    string
	}{
		{"production engine, loopback", false, srv.URL + "/x", byte(-abi.HTTPDenied), "not public"},
		{"ungranted domain", true, "http://example.com/", byte(-abi.HTTPDenied), "not granted"},
		{"development engine", true, srv.URL + "/x", 0, "echo:payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := engineWith(t, wasm.Config{AllowPrivateNetworks: tc.private})
			mod, err := e.Load(context.Background(), extismManifest(t, grant), extismCaller("http_request"))
			if err != nil {
				t.Fatal(err)
			}
			code, out := extismResult(t, context.Background(), mod, req(tc.url)...)
			if code != tc.code || !strings.Contains(string(out[len(out)-1]), tc.want) {
				t.Fatalf("got code %d %q, want %d and %q", code, out, tc.code, tc.want)
			}
			if code == 0 && (string(out[0]) != "202" || !strings.Contains(string(out[1]), "X-Echo: PUT")) {
				t.Fatalf("response frame %q", out)
			}
		})
	}
}
