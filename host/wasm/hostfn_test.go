package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/conformance"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/kv"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/switchyard/switchyard/host/wasm/kithost"
)

// The host functions are exercised through the conformance kit's guest
// (abi/conformance/guest, `make wasm`), which calls each through the SDK
// as its ctx's "case" says, under manifests the tests write.

func kitGuest(t testing.TB) []byte {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join("..", "..", "build", "testdata", "conformance.wasm"))
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	return bin
}

// hostEngine is an engine with a module store (its clock settable) and
// the configuration setup gives it, logging into log.
func hostEngine(t testing.TB, log io.Writer, setup func(c *wasm.Config)) (*wasm.Engine, *fakeClock) {
	t.Helper()
	if log == nil {
		log = io.Discard
	}
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "kv.db"))
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	kvs, err := kv.Open(db, kv.Limits{MaxKeys: 8})
	if err != nil {
		t.Fatal(err)
	}
	kvs.Now = clock.now
	cfg := wasm.Config{
		CacheDir: filepath.Join(os.TempDir(), "switchyard-test-wazero"),
		Log:      slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		KV:       kvs,
	}
	if setup != nil {
		setup(&cfg)
	}
	e := wasm.NewEngine(cfg)
	t.Cleanup(func() {
		_ = e.Close(context.Background())
		_ = db.Close()
	})
	return e, clock
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// kitManifest is the kit guest as a plugin with grants (JSON).
func kitManifest(t testing.TB, grants string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(`{"name":"conformance","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":` + grants + `,"limits":{"pool_size":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const allGrants = `{"host_functions":["log","http","chat","count_tokens","kv","embed","vector"],"http_domains":["127.0.0.1"]`

func loadKit(t testing.TB, e *wasm.Engine, grants string) *wasm.Module {
	t.Helper()
	mod, err := e.Load(context.Background(), kitManifest(t, grants), kitGuest(t))
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// kitCall runs one case of the guest; extra are ctx members (name, value).
func kitCall(t testing.TB, mod *wasm.Module, ctx context.Context, kase string, input []byte, extra ...string) [][]byte {
	t.Helper()
	c := `{"case":` + strconv.Quote(kase)
	for i := 0; i+1 < len(extra); i += 2 {
		c += "," + strconv.Quote(extra[i]) + ":" + strconv.Quote(extra[i+1])
	}
	out, err := mod.Call(ctx, abi.HookPreRequest, []byte(c+"}"), input)
	if err != nil {
		t.Fatalf("%s: %v", kase, err)
	}
	return out.Fields
}

func fields(f [][]byte) string {
	s := make([]string, len(f))
	for i, b := range f {
		s[i] = strconv.Quote(string(b))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// wantHostCode checks the guest reported a failed host call with code.
func wantHostCode(t *testing.T, out [][]byte, code int64) {
	t.Helper()
	if len(out) < 3 || string(out[len(out)-3]) != "error" || string(out[len(out)-2]) != strconv.FormatInt(code, 10) {
		t.Fatalf("got %s, want a failure with code %d", fields(out), code)
	}
}

// TestUngrantedHostFunctionRefused: a module importing a host function its
// manifest does not grant is refused at load, naming the import.
func TestUngrantedHostFunctionRefused(t *testing.T) {
	e := wasm.NewEngine(wasm.Config{})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	call := imp{"switchyard", "", []byte{i32, i32}, []byte{i64}}
	res := imp{"switchyard", abi.HostResult, []byte{i32, i32}, []byte{i32}}
	cases := []struct {
		name    string
		imports []imp
		grants  string
		refused bool
	}{
		{"chat without grant", []imp{with(call, abi.HostChat)}, `["log"]`, true},
		{"chat granted", []imp{with(call, abi.HostChat), res}, `["chat"]`, false},
		{"count_tokens under the chat grant", []imp{with(call, abi.HostCountTokens)}, `["chat"]`, true},
		{"count_tokens granted", []imp{with(call, abi.HostCountTokens), res}, `["count_tokens"]`, false},
		{"kv_get without grant", []imp{with(call, abi.HostKVGet)}, `["http"]`, true},
		{"kv_put without grant", []imp{with(call, abi.HostKVPut)}, `["count_tokens"]`, true},
		{"kv granted", []imp{with(call, abi.HostKVGet), with(call, abi.HostKVPut), res}, `["kv"]`, false},
		{"result alone needs one of them", []imp{res}, `["log","http"]`, true},
		{"unknown host function", []imp{with(call, "kv_list")}, `["kv"]`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := manifest.Parse([]byte(`{"name":"x","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":{"host_functions":` + tc.grants + `}}`))
			if err != nil {
				t.Fatal(err)
			}
			mod, err := e.Load(context.Background(), m, module(tc.imports, abiFuncs("switchyard_abi_v1", nil), 1))
			if !tc.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				_ = mod.Close(context.Background())
				return
			}
			var le *wasm.LoadError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tc.imports[0].name) {
				t.Fatalf("got %v, want a refusal naming %s", err, tc.imports[0].name)
			}
		})
	}
}

func with(i imp, name string) imp { i.name = name; return i }

// TestChatHostFunction: chat runs env.Chat with the module's body, counts
// against the request's budget (shared by all module calls of the
// request), and is denied without a chat function.
func TestChatHostFunction(t *testing.T) {
	e, _ := hostEngine(t, nil, func(c *wasm.Config) { c.ChatCallsPerRequest = 3 })
	mod := loadKit(t, e, allGrants+"}")
	var calls []string
	env := &wasm.CallEnv{Account: "acct", Chat: func(_ context.Context, body []byte) (int, []byte, error) {
		calls = append(calls, string(body))
		return 200, []byte(`{"n":` + strconv.Itoa(len(calls)) + `}`), nil
	}}
	ctx := wasm.WithCallEnv(context.Background(), env)
	for i := 1; i <= 3; i++ {
		out := kitCall(t, mod, ctx, "chat", []byte(`{"i":`+strconv.Itoa(i)+`}`))
		if len(out) != 3 || string(out[0]) != "ok" || string(out[1]) != "200" || string(out[2]) != `{"n":`+strconv.Itoa(i)+`}` {
			t.Fatalf("call %d: %s", i, fields(out))
		}
	}
	wantHostCode(t, kitCall(t, mod, ctx, "chat", []byte(`{}`)), abi.HostBudget)
	if len(calls) != 3 || calls[2] != `{"i":3}` || env.ChatCallsUsed() != 3 {
		t.Errorf("env.Chat got %q (used %d), want the three bodies", calls, env.ChatCallsUsed())
	}
	// The env's own budget wins over the engine's.
	env2 := &wasm.CallEnv{ChatCalls: 1, Chat: env.Chat}
	ctx2 := wasm.WithCallEnv(context.Background(), env2)
	kitCall(t, mod, ctx2, "chat", []byte(`{}`))
	wantHostCode(t, kitCall(t, mod, ctx2, "chat", []byte(`{}`)), abi.HostBudget)
	wantHostCode(t, kitCall(t, mod, context.Background(), "chat", []byte(`{}`)), abi.HostDenied)
}

// TestChatBatchBudget: a batch takes one call of the chat budget per body,
// all or none, and a reservation raises the budget to the calls it planned.
func TestChatBatchBudget(t *testing.T) {
	e, _ := hostEngine(t, nil, func(c *wasm.Config) { c.ChatCallsPerRequest = 3 })
	mod := loadKit(t, e, allGrants+"}")
	var n atomic.Int64
	env := &wasm.CallEnv{Account: "acct", Chat: func(context.Context, []byte) (int, []byte, error) {
		n.Add(1)
		return 200, []byte(`{}`), nil
	}, Reserve: func(context.Context, []byte) (int, []byte, int, error) {
		return 200, []byte(`{"held":1,"calls":6}`), 6, nil
	}}
	ctx := wasm.WithCallEnv(context.Background(), env)
	batch := func(k int) [][]byte {
		fields := [][]byte{[]byte(`{"case":"chat_batch"}`)}
		for range k {
			fields = append(fields, []byte(`{}`))
		}
		out, err := mod.Call(ctx, abi.HookPreRequest, fields...)
		if err != nil {
			t.Fatal(err)
		}
		return out.Fields
	}
	if out := batch(2); len(out) != 5 || string(out[0]) != "ok" {
		t.Fatalf("a batch of 2: %s", fields(out))
	}
	wantHostCode(t, batch(2), abi.HostBudget) // 1 left: refused whole
	if n.Load() != 2 || env.ChatCallsUsed() != 2 {
		t.Fatalf("%d calls ran, %d counted", n.Load(), env.ChatCallsUsed())
	}
	if out := kitCall(t, mod, ctx, "chat_reserve", []byte(`{"calls":[]}`)); len(out) != 3 || string(out[1]) != "200" {
		t.Fatalf("chat_reserve: %s", fields(out))
	}
	if out := batch(6); len(out) != 13 { // 2 used + 6 reserved: 8 in all
		t.Fatalf("after the reservation: %s", fields(out))
	}
	wantHostCode(t, batch(1), abi.HostBudget)
}

// TestCountTokensAgreesWithServer: count_tokens is the count the gateway
// bills with (tokenize.Count), for each vocabulary.
func TestCountTokensAgreesWithServer(t *testing.T) {
	e, _ := hostEngine(t, nil, nil)
	mod := loadKit(t, e, allGrants+"}")
	texts := []string{"", "Hello, world.", "naïve café — 日本語のテキスト 🙂", strings.Repeat("The quick brown fox. ", 50), "<|endoftext|> special markers count as text"}
	for _, model := range []string{"openai/gpt-4o", "openai/gpt-3.5-turbo", "anthropic/claude-sonnet-4", "gpt-5"} {
		for i, text := range texts {
			want, err := tokenize.Count(model, text)
			if err != nil {
				t.Fatal(err)
			}
			out := kitCall(t, mod, context.Background(), "count_tokens", []byte(text), "tok_model", model)
			if len(out) != 2 || string(out[1]) != strconv.FormatInt(want, 10) {
				t.Errorf("%s text %d: got %s, want %d", model, i, fields(out), want)
			}
		}
	}
}

// TestKVHostFunctions: round trip, TTL, per-account and per-owner scopes,
// the quota code.
func TestKVHostFunctions(t *testing.T) {
	e, clock := hostEngine(t, nil, func(c *wasm.Config) { c.Tenants = wasm.TenantLimits{TimeoutMS: 10_000} })
	mod := loadKit(t, e, allGrants+"}")
	tenant, err := e.LoadTenant(context.Background(), "publisher", kitManifest(t, allGrants+"}"), kitGuest(t))
	if err != nil {
		t.Fatal(err)
	}
	a := wasm.WithCallEnv(context.Background(), &wasm.CallEnv{Account: "a"})
	b := wasm.WithCallEnv(context.Background(), &wasm.CallEnv{Account: "b"})
	get := func(m *wasm.Module, ctx context.Context, key string) string {
		out := kitCall(t, m, ctx, "kv_get", nil, "key", key)
		if string(out[0]) == "found" {
			return string(out[1])
		}
		return string(out[0])
	}
	put := func(m *wasm.Module, ctx context.Context, key, val string, ttl int) [][]byte {
		return kitCall(t, m, ctx, "kv_put", []byte(val), "key", key, "ttl", strconv.Itoa(ttl))
	}
	put(mod, a, "page", "cached for a", 60)
	put(mod, a, "forever", "kept", 0)
	cases := []struct {
		name string
		mod  *wasm.Module
		ctx  context.Context
		key  string
		want string
	}{
		{"round trip", mod, a, "page", "cached for a"},
		{"another account", mod, b, "page", "missing"},
		{"no env is account \"\"", mod, context.Background(), "page", "missing"},
		{"a tenant's module of the same name", tenant, a, "page", "missing"},
	}
	for _, tc := range cases {
		if got := get(tc.mod, tc.ctx, tc.key); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	clock.advance(61 * time.Second)
	if got := get(mod, a, "page"); got != "missing" {
		t.Errorf("past its ttl: got %q", got)
	}
	if got := get(mod, a, "forever"); got != "kept" {
		t.Errorf("ttl 0: got %q", got)
	}
	// The store holds 8 keys a scope (hostEngine): "forever" and 7 more.
	out := kitCall(t, mod, a, "kv_fill", []byte("v"), "max", "20")
	if string(out[0]) != "7" {
		t.Errorf("kv_fill stored %s keys, want 7", out[0])
	}
	wantHostCode(t, out, abi.HostQuota)
	if out := put(mod, b, "k", strings.Repeat("x", 2<<20), 0); string(out[0]) != "error" || string(out[1]) != strconv.FormatInt(abi.HostFailed, 10) {
		t.Errorf("a value over the cap: got %s", fields(out))
	}
}

// echoServer records what reaches it and echoes it back in a header and
// the body, as a hostile or careless server on a granted domain might.
type echoServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
	hits int
}

func newEchoServer(t *testing.T, body int) *echoServer {
	s := &echoServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := r.URL.RawQuery + " " + r.Header.Get("X-Api-Key") + " " + r.Header.Get("Authorization")
		s.mu.Lock()
		s.seen = append(s.seen, seen)
		s.hits++
		s.mu.Unlock()
		switch r.URL.Path {
		case "/slow":
			<-r.Context().Done()
			return
		case "/trickle", "/stall":
			// Headers at once, then a byte every 50 ms (20 B/s), or
			// one byte and nothing more.
			w.WriteHeader(200)
			for i := 0; i < 200; i++ {
				if _, err := w.Write([]byte("x")); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				if r.URL.Path == "/stall" {
					<-r.Context().Done()
					return
				}
				select {
				case <-time.After(50 * time.Millisecond):
				case <-r.Context().Done():
					return
				}
			}
			return
		}
		w.Header().Set("X-Echo", seen)
		_, _ = w.Write([]byte("echo " + seen + " "))
		_, _ = w.Write(bytes.Repeat([]byte("b"), body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *echoServer) hostPort() string { u, _ := url.Parse(s.URL); return u.Host }

func (s *echoServer) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// TestHTTPLimits: the request's call budget, the response cap, the
// timeout, and the operator's private hosts (the SSRF guard on for
// everything else).
func TestHTTPLimits(t *testing.T) {
	srv := newEchoServer(t, 100)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	cases := []struct {
		name    string
		lim     wasm.HTTPLimits
		env     *wasm.CallEnv
		kase    string
		url     string
		times   int
		wantOK  int   // calls that succeed (http_repeat)
		wantErr int64 // then this code (0: none)
	}{
		{"private host granted by the operator", wasm.HTTPLimits{PrivateHosts: []string{srv.hostPort()}}, nil, "http_repeat", srv.URL + "/", 1, 1, 0},
		{"private host granted by name without a port", wasm.HTTPLimits{PrivateHosts: []string{"127.0.0.1"}}, nil, "http_repeat", srv.URL + "/", 1, 1, 0},
		{"another port of the private host", wasm.HTTPLimits{PrivateHosts: []string{closedAddr}}, nil, "http_repeat", srv.URL + "/", 1, 0, abi.HTTPDenied},
		{"no private hosts: SSRF guard", wasm.HTTPLimits{}, nil, "http_repeat", srv.URL + "/", 1, 0, abi.HTTPDenied},
		{"engine budget per call without env", wasm.HTTPLimits{PrivateHosts: []string{srv.hostPort()}, CallsPerRequest: 2}, nil, "http_repeat", srv.URL + "/", 5, 2, abi.HostBudget},
		{"env budget", wasm.HTTPLimits{PrivateHosts: []string{srv.hostPort()}}, &wasm.CallEnv{HTTPCalls: 3}, "http_repeat", srv.URL + "/", 5, 3, abi.HostBudget},
		{"response over the cap", wasm.HTTPLimits{PrivateHosts: []string{srv.hostPort()}, MaxResponseBytes: 50}, nil, "http_repeat", srv.URL + "/", 1, 0, abi.HTTPFailed},
		{"response under the cap", wasm.HTTPLimits{PrivateHosts: []string{srv.hostPort()}, MaxResponseBytes: 1000}, nil, "http_repeat", srv.URL + "/", 1, 1, 0},
		{"timeout", wasm.HTTPLimits{PrivateHosts: []string{srv.hostPort()}, Timeout: 300 * time.Millisecond}, nil, "http_repeat", srv.URL + "/slow", 1, 0, abi.HTTPFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := hostEngine(t, nil, func(c *wasm.Config) { c.HTTP = tc.lim })
			mod := loadKit(t, e, allGrants+"}")
			ctx := context.Background()
			if tc.env != nil {
				ctx = wasm.WithCallEnv(ctx, tc.env)
			}
			out := kitCall(t, mod, ctx, tc.kase, nil, "url", tc.url, "times", strconv.Itoa(tc.times))
			if string(out[0]) != strconv.Itoa(tc.wantOK) {
				t.Errorf("%s calls succeeded, want %d: %s", out[0], tc.wantOK, fields(out))
			}
			if tc.wantErr != 0 {
				wantHostCode(t, out, tc.wantErr)
			} else if len(out) != 1 {
				t.Errorf("unexpected failure: %s", fields(out))
			}
		})
	}
	// One request's budget spans its module calls.
	e, _ := hostEngine(t, nil, func(c *wasm.Config) { c.HTTP = wasm.HTTPLimits{PrivateHosts: []string{srv.hostPort()}} })
	mod := loadKit(t, e, allGrants+"}")
	env := &wasm.CallEnv{HTTPCalls: 4}
	ctx := wasm.WithCallEnv(context.Background(), env)
	kitCall(t, mod, ctx, "http_repeat", nil, "url", srv.URL+"/", "times", "3")
	out := kitCall(t, mod, ctx, "http_repeat", nil, "url", srv.URL+"/", "times", "3")
	if string(out[0]) != "1" || env.HTTPCallsUsed() != 4 {
		t.Errorf("second call of the request: %s (used %d), want 1 call then the budget", fields(out), env.HTTPCallsUsed())
	}
	wantHostCode(t, out, abi.HostBudget)
}

// TestPrivateHostsByScope: the operator's private hosts are reached by
// its own modules and by the modules of accounts it names, never by
// another account's, even when its manifest grants every domain.
func TestPrivateHostsByScope(t *testing.T) {
	srv := newEchoServer(t, 10)
	grants := `{"host_functions":["log","http","chat","count_tokens","kv","embed","vector"],"http_domains":["*"]}`
	for _, tc := range []struct {
		name    string
		account string // "" = gateway-wide
		named   []string
		want    bool // reached
	}{
		{"gateway-wide module", "", nil, true},
		{"account module", "tenant", nil, false},
		{"account module of another named account", "tenant", []string{"other"}, false},
		{"account module of a named account", "tenant", []string{"tenant"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := hostEngine(t, nil, func(c *wasm.Config) {
				c.HTTP.PrivateHosts = []string{srv.hostPort()}
				c.HTTP.PrivateHostAccounts = tc.named
				c.Tenants = wasm.TenantLimits{TimeoutMS: 10_000}
			})
			var mod *wasm.Module
			if tc.account == "" {
				mod = loadKit(t, e, grants)
			} else {
				var err error
				if mod, err = e.LoadTenant(context.Background(), tc.account, kitManifest(t, grants), kitGuest(t)); err != nil {
					t.Fatal(err)
				}
			}
			before := len(srv.received())
			// Twice: the second call could find a pooled connection.
			for range 2 {
				out := kitCall(t, mod, context.Background(), "http", nil, "method", "GET", "url", srv.URL+"/p")
				if tc.want && (len(out) != 3 || string(out[0]) != "200") {
					t.Fatalf("call failed: %s", fields(out))
				}
				if !tc.want && (len(out) != 2 || string(out[0]) != "denied") {
					t.Fatalf("got %s, want the call denied", fields(out))
				}
			}
			if reached := len(srv.received()) - before; tc.want != (reached == 2) {
				t.Fatalf("the private host got %d requests", reached)
			}
		})
	}
}

// TestHTTPRateFloor (issue 31, item 4): a body at 20 bytes a second, or
// one that stalls after a byte, is cut under the default floor (1 KiB/s
// from a second after the headers) instead of holding the module's
// instance for the whole timeout; with the floor off the same trickle
// runs into the timeout.
func TestHTTPRateFloor(t *testing.T) {
	srv := newEchoServer(t, 10)
	for _, tc := range []struct {
		name, path string
		lim        wasm.HTTPLimits
		want       string
	}{
		{"trickle", "/trickle", wasm.HTTPLimits{Timeout: time.Minute}, "slower than the gateway's floor"},
		{"stall", "/stall", wasm.HTTPLimits{Timeout: time.Minute}, "slower than the gateway's floor"},
		{"no floor", "/trickle", wasm.HTTPLimits{Timeout: 1500 * time.Millisecond, MinBytesPerSecond: -1}, "deadline exceeded"},
		{"a fast body", "/", wasm.HTTPLimits{Timeout: time.Minute}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.lim.PrivateHosts = []string{srv.hostPort()}
			e, _ := hostEngine(t, nil, func(c *wasm.Config) { c.HTTP = tc.lim })
			mod := loadKit(t, e, allGrants+"}")
			out := kitCall(t, mod, context.Background(), "http", nil, "method", "GET", "url", srv.URL+tc.path)
			if tc.want == "" {
				if len(out) != 3 || string(out[0]) != "200" {
					t.Fatalf("a fast body: %s", fields(out))
				}
				return
			}
			if len(out) != 2 || string(out[0]) != "failed" || !strings.Contains(string(out[1]), tc.want) {
				t.Fatalf("got %s, want a failure saying %q", fields(out), tc.want)
			}
		})
	}
}

// TestHTTPSecrets: ${secret:NAME} reaches the server only when granted and
// set, never the module's view of the exchange nor the log.
func TestHTTPSecrets(t *testing.T) {
	const secret = "sk-exa-s3cr3t+/="
	srv := newEchoServer(t, 10)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedURL := "http://" + closed.Addr().String()
	_ = closed.Close()
	grants := allGrants + `,"secrets":["EXA_API_KEY","UNSET_KEY"]}`
	cases := []struct {
		name     string
		tenant   bool
		tenantOK []string
		url      string
		headers  string
		want     string // what reaches the server ("" = nothing)
		wantCode int64  // 0: the call succeeds
	}{
		{"header and query", false, nil, srv.URL + "/s?q=x&key=${secret:EXA_API_KEY}", "X-Api-Key: ${secret:EXA_API_KEY}\nAuthorization: Bearer ${secret:EXA_API_KEY}\n",
			"q=x&key=" + url.QueryEscape(secret) + " " + secret + " Bearer " + secret, 0},
		{"an escaped placeholder is not one", false, nil, srv.URL + "/s?key=%24%7Bsecret:EXA_API_KEY%7D", "", "key=%24%7Bsecret:EXA_API_KEY%7D  ", 0},
		{"not granted", false, nil, srv.URL + "/s", "X-Api-Key: ${secret:BRAVE_KEY}\n", "", abi.HTTPDenied},
		{"granted but not set", false, nil, srv.URL + "/s?key=${secret:UNSET_KEY}", "", "", abi.HTTPDenied},
		{"tenant module, operator allows none", true, nil, srv.URL + "/s", "X-Api-Key: ${secret:EXA_API_KEY}\n", "", abi.HTTPDenied},
		{"tenant module, operator allows it", true, []string{"EXA_API_KEY"}, srv.URL + "/s", "X-Api-Key: ${secret:EXA_API_KEY}\n", " " + secret + " ", 0},
		{"ungranted domain", false, nil, "http://localhost:1/?key=${secret:EXA_API_KEY}", "", "", abi.HTTPDenied},
		{"failed call quotes no secret", false, nil, closedURL + "/?key=${secret:EXA_API_KEY}", "", "", abi.HTTPFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log syncBuffer
			e, _ := hostEngine(t, &log, func(c *wasm.Config) {
				c.HTTP.PrivateHosts = []string{srv.hostPort(), strings.TrimPrefix(closedURL, "http://")}
				c.HTTP.PrivateHostAccounts = []string{"tenant"} // the test server stands for a public one
				c.Secrets = map[string]string{"EXA_API_KEY": secret}
				c.TenantSecrets = tc.tenantOK
				c.Tenants = wasm.TenantLimits{TimeoutMS: 10_000}
			})
			var mod *wasm.Module
			if tc.tenant {
				var err error
				if mod, err = e.LoadTenant(context.Background(), "tenant", kitManifest(t, grants), kitGuest(t)); err != nil {
					t.Fatal(err)
				}
			} else {
				mod = loadKit(t, e, grants)
			}
			before := len(srv.received())
			out := kitCall(t, mod, context.Background(), "http", nil, "method", "GET", "url", tc.url, "headers", tc.headers)
			got := srv.received()[before:]
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("the server was called with %q", got)
			case tc.want != "" && (len(got) != 1 || got[0] != tc.want):
				t.Errorf("the server got %q, want %q", got, tc.want)
			}
			if tc.wantCode == 0 && (len(out) != 3 || string(out[0]) != "200") {
				t.Errorf("call failed: %s", fields(out))
			}
			if tc.wantCode != 0 && (len(out) != 2 || string(out[0]) != map[int64]string{abi.HTTPDenied: "denied", abi.HTTPFailed: "failed"}[tc.wantCode]) {
				t.Errorf("got %s, want code %d", fields(out), tc.wantCode)
			}
			for _, leak := range []string{secret, url.QueryEscape(secret)} {
				if strings.Contains(fields(out), leak) {
					t.Errorf("the module saw the secret: %s", fields(out))
				}
				if strings.Contains(log.String(), leak) {
					t.Errorf("the log has the secret: %s", log.String())
				}
			}
		})
	}
}

// BenchmarkHostFunctions is the per-call cost of each host function as a
// module sees it: one pre_request call of the kit's guest that makes one
// host call, next to the same call making none (baseline). kv_put includes
// bbolt's commit (an fsync), as in the gateway.
func BenchmarkHostFunctions(b *testing.B) {
	e, _ := hostEngine(b, nil, func(c *wasm.Config) {})
	mod := loadKit(b, e, allGrants+"}")
	env := &wasm.CallEnv{Account: "bench", ChatCalls: 1 << 30, Chat: func(_ context.Context, body []byte) (int, []byte, error) {
		return 200, []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`), nil
	}}
	ctx := wasm.WithCallEnv(context.Background(), env)
	text := []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 23)[:1024])
	if _, err := tokenize.Count("openai/gpt-4o", "warm"); err != nil {
		b.Fatal(err)
	}
	kitCall(b, mod, ctx, "kv_put", []byte(`{"cached":"page"}`), "key", "k", "ttl", "0")
	cases := []struct {
		name, kase string
		input      []byte
		extra      []string
	}{
		{"baseline", "frame", []byte(`{}`), []string{"action", "continue"}},
		{"kv_get", "kv_get", nil, []string{"key", "k"}},
		{"kv_put", "kv_put", []byte(`{"cached":"page"}`), []string{"key", "k", "ttl", "60"}},
		{"count_tokens_1KB", "count_tokens", text, []string{"tok_model", "openai/gpt-4o"}},
		{"chat", "chat", []byte(`{"model":"demo/echo","messages":[{"role":"user","content":"hi"}]}`), nil},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			c := `{"case":` + strconv.Quote(tc.kase)
			for i := 0; i+1 < len(tc.extra); i += 2 {
				c += "," + strconv.Quote(tc.extra[i]) + ":" + strconv.Quote(tc.extra[i+1])
			}
			cf := []byte(c + "}")
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				out, err := mod.Call(ctx, abi.HookPreRequest, cf, tc.input)
				if err != nil || len(out.Fields) == 0 || string(out.Fields[0]) == "error" {
					b.Fatalf("%v %v", err, out)
				}
			}
		})
	}
}

// TestToolCallHook: a Go guest registered for tool_call with sdk.Handle
// answers it (result JSON, cost), and the kit's guest check accepts the
// shape.
func TestToolCallHook(t *testing.T) {
	e, _ := hostEngine(t, nil, nil)
	mj := `{"name":"tools","version":"1.0.0","abi":1,"kind":"plugin","hooks":["tool_call"],"tools":[{"type":"service:web_search","name":"web_search","description":"Search the web.","parameters":{"type":"object"}},{"type":"service:datetime","name":"datetime","description":"The time now.","parameters":{"type":"object"}}],"grants":` + allGrants + `}}`
	m, err := manifest.Parse([]byte(mj))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := e.Load(context.Background(), m, kitGuest(t))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, args, cost, want string }{
		{"web_search", `{"query":"bbolt"}`, "0.005", `{"tool":"web_search","arguments":{"query":"bbolt"}}`},
		{"datetime", `{}`, "", `{"tool":"datetime","arguments":{}}`},
	}
	for _, tc := range cases {
		out, err := mod.Call(context.Background(), abi.HookToolCall, []byte(`{"cost":`+strconv.Quote(tc.cost)+`}`), []byte(tc.name), []byte(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Fields) != 2 || string(out.Fields[0]) != tc.want || string(out.Fields[1]) != tc.cost {
			t.Errorf("%s: got %s, want %s and cost %q", tc.name, fields(out.Fields), tc.want, tc.cost)
		}
	}
	h, err := kithost.New("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	conformance.CheckGuest(t, h, []byte(mj), kitGuest(t))
}

// TestPoolSharePerAccount (issue 31, item 4): an account's calls of one of
// the gateway's modules hold at most half its instances (here one of two)
// while they wait in a host function, so another account's call still
// gets one; the account's own next call waits for its share and is
// refused (429) at its deadline instead of taking the last instance.
func TestPoolSharePerAccount(t *testing.T) {
	gate := make(chan struct{})
	arrived := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/held" {
			arrived <- struct{}{}
			select {
			case <-gate:
			case <-r.Context().Done():
			}
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	defer close(gate)
	u, _ := url.Parse(srv.URL)
	e, _ := hostEngine(t, nil, func(c *wasm.Config) { c.HTTP.PrivateHosts = []string{u.Host} })
	mod := loadKit(t, e, allGrants+"}") // pool_size 2: a share of 1
	as := func(account string, d time.Duration) (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		return wasm.WithCallEnv(ctx, &wasm.CallEnv{Account: account}), cancel
	}
	held := make(chan error, 1)
	go func() {
		ctx, cancel := as("a", 30*time.Second)
		defer cancel()
		_, err := mod.Call(ctx, abi.HookPreRequest, []byte(`{"case":"http","method":"GET","url":"`+srv.URL+`/held"}`), nil)
		held <- err
	}()
	<-arrived // a's first call waits in http, holding an instance

	ctx, cancel := as("a", 500*time.Millisecond)
	_, err := mod.Call(ctx, abi.HookPreRequest, []byte(`{"case":"http","method":"GET","url":"`+srv.URL+`/"}`), nil)
	cancel()
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Status != 429 || !strings.Contains(ae.Message, "its share of the module's instances") {
		t.Fatalf("a's second call beside the held one: %v, want 429 for its share", err)
	}
	ctx, cancel = as("b", 30*time.Second)
	out := kitCall(t, mod, ctx, "http", nil, "method", "GET", "url", srv.URL+"/")
	cancel()
	if len(out) != 3 || string(out[0]) != "200" {
		t.Fatalf("another account's call: %s", fields(out))
	}
	gate <- struct{}{}
	if err := <-held; err != nil {
		t.Fatalf("the held call: %v", err)
	}
}
