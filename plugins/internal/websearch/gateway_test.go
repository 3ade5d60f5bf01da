//go:build !wasip1

package websearch_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// Native search through the real gateway and the built adapter modules: a
// request that asks for it reaches Anthropic with the web_search server
// tool and Gemini with the googleSearch tool (the fake upstreams record
// what they received).
var nativeYAML = gatewaytest.AnthropicGeminiYAML

func TestNativeSearchThroughTheGateway(t *testing.T) {
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: nativeYAML, Anthropic: []string{"anth"}, Gemini: []string{"gem"},
		Env: map[string]string{"ANTH_KEY": "sk-ant-test-0123456789", "GEM_KEY": "gem-test-key"}})
	if err != nil {
		t.Fatalf("%v (run make wasm)", err)
	}
	t.Cleanup(g.Close)
	post := func(body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", g.URL+"/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+g.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	post(`{"model":"test/claude","messages":[{"role":"user","content":"Who won the euro 2024?"}],"web_search_options":{"user_location":{"type":"approximate","approximate":{"country":"GB"}}}}`)
	tools := gjson.ParseBytes(g.Anthropics["anth"].Last().Body).Get("tools")
	if tools.Get("#").Int() != 1 || tools.Get("0.type").Str != "web_search_20250305" || tools.Get("0.name").Str != "web_search" || tools.Get("0.user_location.country").Str != "GB" {
		t.Fatalf("Anthropic got tools %s", tools.Raw)
	}
	post(`{"model":"test/gemini","messages":[{"role":"user","content":"Who won the euro 2024?"}],"web_search_options":{}}`)
	tools = gjson.ParseBytes(g.Geminis["gem"].Last().Body).Get("tools")
	if tools.Raw != `[{"googleSearch":{}}]` {
		t.Fatalf("Gemini got tools %s", tools.Raw)
	}
	// Through the web plugin's native engine (the module on main): it
	// leaves its item in the request and the adapter builds the tool.
	post(`{"model":"test/claude","messages":[{"role":"user","content":"Who won the euro 2024?"}],"plugins":[{"id":"web","engine":"native","max_uses":2,"exclude_domains":["*.example.com"]}]}`)
	tools = gjson.ParseBytes(g.Anthropics["anth"].Last().Body).Get("tools")
	if tools.Get("#").Int() != 1 || tools.Get("0.name").Str != "web_search" || tools.Get("0.max_uses").Int() != 2 || tools.Get("0.blocked_domains").Raw != `["example.com"]` {
		t.Fatalf("Anthropic got tools %s from the web plugin", tools.Raw)
	}
	post(`{"model":"test/gemini","messages":[{"role":"user","content":"Who won the euro 2024?"}],"plugins":[{"id":"web","engine":"native"}]}`)
	if tools := gjson.ParseBytes(g.Geminis["gem"].Last().Body).Get("tools"); tools.Raw != `[{"googleSearch":{}}]` {
		t.Fatalf("Gemini got tools %s from the web plugin", tools.Raw)
	}
	// Without the ask, neither gets a search tool.
	post(`{"model":"test/claude","messages":[{"role":"user","content":"Hello"}]}`)
	if tools := gjson.ParseBytes(g.Anthropics["anth"].Last().Body).Get("tools"); tools.Exists() {
		t.Fatalf("Anthropic got tools %s unasked", tools.Raw)
	}
}
