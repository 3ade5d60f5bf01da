//go:build !wasip1

package webtest_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/kv"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/switchyard/switchyard/plugins/web/webtest"
	"github.com/tidwall/gjson"
)

// The service:web_search tool through the Wasm boundary and the host's
// services: the built module, the host's outbound HTTP with the operator's
// key substituted for the placeholder, the kv store counting max_uses
// under the request's id, and the fee reported as the call's cost.
func TestToolCallThroughWasm(t *testing.T) {
	brave := webtest.New("brave", "brave-secret")
	srv := httptest.NewServer(brave)
	defer srv.Close()

	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "kv.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store, err := kv.Open(db, kv.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// load loads the module on an engine with the operator's secrets.
	load := func(secrets map[string]string) *wasm.Module {
		return gatewaytest.BuiltModule(t, "web", func(m *manifest.Manifest, c *wasm.Config) {
			m.Grants.HTTPDomains = append(m.Grants.HTTPDomains, "127.0.0.1")
			c.AllowPrivateNetworks = true
			c.Secrets = secrets
			c.KV = store
		})
	}
	mod := load(map[string]string{"BRAVE_API_KEY": "brave-secret"})
	call := func(requestID string) (gjson.Result, string) {
		ctx := wasm.WithCallEnv(context.Background(), &wasm.CallEnv{Account: "acct_1", RequestID: requestID})
		tctx := `{"request_id":"` + requestID + `","parameters":{"engine":"brave","max_uses":2,"max_results":2},"config":{},` +
			`"settings":{"engines":{"brave":{"base_url":"` + srv.URL + `"}}}}`
		out, err := mod.Call(ctx, abi.HookToolCall, []byte(tctx), []byte("web_search"), []byte(`{"query":"webassembly"}`))
		if err != nil {
			t.Fatal(err)
		}
		return gjson.ParseBytes(out.Field(0)), string(out.Field(1))
	}
	for i := 0; i < 2; i++ {
		res, cost := call("req_1")
		if res.Get("error").Exists() || res.Get("results.#").Int() != 2 || cost != "0.005" {
			t.Fatalf("call %d: %s cost %q", i, res.Raw, cost)
		}
	}
	if got := brave.Last().Header.Get("X-Subscription-Token"); got != "brave-secret" {
		t.Fatalf("the engine got token %q", got)
	}
	res, cost := call("req_1")
	if !strings.Contains(res.Get("error").Str, "max_uses (2) reached") || cost != "" {
		t.Fatalf("third call: %s %q", res.Raw, cost)
	}
	if len(brave.Calls()) != 2 {
		t.Fatalf("a refused call must not search: %d searches", len(brave.Calls()))
	}
	if res, _ := call("req_2"); res.Get("error").Exists() {
		t.Fatalf("another request counts afresh: %s", res.Raw)
	}
	// Without the operator's key the call fails as a result naming it.
	mod = load(nil)
	res, _ = call("req_3")
	if !strings.Contains(res.Get("error").Str, "BRAVE_API_KEY") {
		t.Fatalf("%s", res.Raw)
	}
}

// A pooled instance serves call after call: the SDK collects the module's
// garbage (a Go reactor's collector does not finish cycles between
// calls), so 3000 searches fit in its memory instead of trapping once
// the heap reaches limits.memory_pages (about 2000 without).
func TestManyCallsStayWithinMemory(t *testing.T) {
	mod := gatewaytest.BuiltModule(t, "web", func(m *manifest.Manifest, _ *wasm.Config) { m.Limits.PoolSize = 1 })
	body := []byte(`{"model":"test/chat","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"How does the gateway bill a stream that the client abandons?"}],"plugins":[{"id":"web"}]}`)
	for i := 0; i < 3000; i++ {
		out, err := mod.Call(context.Background(), abi.HookPreRequest, []byte(`{"config":{"id":"web"}}`), body)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if len(out.Fields) < 4 || len(out.Field(1)) <= len(body) {
			t.Fatalf("call %d did not inject: %q", i, out.Fields)
		}
	}
}
