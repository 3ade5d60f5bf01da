//go:build !wasip1

package webtest_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/plugins/web/webtest"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func serverTools(t *testing.T, body gjson.Result) gjson.Result {
	t.Helper()
	for _, s := range body.Get("service_metadata.pipeline").Array() {
		if s.Get("type").Str == "server_tools" {
			return s
		}
	}
	t.Fatalf("no server_tools stage: %s", body.Get("service_metadata").Raw)
	return gjson.Result{}
}

// service:web_search through the agent loop, offline: the demo model asks
// to search, the module searches the demo engine, the model's second turn
// quotes the results.
func TestWebSearchToolDemoEngine(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	b := chat(t, g, `{"model":"test/chat","messages":[{"role":"user","content":"search how streams are billed"}],"tools":[{"type":"service:web_search","parameters":{"max_results":2}}]}`)
	content := b.Get("choices.0.message.content").Str
	if !strings.Contains(content, "(demo search engine)") || !strings.Contains(content, "docs.switchyard.demo") || b.Get("choices.0.message.tool_calls").Exists() {
		t.Fatalf("the answer does not quote the search: %s", b.Raw)
	}
	call := serverTools(t, b).Get("data.calls.0")
	if call.Get("tool").Str != "service:web_search" || call.Get("status").Str != "completed" {
		t.Fatalf("%s", call.Raw)
	}
	// The model was shown web_search with the manifest's schema, and got
	// a result with at most max_results results.
	sent := gjson.ParseBytes(g.Upstreams["alpha"].Last().Body)
	if sent.Get("tools.0.function.name").Str != "web_search" || !sent.Get("tools.0.function.parameters.properties.query").Exists() {
		t.Fatalf("%s", sent.Get("tools").Raw)
	}
	var result gjson.Result
	for _, m := range sent.Get("messages").Array() {
		if m.Get("role").Str == "tool" {
			result = gjson.Parse(m.Get("content").Str)
		}
	}
	if result.Get("engine").Str != "demo" || result.Get("results.#").Int() != 2 {
		t.Fatalf("tool result %s", result.Raw)
	}
}

// The engine's fee is the tool's cost: charged and itemised; max_uses
// turns the calls past it into error results the model sees.
func TestWebSearchToolFeesAndMaxUses(t *testing.T) {
	brave := webtest.New("brave", "brave-secret")
	srv := httptest.NewServer(brave)
	defer srv.Close()
	g := start(t, gatewaytest.Options{AllowPrivateNetworks: true, Secrets: map[string]string{"BRAVE_API_KEY": "brave-secret"},
		Mutate: func(c *config.Config) {
			c.ModuleSettings = map[string]any{"web": map[string]any{"engine": "brave", "engines": map[string]any{"brave": map[string]any{"base_url": srv.URL, "fee": "0.004"}}}}
		}})
	publishLoopback(t, g)

	b := chat(t, g, `{"model":"test/chat","messages":[{"role":"user","content":"search webassembly"}],"tools":[{"type":"service:web_search"}]}`)
	if fee := b.Get("usage.cost_details.tool_fees").Float(); fee < 0.00399 || fee > 0.00401 {
		t.Fatalf("the search fee is not charged: %s", b.Get("usage").Raw)
	}
	if len(brave.Calls()) != 1 || !strings.Contains(b.Get("choices.0.message.content").Str, "go.dev") {
		t.Fatalf("%d searches: %s", len(brave.Calls()), b.Raw)
	}

	// The demo model: "call:NAME … again" calls the tool after every result.
	body, _ := sjson.Set(`{"model":"test/chat","messages":[{"role":"user","content":"call:web_search args:{\"query\":\"webassembly\"} again"}],"max_tool_calls":3}`, "tools", []any{map[string]any{"type": "service:web_search", "parameters": map[string]any{"max_uses": 2}}})
	b = chat(t, g, body)
	calls := serverTools(t, b).Get("data.calls").Array()
	if len(calls) != 3 {
		t.Fatalf("%s", serverTools(t, b).Raw)
	}
	for i, c := range calls {
		if failed := c.Get("status").Str == "failed"; failed != (i == 2) {
			t.Fatalf("call %d: %s", i, c.Raw)
		}
	}
	if !strings.Contains(calls[2].Raw, "max_uses (2) reached") {
		t.Fatalf("%s", calls[2].Raw)
	}
	if fee := b.Get("usage.cost_details.tool_fees").Float(); fee < 0.00799 || fee > 0.00801 {
		t.Fatalf("two searches charged, the refused one free: %s", b.Get("usage").Raw)
	}
	if len(brave.Calls()) != 3 {
		t.Fatalf("the refused call searched: %d searches", len(brave.Calls()))
	}
}
