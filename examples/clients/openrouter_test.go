package clients

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// OpenRouter's TypeScript SDK (@openrouter/sdk), unchanged but for its
// server URL and key, with its response validation on (issue 32):
// node/openrouter/. SWITCHYARD_BROKE_KEY is a key of an account without
// credits, for the SDK's 402 error type; SWITCHYARD_LIMITED_KEY one allowed
// a request a minute, for its 429.
func TestNodeOpenRouterSDK(t *testing.T) {
	if _, err := os.Stat(filepath.Join(gatewaytest.Root(), "examples", "clients", "node", "node_modules", "@openrouter", "sdk")); err != nil {
		t.Fatal("@openrouter/sdk missing: run `make clients` (part of `make test`)")
	}
	// Two providers of test/chat (for the provider preferences), a model
	// whose only provider refuses connections (for fallbacks) and the
	// demo's reasoning model.
	yml := strings.Replace(gatewaytest.DefaultYAML([]string{"alpha", "beta"}), "models:\n",
		`  - {slug: down, name: down, adapter: openai, base_url: "http://127.0.0.1:9", data_collection: deny, region: us}
models:
  - id: test/down
    kind: chat
    context_length: 8192
    endpoints:
      - {provider: down, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}
  - id: test/reasoner
    kind: chat
    context_length: 8192
    endpoints:
      - {provider: alpha, upstream_model: echo-reasoner, max_output: 1024, price: {prompt: 1, completion: 2}}
`, 1)
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, Providers: []string{"alpha", "beta"}, ConfigYAML: yml})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	acct, err := g.Keys.CreateAccount("broke")
	if err != nil {
		t.Fatal(err)
	}
	broke, _, err := g.Keys.CreateKey(acct.ID, "broke", "", false)
	if err != nil {
		t.Fatal(err)
	}
	// A key allowed one request a minute, for the 429 type.
	resp, b, err := g.Request("POST", "/keys", `{"name":"limited","rate_limits":{"requests_per_minute":1}}`)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("limited key: %v %s", err, b)
	}
	limited := gjson.GetBytes(b, "key").Str
	out := runNodeTestsEnv(t, g, "openrouter/", "SWITCHYARD_BROKE_KEY="+broke, "SWITCHYARD_LIMITED_KEY="+limited)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "# pass") {
			t.Log(line)
		}
	}
}

// OpenRouter's Vercel AI SDK provider (@openrouter/ai-sdk-provider) with
// `ai`, unchanged but for base URL and key: node/aisdk/.
func TestNodeOpenRouterAISDKProvider(t *testing.T) {
	if _, err := os.Stat(filepath.Join(gatewaytest.Root(), "examples", "clients", "node", "node_modules", "@openrouter", "ai-sdk-provider")); err != nil {
		t.Fatal("@openrouter/ai-sdk-provider missing: run `make clients` (part of `make test`)")
	}
	out := runNodeTests(t, gateway(t), "aisdk/")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "# pass") {
			t.Log(line)
		}
	}
}

// LangChain's OpenRouter chat model (@langchain/openrouter), unchanged but
// for base URL and key: node/langchain/.
func TestNodeLangChainOpenRouter(t *testing.T) {
	if _, err := os.Stat(filepath.Join(gatewaytest.Root(), "examples", "clients", "node", "node_modules", "@langchain", "openrouter")); err != nil {
		t.Fatal("@langchain/openrouter missing: run `make clients` (part of `make test`)")
	}
	out := runNodeTests(t, gateway(t), "langchain/")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "# pass") {
			t.Log(line)
		}
	}
}
