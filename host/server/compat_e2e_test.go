package server_test

// What real clients send (issue 9), over loopback HTTP: each body is one
// that an official SDK or a common client sends and the gateway refused
// before; each case asserts it is accepted and what the fake upstream
// received.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

const compatYAML = `demo: false
timeouts: {attempt: 5s, request: 30s}
aliases: {chat-alias: test/chat}
providers:
  - {slug: alpha, name: alpha, adapter: openai, base_url: "{{url:alpha}}", data_collection: deny, region: us}
  - {slug: beta, name: beta, adapter: openai, base_url: "{{url:beta}}", data_collection: deny, region: eu,
     supported_parameters: [temperature, max_tokens, max_completion_tokens, tools, tool_choice, custom_tools]}
  - {slug: gem, name: Google, adapter: gemini, base_url: "{{url:gem}}", api_key_env: GEM_KEY, region: us}
models:
  - id: test/chat
    aliases: [chat]
    context_length: 8192
    endpoints:
      - {provider: alpha, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}
  - id: test/custom
    context_length: 8192
    endpoints:
      - {provider: alpha, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 2}}
      - {provider: beta, upstream_model: echo, max_output: 1024, price: {prompt: 2, completion: 4}}
  - id: test/embed
    kind: embedding
    endpoints:
      - {provider: alpha, upstream_model: embed, price: {prompt: 0.1}}
  - id: test/gemini-embed
    kind: embedding
    endpoints:
      - {provider: gem, upstream_model: gemini-embedding, price: {prompt: 0.15}}
`

func TestClientBodies(t *testing.T) {
	g := start(t, gatewaytest.Options{ConfigYAML: compatYAML, Providers: []string{"alpha", "beta"}, Gemini: []string{"gem"},
		Env: map[string]string{"GEM_KEY": "AIza-test-key-0123456789"}})
	const user = `"messages":[{"role":"user","content":"hello there"}]`
	const fnTool = `{"type":"function","function":{"name":"get_weather","description":"weather","parameters":{"type":"object"}}}`
	const customTool = `{"type":"custom","custom":{"name":"code_exec","description":"runs code","format":{"type":"grammar","grammar":{"definition":"start: /.+/","syntax":"lark"}}}}`
	lastBody := func(slug string) gjson.Result {
		if slug == "gem" {
			return gjson.ParseBytes(g.Geminis[slug].Last().Body)
		}
		return gjson.ParseBytes(g.Upstreams[slug].Last().Body)
	}
	cases := []struct {
		name, path, body string
		status           int
		upstream         string // whose last request check reads ("" for none)
		check            func(t *testing.T, resp, sent gjson.Result)
	}{
		{name: "null for absent fields", path: "/chat/completions", upstream: "alpha",
			body: `{"model":"test/chat","messages":[{"role":"user","content":"hello there","name":null}],"stream":null,"stream_options":null,"metadata":null,
				"modalities":null,"response_format":null,"tools":null,"tool_choice":null,"user":null}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				for _, k := range []string{"stream", "stream_options", "metadata", "modalities", "response_format", "tools", "tool_choice", "user", "messages.0.name"} {
					if sent.Get(k).Exists() {
						t.Errorf("upstream received %s: %s", k, sent.Raw)
					}
				}
			}},
		{name: "null function description and parameters", path: "/chat/completions", upstream: "alpha",
			body: `{"model":"test/chat",` + user + `,"tools":[{"type":"function","function":{"name":"f","description":null,"parameters":null}}]}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if f := sent.Get("tools.0.function"); f.Raw != `{"name":"f"}` {
					t.Errorf("upstream function %s, want {\"name\":\"f\"}", f.Raw)
				}
			}},
		{name: "legacy function_call and function message", path: "/chat/completions", upstream: "alpha",
			body: `{"model":"test/chat","messages":[{"role":"user","content":"weather?"},
				{"role":"assistant","content":null,"function_call":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
				{"role":"function","name":"get_weather","content":"-3 C"}]}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				call, answer := sent.Get("messages.1"), sent.Get("messages.2")
				id := call.Get("tool_calls.0.id").Str
				if id == "" || call.Get("function_call").Exists() || call.Get("tool_calls.0.type").Str != "function" ||
					call.Get("tool_calls.0.function.name").Str != "get_weather" || call.Get("tool_calls.0.function.arguments").Str != `{"city":"Oslo"}` {
					t.Errorf("assistant message sent as %s", call.Raw)
				}
				if answer.Get("role").Str != "tool" || answer.Get("tool_call_id").Str != id || answer.Get("content").Str != "-3 C" || answer.Get("name").Exists() {
					t.Errorf("function message sent as %s (call id %q)", answer.Raw, id)
				}
			}},
		{name: "custom tool filtered for an endpoint without custom_tools", path: "/chat/completions", upstream: "alpha",
			body: `{"model":"test/custom",` + user + `,"tools":[` + fnTool + `,` + customTool + `],"provider":{"only":["alpha"]}}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if n := sent.Get("tools.#").Int(); n != 1 || sent.Get("tools.0.type").Str != "function" {
					t.Errorf("upstream tools %s, want only the function tool", sent.Get("tools").Raw)
				}
			}},
		{name: "custom tool only, filtered with its tool_choice", path: "/chat/completions", upstream: "alpha",
			body: `{"model":"test/custom",` + user + `,"tools":[` + customTool + `],"tool_choice":{"type":"custom","custom":{"name":"code_exec"}},"provider":{"only":["alpha"]}}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if sent.Get("tools").Exists() || sent.Get("tool_choice").Exists() {
					t.Errorf("upstream received %s", sent.Raw)
				}
			}},
		{name: "custom tool passed to an endpoint with custom_tools", path: "/chat/completions", upstream: "beta",
			body: `{"model":"test/custom",` + user + `,"tools":[` + fnTool + `,` + customTool + `],"provider":{"require_parameters":true}}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if resp.Get("provider").Str != "beta" || sent.Get("tools.1.custom.name").Str != "code_exec" || sent.Get("tools.#").Int() != 2 {
					t.Errorf("served by %s; upstream tools %s", resp.Get("provider").Str, sent.Get("tools").Raw)
				}
			}},
		{name: "custom tool with require_parameters and no endpoint for it", path: "/chat/completions", status: 404,
			body: `{"model":"test/custom",` + user + `,"tools":[` + customTool + `],"provider":{"require_parameters":true,"only":["alpha"]}}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if m := resp.Get("error.message").Str; !strings.Contains(m, "custom_tools") {
					t.Errorf("message %q does not name custom_tools", m)
				}
			}},
		{name: "max_tokens above the endpoint's maximum is clamped", path: "/chat/completions", upstream: "alpha",
			body: `{"model":"test/chat",` + user + `,"max_tokens":5000}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if sent.Get("max_tokens").Int() != 1024 {
					t.Errorf("upstream max_tokens %s, want 1024", sent.Get("max_tokens").Raw)
				}
				if m := resp.Get("service_metadata.max_output_tokens"); m.Get("requested").Int() != 5000 || m.Get("clamped_to").Int() != 1024 {
					t.Errorf("service_metadata.max_output_tokens %s", m.Raw)
				}
			}},
		{name: "max_tokens above the maximum with require_parameters", path: "/chat/completions", status: 400,
			body: `{"model":"test/chat",` + user + `,"max_completion_tokens":5000,"provider":{"require_parameters":true}}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if m := resp.Get("error.message").Str; !strings.Contains(m, "exceeds the maximum of 1024") {
					t.Errorf("message %q does not name the limit", m)
				}
			}},
		{name: "model alias of the model", path: "/chat/completions", upstream: "alpha", body: `{"model":"chat",` + user + `}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if resp.Get("model").Str != "test/chat" || resp.Get("service_metadata.requested").Str != "test/chat" {
					t.Errorf("model %q, requested %q", resp.Get("model").Str, resp.Get("service_metadata.requested").Str)
				}
			}},
		{name: "model alias from the top-level map", path: "/chat/completions", upstream: "alpha", body: `{"model":"chat-alias",` + user + `}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if resp.Get("model").Str != "test/chat" {
					t.Errorf("model %q", resp.Get("model").Str)
				}
			}},
		{name: "model without vendor and no alias", path: "/chat/completions", status: 400, body: `{"model":"chat-alais",` + user + `}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if m := resp.Get("error.message").Str; !strings.Contains(m, "did you mean test/chat?") {
					t.Errorf("message %q lists no close match", m)
				}
			}},
		{name: "model without vendor, nothing close", path: "/chat/completions", status: 400, body: `{"model":"gpt-4o-mini",` + user + `}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if m := resp.Get("error.message").Str; !strings.Contains(m, "<vendor>/<model_name>") {
					t.Errorf("message %q", m)
				}
			}},
		{name: "embeddings token ids to an upstream that takes them", path: "/embeddings", upstream: "alpha",
			body: `{"model":"test/embed","input":[[15339,1917],[15339]],"encoding_format":null,"user":null}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if sent.Get("input").Raw != `[[15339,1917],[15339]]` || sent.Get("user").Exists() {
					t.Errorf("upstream body %s", sent.Raw)
				}
				if resp.Get("data.#").Int() != 2 {
					t.Errorf("%d embeddings, want 2", resp.Get("data.#").Int())
				}
			}},
		{name: "embeddings one token-id array is one input", path: "/embeddings", upstream: "alpha",
			body: `{"model":"test/embed","input":[15339,1917]}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if sent.Get("input").Raw != `[15339,1917]` || resp.Get("data.#").Int() != 1 {
					t.Errorf("upstream input %s; %d embeddings, want 1", sent.Get("input").Raw, resp.Get("data.#").Int())
				}
			}},
		{name: "embeddings token ids decoded for Gemini", path: "/embeddings", upstream: "gem",
			body: `{"model":"test/gemini-embed","input":[[15339,1917],[9906]]}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				got := []string{sent.Get("requests.0.content.parts.0.text").Str, sent.Get("requests.1.content.parts.0.text").Str}
				if got[0] != "hello world" || got[1] != "Hello" {
					t.Errorf("Gemini received texts %q from %s", got, sent.Raw)
				}
				if resp.Get("data.#").Int() != 2 {
					t.Errorf("%d embeddings, want 2", resp.Get("data.#").Int())
				}
			}},
		{name: "embeddings token id outside the vocabulary", path: "/embeddings", status: 400,
			body: `{"model":"test/gemini-embed","input":[[15339,999999999]]}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if m := resp.Get("error.message").Str; !strings.Contains(m, "token id 999999999") {
					t.Errorf("message %q", m)
				}
			}},
		{name: "embeddings model alias-less short name", path: "/embeddings", status: 400, body: `{"model":"embed","input":"x"}`,
			check: func(t *testing.T, resp, sent gjson.Result) {
				if m := resp.Get("error.message").Str; !strings.Contains(m, "did you mean") {
					t.Errorf("message %q", m)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, g, tc.path, tc.body, "X-Service-Metadata", "enabled")
			want := tc.status
			if want == 0 {
				want = http.StatusOK
			}
			if resp.StatusCode != want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, want, body.Raw)
			}
			if want != http.StatusOK && body.Get("error.code").Int() != int64(want) {
				t.Fatalf("error envelope %s", body.Raw)
			}
			var sent gjson.Result
			if tc.upstream != "" {
				sent = lastBody(tc.upstream)
			}
			if tc.check != nil {
				tc.check(t, body, sent)
			}
		})
	}

	// stream_options.include_obfuscation is accepted and has no effect.
	resp, raw, err := g.Request(http.MethodPost, "/chat/completions",
		`{"model":"test/chat",`+user+`,"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false}}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasSuffix(strings.TrimSpace(string(raw)), "data: [DONE]") || strings.Contains(string(raw), "obfuscation") {
		t.Fatalf("stream with include_obfuscation: %d %s", resp.StatusCode, raw)
	}
	if sent := lastBody("alpha"); sent.Get("stream_options.include_obfuscation").Exists() {
		t.Fatalf("upstream received include_obfuscation: %s", sent.Raw)
	}
}

// TestModelPricesExact: /models lists per-token prices as exact decimals of
// the configured per-million prices, without float noise.
func TestModelPricesExact(t *testing.T) {
	g := start(t, gatewaytest.Options{ConfigYAML: compatYAML, Providers: []string{"alpha", "beta"}, Gemini: []string{"gem"},
		Env: map[string]string{"GEM_KEY": "AIza-test-key-0123456789"}})
	resp, b, err := g.Request(http.MethodGet, "/models", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %s", err, b)
	}
	want := map[string]string{"test/embed": "0.0000001", "test/gemini-embed": "0.00000015", "test/chat": "0.000001"}
	for id, price := range want {
		got := gjson.GetBytes(b, `data.#(id=="`+id+`").pricing.prompt`).Str
		if got != price {
			t.Errorf("%s prompt price %q, want %q", id, got, price)
		}
	}
	if got := gjson.GetBytes(b, `data.#(id=="test/chat").pricing.completion`).Str; got != "0.000002" {
		t.Errorf("test/chat completion price %q, want 0.000002", got)
	}
}
