package server_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

const anthropicYAML = `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: anth, name: Anthropic, adapter: anthropic, base_url: "{{url:anth}}", api_key_env: ANTH_KEY, data_collection: deny, region: us,
     supported_parameters: [temperature, top_p, top_k, max_tokens, max_completion_tokens, stop, tools, tool_choice, parallel_tool_calls, reasoning, reasoning_effort, user]}
models:
  - id: test/claude
    kind: chat
    context_length: 200000
    endpoints:
      - {provider: anth, upstream_model: claude-test-1, max_output: 8192, price: {prompt: 3, completion: 15}}
`

func startAnthropic(t *testing.T) (*gatewaytest.Gateway, *demo.Anthropic) {
	g := start(t, gatewaytest.Options{ConfigYAML: anthropicYAML, Anthropic: []string{"anth"},
		Env: map[string]string{"ANTH_KEY": "sk-ant-test-0123456789"}})
	return g, g.Anthropics["anth"]
}

func TestAnthropicChat(t *testing.T) {
	g, up := startAnthropic(t)
	resp, body := post(t, g, "/chat/completions", `{"model":"test/claude","temperature":0.2,"top_k":5,"stop":"END","user":"u-1",
		"messages":[{"role":"system","content":"Be brief."},{"role":"developer","content":"No emojis."},
		{"role":"user","content":[{"type":"text","text":"hi there"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	if got := body.Get("choices.0.message.content").Str; !strings.Contains(got, "You said: hi there") {
		t.Fatalf("content %q", got)
	}
	if body.Get("choices.0.finish_reason").Str != "stop" || body.Get("model").Str != "test/claude" || body.Get("object").Str != "chat.completion" {
		t.Fatalf("%s", body.Raw)
	}
	// OpenRouter's native_finish_reason: Anthropic's own stop_reason (issue 32).
	if got := body.Get("choices.0.native_finish_reason").Str; got != "end_turn" {
		t.Errorf("native_finish_reason %q", got)
	}
	// input tokens plus the 2 cached ones, reported as cached.
	if body.Get("usage.prompt_tokens_details.cached_tokens").Int() != 2 || body.Get("usage.prompt_tokens").Int() < 3 || body.Get("usage.cost").Float() <= 0 {
		t.Fatalf("usage %s", body.Get("usage").Raw)
	}
	last := up.Last()
	if last.Header.Get("x-api-key") != "sk-ant-test-0123456789" || last.Header.Get("anthropic-version") == "" || last.Header.Get("Authorization") != "" {
		t.Fatalf("headers %v", last.Header)
	}
	sent := gjson.ParseBytes(last.Body)
	for path, want := range map[string]string{
		"model":                                  "claude-test-1",
		"system":                                 "Be brief.\n\nNo emojis.",
		"max_tokens":                             "4096",
		"temperature":                            "0.2",
		"top_k":                                  "5",
		"stop_sequences.0":                       "END",
		"metadata.user_id":                       "u-1",
		"messages.0.role":                        "user",
		"messages.0.content.0.text":              "hi there",
		"messages.0.content.1.source.type":       "base64",
		"messages.0.content.1.source.media_type": "image/png",
	} {
		if got := sent.Get(path).String(); got != want {
			t.Errorf("upstream %s = %q, want %q", path, got, want)
		}
	}
	if sent.Get("messages.#").Int() != 1 {
		t.Errorf("system messages were not lifted out: %s", sent.Get("messages").Raw)
	}
}

func TestAnthropicToolsAndHistory(t *testing.T) {
	g, up := startAnthropic(t)
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	resp, body := post(t, g, "/chat/completions", `{"model":"test/claude",`+tools+`,"tool_choice":"required","parallel_tool_calls":false,"messages":[{"role":"user","content":"weather in Oslo?"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	call := body.Get("choices.0.message.tool_calls.0")
	if call.Get("function.name").Str != "get_weather" || call.Get("function.arguments").Str != `{"city":"Oslo"}` || body.Get("choices.0.finish_reason").Str != "tool_calls" {
		t.Fatalf("%s", body.Raw)
	}
	sent := gjson.ParseBytes(up.Last().Body)
	if sent.Get("tools.0.input_schema.properties.city.type").Str != "string" || sent.Get("tool_choice.type").Str != "any" || !sent.Get("tool_choice.disable_parallel_tool_use").Bool() {
		t.Fatalf("tools sent %s / %s", sent.Get("tools").Raw, sent.Get("tool_choice").Raw)
	}
	// The tool round trip: assistant tool_calls and the tool result.
	resp, body = post(t, g, "/chat/completions", `{"model":"test/claude",`+tools+`,"messages":[
		{"role":"user","content":"weather in Oslo?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		{"role":"tool","tool_call_id":"toolu_1","content":"sunny, 21C"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	sent = gjson.ParseBytes(up.Last().Body)
	if sent.Get("messages.1.content.0.type").Str != "tool_use" || sent.Get("messages.1.content.0.input.city").Str != "Oslo" ||
		sent.Get("messages.2.content.0.type").Str != "tool_result" || sent.Get("messages.2.content.0.tool_use_id").Str != "toolu_1" {
		t.Fatalf("history sent %s", sent.Get("messages").Raw)
	}
}

func TestAnthropicStreaming(t *testing.T) {
	g, _ := startAnthropic(t)
	raw := readStream(t, g, `{"model":"test/claude","stream":true,"tools":[{"type":"function","function":{"name":"get_weather"}}],"messages":[{"role":"user","content":"weather please"}]}`)
	var text, args strings.Builder
	var finish, native string
	var usage gjson.Result
	for _, l := range strings.Split(raw, "\n") {
		d, ok := strings.CutPrefix(l, "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		c := gjson.Parse(d)
		if c.Get("model").Str != "test/claude" || c.Get("object").Str != "chat.completion.chunk" {
			t.Fatalf("chunk %s", d)
		}
		text.WriteString(c.Get("choices.0.delta.content").Str)
		args.WriteString(c.Get("choices.0.delta.tool_calls.0.function.arguments").Str)
		if fr := c.Get("choices.0.finish_reason").Str; fr != "" {
			finish, native = fr, c.Get("choices.0.native_finish_reason").Str
		}
		if c.Get("usage").Exists() {
			usage = c.Get("usage")
		}
	}
	if !strings.Contains(text.String(), "You said: weather please") || args.String() != `{"city": "Oslo"}` || finish != "tool_calls" || native != "tool_use" {
		t.Fatalf("text %q args %q finish %q (native %q)\n%s", text.String(), args.String(), finish, native, raw)
	}
	if usage.Get("completion_tokens").Int() < 1 || usage.Get("prompt_tokens_details.cached_tokens").Int() != 2 || usage.Get("cost").Float() <= 0 {
		t.Fatalf("usage %s", usage.Raw)
	}
	if !strings.HasSuffix(strings.TrimSpace(raw), "data: [DONE]") {
		t.Fatalf("no [DONE]: %s", raw)
	}
}

func TestAnthropicErrors(t *testing.T) {
	g, up := startAnthropic(t)
	for _, tc := range []struct {
		status, want int
		msg          string
	}{
		{529, 529, "demo fault"},
		{429, 429, "demo fault"},
		{400, 400, "demo fault"},
		{500, 502, "demo fault"},
		{401, 502, "rejected the gateway's credentials"},
	} {
		up.SetFaults(demo.Faults{Status: tc.status})
		resp, body := post(t, g, "/chat/completions", `{"model":"test/claude","messages":[{"role":"user","content":"x"}]}`)
		wantError(t, resp, body, tc.want, tc.msg)
	}
}

// TestAnthropicCacheControl: the request's cache_control puts a breakpoint
// on the last content block; a breakpoint on a text part passes through.
func TestAnthropicCacheControl(t *testing.T) {
	g, up := startAnthropic(t)
	resp, body := post(t, g, "/chat/completions", `{"model":"test/claude","cache_control":{"type":"ephemeral","ttl":"1h"},
		"messages":[{"role":"user","content":[{"type":"text","text":"long context","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"ok"},{"role":"user","content":"question"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	sent := gjson.ParseBytes(up.Last().Body)
	if sent.Get("messages.2.content.0.cache_control.ttl").Str != "1h" || sent.Get("messages.2.content.0.text").Str != "question" {
		t.Fatalf("last block %s", sent.Get("messages.2").Raw)
	}
	if sent.Get("messages.0.content.0.cache_control.type").Str != "ephemeral" || sent.Get("messages.1.content.0.cache_control").Exists() {
		t.Fatalf("messages %s", sent.Get("messages").Raw)
	}
}
