package server_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// variantsYAML: test/tools on a cheap endpoint (lax) and a dear one
// (exact); test/gratis on a paid endpoint and a free one.
const variantsYAML = `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: lax, adapter: openai, base_url: "{{url:lax}}", data_collection: allow, region: us}
  - {slug: exact, adapter: openai, base_url: "{{url:exact}}", data_collection: allow, region: us}
  - {slug: gratis, adapter: openai, base_url: "{{url:gratis}}", data_collection: allow, region: us}
models:
  - id: test/tools
    context_length: 8192
    endpoints:
      - {provider: lax, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 1}, supported_parameters: [tools, tool_choice, max_tokens]}
      - {provider: exact, upstream_model: echo, max_output: 1024, price: {prompt: 3, completion: 9}, supported_parameters: [tools, tool_choice, max_tokens]}
  - id: test/gratis
    context_length: 8192
    endpoints:
      - {provider: lax, upstream_model: echo, max_output: 1024, price: {prompt: 1, completion: 1}}
      - {provider: gratis, upstream_model: echo, max_output: 1024, price: {prompt: 0, completion: 0}}
`

// TestModelVariants: a model id's :floor, :free and :exacto suffix, sent
// through the HTTP API, decides which endpoint serves the request, and the
// answer and its metadata name the model and the variant asked for.
// :exacto ranks by the tool calls the gateway saw each endpoint answer:
// the demo fakes call the function with the arguments the user message
// gives (args:{…}), so lax is made to answer calls its schema refuses
// (JSON, one stream) and exact valid ones, after which :exacto prefers
// exact although it is the dearer.
func TestModelVariants(t *testing.T) {
	g := rtStart(t, gatewaytest.Options{Providers: []string{"lax", "exact", "gratis"}, ConfigYAML: variantsYAML})
	msgs := `"messages":[{"role":"user","content":"route me"}]`

	served := func(t *testing.T, body, provider, strategy string) {
		t.Helper()
		resp, b := post(t, g, "/chat/completions", body, "X-Service-Metadata", "enabled")
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b.Raw)
		}
		requested := gjson.Get(body, "model").Str
		base, _, _ := strings.Cut(requested, ":")
		if b.Get("provider").Str != provider || b.Get("model").Str != base {
			t.Fatalf("served by %s@%s, want %s@%s", b.Get("model").Str, b.Get("provider").Str, base, provider)
		}
		meta := b.Get("service_metadata")
		if meta.Get("requested").Str != requested || meta.Get("strategy").Str != strategy {
			t.Errorf("service_metadata requested %q strategy %q, want %q %q", meta.Get("requested").Str, meta.Get("strategy").Str, requested, strategy)
		}
		if sum := meta.Get("summary").Str; strings.Contains(sum, "fallback") {
			t.Errorf("summary %q calls the variant a fallback", sum)
		}
	}

	t.Run("floor ranks by price", func(t *testing.T) {
		served(t, `{"model":"test/tools:floor",`+msgs+`}`, "lax", "sort:price")
	})
	t.Run("free keeps only the free endpoint", func(t *testing.T) {
		for range 4 { // load balancing would send some to lax
			served(t, `{"model":"test/gratis:free",`+msgs+`}`, "gratis", "load-balance")
		}
	})
	t.Run("free without a free endpoint", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", `{"model":"test/tools:free",`+msgs+`}`)
		wantError(t, resp, b, 404, "test/tools")
		if !strings.Contains(b.Get("error.message").Str, ":free variant") || b.Get(`error.metadata.rejected_by.variant\.free`).Int() != 2 {
			t.Errorf("error does not name the :free variant: %s", b.Raw)
		}
	})
	t.Run("unknown variant", func(t *testing.T) {
		resp, b := post(t, g, "/chat/completions", `{"model":"test/tools:turbo",`+msgs+`}`)
		wantError(t, resp, b, 404, "test/tools:turbo")
	})

	t.Run("exacto ranks by valid tool calls", func(t *testing.T) {
		// No tool calls seen yet: no data, so the price decides.
		served(t, `{"model":"test/tools:exacto",`+msgs+`}`, "lax", "sort:exacto")
		// The function of OpenAI's function-calling guide.
		tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}}],"tool_choice":"required"`
		turn := func(provider, args string, stream bool) string {
			return `{"model":"test/tools","stream":` + map[bool]string{true: "true", false: "false"}[stream] +
				`,"provider":{"order":["` + provider + `"]},` + tools +
				`,"messages":[{"role":"user","content":"call:get_weather args:` + strings.ReplaceAll(args, `"`, `\"`) + `"}]}`
		}
		send := func(body string, stream bool) {
			t.Helper()
			if stream {
				if s := rtStream(t, g, body); s.status != 200 || !strings.Contains(s.raw, `"tool_calls"`) {
					t.Fatalf("stream %d without tool calls: %s", s.status, s.raw)
				}
				return
			}
			resp, b := post(t, g, "/chat/completions", body)
			if resp.StatusCode != 200 || !b.Get("choices.0.message.tool_calls").IsArray() {
				t.Fatalf("status %d, no tool calls: %s", resp.StatusCode, b.Raw)
			}
		}
		bad, good := `{"city":"Paris"}`, `{"location":"Paris"}`
		// JSON answers: lax 0 of 1 valid, exact 1 of 1.
		send(turn("lax", bad, false), false)
		send(turn("exact", good, false), false)
		served(t, `{"model":"test/tools:exacto",`+msgs+`}`, "exact", "sort:exacto")
		// Streamed answers turn it round: lax 3 of 4 valid, exact 1 of 2.
		for range 3 {
			send(turn("lax", good, true), true)
		}
		send(turn("exact", bad, true), true)
		served(t, `{"model":"test/tools:exacto",`+msgs+`}`, "lax", "sort:exacto")
	})
}
