package server_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

const geminiYAML = `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: gem, name: Google, adapter: gemini, base_url: "{{url:gem}}", api_key_env: GEM_KEY, data_collection: deny, region: us,
     supported_parameters: [temperature, top_p, top_k, max_tokens, max_completion_tokens, stop, seed, tools, tool_choice, response_format, reasoning, reasoning_effort, presence_penalty, frequency_penalty]}
models:
  - id: test/gemini
    kind: chat
    context_length: 1000000
    endpoints:
      - {provider: gem, upstream_model: gemini-test, max_output: 8192, price: {prompt: 0.3, completion: 2.5}}
  - id: test/gemini-embed
    kind: embedding
    input_modalities: [text, image]
    endpoints:
      - {provider: gem, upstream_model: gemini-embedding, price: {prompt: 0.15}}
`

func startGemini(t *testing.T) (*gatewaytest.Gateway, *demo.Gemini) {
	g := start(t, gatewaytest.Options{ConfigYAML: geminiYAML, Gemini: []string{"gem"},
		Env: map[string]string{"GEM_KEY": "AIza-test-key-0123456789"}})
	return g, g.Geminis["gem"]
}

func TestGeminiChat(t *testing.T) {
	g, up := startGemini(t)
	resp, body := post(t, g, "/chat/completions", `{"model":"test/gemini","temperature":0.4,"max_tokens":100,"stop":["END"],"response_format":{"type":"json_object"},"reasoning_effort":"low",
		"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"hello gem"},{"type":"image_url","image_url":{"url":"https://x.test/cat.png"}}]}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	if !strings.Contains(body.Get("choices.0.message.content").Str, "You said: hello gem") || body.Get("choices.0.finish_reason").Str != "stop" {
		t.Fatalf("%s", body.Raw)
	}
	// OpenRouter's native_finish_reason: Gemini's own finishReason (issue 32).
	if got := body.Get("choices.0.native_finish_reason").Str; got != "STOP" {
		t.Errorf("native_finish_reason %q", got)
	}
	if body.Get("usage.prompt_tokens_details.cached_tokens").Int() != 1 || body.Get("usage.cost").Float() <= 0 {
		t.Fatalf("usage %s", body.Get("usage").Raw)
	}
	last := up.Last()
	if !strings.HasSuffix(last.Path, "/models/gemini-test:generateContent") || last.Header.Get("x-goog-api-key") != "AIza-test-key-0123456789" {
		t.Fatalf("%s %v", last.Path, last.Header)
	}
	sent := gjson.ParseBytes(last.Body)
	for path, want := range map[string]string{
		"systemInstruction.parts.0.text":                 "Be brief.",
		"contents.0.role":                                "user",
		"contents.0.parts.0.text":                        "hello gem",
		"contents.0.parts.1.fileData.mimeType":           "image/png",
		"generationConfig.temperature":                   "0.4",
		"generationConfig.maxOutputTokens":               "100",
		"generationConfig.stopSequences.0":               "END",
		"generationConfig.responseMimeType":              "application/json",
		"generationConfig.thinkingConfig.thinkingBudget": "1024",
	} {
		if got := sent.Get(path).String(); got != want {
			t.Errorf("upstream %s = %q, want %q", path, got, want)
		}
	}
}

func TestGeminiToolsAndStream(t *testing.T) {
	g, up := startGemini(t)
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	_, body := post(t, g, "/chat/completions", `{"model":"test/gemini",`+tools+`,"tool_choice":"required","messages":[{"role":"user","content":"weather?"}]}`)
	call := body.Get("choices.0.message.tool_calls.0")
	if call.Get("function.name").Str != "get_weather" || call.Get("function.arguments").Str != `{"city":"Oslo"}` || body.Get("choices.0.finish_reason").Str != "tool_calls" {
		t.Fatalf("%s", body.Raw)
	}
	sent := gjson.ParseBytes(up.Last().Body)
	if sent.Get("tools.0.functionDeclarations.0.name").Str != "get_weather" || sent.Get("toolConfig.functionCallingConfig.mode").Str != "ANY" {
		t.Fatalf("%s", sent.Raw)
	}
	// History with the call and its result: the result is named after the call.
	_, _ = post(t, g, "/chat/completions", `{"model":"test/gemini",`+tools+`,"messages":[{"role":"user","content":"weather?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		{"role":"tool","tool_call_id":"call_0","content":"sunny"}]}`)
	sent = gjson.ParseBytes(up.Last().Body)
	if sent.Get("contents.1.role").Str != "model" || sent.Get("contents.1.parts.0.functionCall.args.city").Str != "Oslo" ||
		sent.Get("contents.2.parts.0.functionResponse.name").Str != "get_weather" {
		t.Fatalf("history %s", sent.Get("contents").Raw)
	}

	raw := readStream(t, g, `{"model":"test/gemini","stream":true,`+tools+`,"messages":[{"role":"user","content":"weather now"}]}`)
	if !strings.HasSuffix(up.Last().Path, ":streamGenerateContent") {
		t.Fatalf("stream path %s", up.Last().Path)
	}
	var text strings.Builder
	var finish, name string
	var usage gjson.Result
	for _, l := range strings.Split(raw, "\n") {
		d, ok := strings.CutPrefix(l, "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		c := gjson.Parse(d)
		text.WriteString(c.Get("choices.0.delta.content").Str)
		if n := c.Get("choices.0.delta.tool_calls.0.function.name").Str; n != "" {
			name = n
		}
		if fr := c.Get("choices.0.finish_reason").Str; fr != "" {
			finish = fr
		}
		if c.Get("usage").Exists() {
			usage = c.Get("usage")
		}
	}
	if !strings.Contains(text.String(), "You said: weather now") || name != "get_weather" || finish != "tool_calls" || usage.Get("cost").Float() <= 0 {
		t.Fatalf("text %q tool %q finish %q usage %s\n%s", text.String(), name, finish, usage.Raw, raw)
	}
}

func TestGeminiEmbeddingsAndErrors(t *testing.T) {
	g, up := startGemini(t)
	resp, body := post(t, g, "/embeddings", `{"model":"test/gemini-embed","dimensions":8,"input":[{"content":[{"type":"text","text":"one"}]},{"content":[{"type":"text","text":"two"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`)
	if resp.StatusCode != 200 || len(body.Get("data").Array()) != 2 || len(body.Get("data.1.embedding").Array()) != 8 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	sent := gjson.ParseBytes(up.Last().Body)
	if sent.Get("requests.1.content.parts.1.inlineData.mimeType").Str != "image/png" || sent.Get("requests.0.outputDimensionality").Int() != 8 {
		t.Fatalf("%s", sent.Raw)
	}
	if body.Get("usage.prompt_tokens").Int() <= 0 {
		t.Fatalf("no counted usage: %s", body.Get("usage").Raw)
	}
	for _, tc := range []struct{ status, want int }{{429, 429}, {400, 400}, {503, 503}, {500, 502}, {403, 502}} {
		up.SetFaults(demo.Faults{Status: tc.status})
		resp, body := post(t, g, "/chat/completions", `{"model":"test/gemini","messages":[{"role":"user","content":"x"}]}`)
		wantError(t, resp, body, tc.want, "")
	}
}
