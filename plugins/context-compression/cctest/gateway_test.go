//go:build !wasip1

// Package cctest tests the context-compression module through the real
// gateway over loopback, with fake upstreams in each provider's format.
package cctest_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// A small-context model (default-on compression) and a large one (off
// unless asked), on an OpenAI-style, an Anthropic and a Gemini upstream;
// the Anthropic provider limits the message count.
const catalogYAML = `demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: alpha, name: alpha, adapter: openai, base_url: "{{url:alpha}}", data_collection: deny, region: us}
  - {slug: anth, name: Anthropic, adapter: anthropic, base_url: "{{url:anth}}", api_key_env: ANTH_KEY, data_collection: deny, region: us, max_messages: 9}
  - {slug: gem, name: Gemini, adapter: gemini, base_url: "{{url:gem}}", api_key_env: GEM_KEY, data_collection: deny, region: us}
models:
  - id: test/small
    kind: chat
    context_length: 4096
    endpoints:
      - {provider: alpha, upstream_model: echo, max_output: 512, price: {prompt: 1, completion: 2}}
  - id: test/big
    kind: chat
    context_length: 16384
    endpoints:
      - {provider: alpha, upstream_model: echo, max_output: 2048, price: {prompt: 1, completion: 2}}
  - id: test/claude-small
    kind: chat
    context_length: 4096
    endpoints:
      - {provider: anth, upstream_model: claude-test-1, max_output: 512, price: {prompt: 3, completion: 15}}
  - id: test/gemini-small
    kind: chat
    context_length: 4096
    endpoints:
      - {provider: gem, upstream_model: gemini-test, max_output: 512, price: {prompt: 1, completion: 2}}
`

func start(t *testing.T) *gatewaytest.Gateway {
	t.Helper()
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, ConfigYAML: catalogYAML, Anthropic: []string{"anth"}, Gemini: []string{"gem"},
		Env: map[string]string{"ANTH_KEY": "sk-ant-test-0123456789", "GEM_KEY": "gem-test-key"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

func words(tag string, n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(tag + " word " + strconv.Itoa(i) + ". ")
	}
	return b.String()
}

const lastQuestion = "THE LAST QUESTION: what did we decide?"

// conversation is about 250 tokens a turn: 40 turns are ~10,000 tokens.
// Turn 5 calls two tools.
func conversation(turns int) []map[string]any {
	ms := []map[string]any{{"role": "system", "content": "You are the project's memory."}}
	for i := range turns {
		ms = append(ms, map[string]any{"role": "user", "content": words("q"+strconv.Itoa(i), 25)})
		if i == 5 {
			ms = append(ms,
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
					map[string]any{"id": "call_a", "type": "function", "function": map[string]any{"name": "lookup", "arguments": `{"q":"a"}`}},
					map[string]any{"id": "call_b", "type": "function", "function": map[string]any{"name": "lookup", "arguments": `{"q":"b"}`}}}},
				map[string]any{"role": "tool", "tool_call_id": "call_a", "content": words("ra", 20)},
				map[string]any{"role": "tool", "tool_call_id": "call_b", "content": words("rb", 20)})
		}
		ms = append(ms, map[string]any{"role": "assistant", "content": words("a"+strconv.Itoa(i), 25)})
	}
	return append(ms, map[string]any{"role": "user", "content": lastQuestion})
}

func request(model string, turns int, extra map[string]any) string {
	m := map[string]any{"model": model, "messages": conversation(turns)}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func stageOf(b gjson.Result) gjson.Result {
	for _, s := range b.Get("service_metadata.pipeline").Array() {
		if s.Get("name").Str == "context-compression" {
			return s
		}
	}
	return gjson.Result{}
}

// checkSent asserts what the OpenAI-style upstream received: fewer
// messages, the system prompt first, the last question last, and no tool
// call separated from its result.
func checkSent(t *testing.T, sent gjson.Result, original, context int) {
	t.Helper()
	msgs := sent.Get("messages").Array()
	if len(msgs) >= original || len(msgs) < 3 {
		t.Fatalf("upstream got %d messages of %d", len(msgs), original)
	}
	if msgs[0].Get("role").Str != "system" || msgs[len(msgs)-1].Get("content").Str != lastQuestion {
		t.Fatalf("ends not kept: first %s, last %s", msgs[0].Raw, msgs[len(msgs)-1].Raw)
	}
	calls, answered := map[string]bool{}, map[string]bool{}
	for _, m := range msgs {
		for _, tc := range m.Get("tool_calls").Array() {
			calls[tc.Get("id").Str] = true
		}
		if m.Get("role").Str == "tool" {
			if !calls[m.Get("tool_call_id").Str] {
				t.Fatalf("tool result without its call: %s", m.Raw)
			}
			answered[m.Get("tool_call_id").Str] = true
		}
	}
	if len(calls) != len(answered) {
		t.Fatalf("tool calls %v, answered %v", calls, answered)
	}
	if n := len(sent.Get("messages").Raw) / 4; n > context {
		t.Fatalf("upstream messages of %d bytes cannot fit %d tokens", len(sent.Get("messages").Raw), context)
	}
}

func chat(t *testing.T, g *gatewaytest.Gateway, body string) (int, gjson.Result) {
	t.Helper()
	resp, b, err := g.Request("POST", "/chat/completions", body, "X-Service-Metadata", "enabled")
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, gjson.ParseBytes(b)
}

func TestCompressionThroughGateway(t *testing.T) {
	g := start(t)
	up := g.Upstreams["alpha"]
	original := len(conversation(40))

	t.Run("listed: json", func(t *testing.T) {
		status, b := chat(t, g, request("test/small", 40, map[string]any{"max_tokens": 300, "plugins": []any{map[string]any{"id": "context-compression", "engine": "middle-out"}}}))
		if status != 200 {
			t.Fatalf("%d %s", status, b.Raw)
		}
		sent := gjson.ParseBytes(up.Last().Body)
		checkSent(t, sent, original, 4096)
		st := stageOf(b)
		d := st.Get("data")
		if st.Get("hook").Str != "pre_request" || d.Get("engine").Str != "middle-out" || d.Get("original_count").Int() != int64(original) ||
			d.Get("compressed_count").Int() != int64(len(sent.Get("messages").Array())) ||
			d.Get("original_tokens").Int() < 8000 || d.Get("compressed_tokens").Int()+300 > 4096 || d.Get("reserved_output").Int() != 300 {
			t.Fatalf("stage %s", st.Raw)
		}
		// The answer is billed on what was sent, not on the original.
		if p := b.Get("usage.prompt_tokens").Int(); p <= 0 || p > 4096 {
			t.Fatalf("usage %s", b.Get("usage").Raw)
		}
	})

	t.Run("default on for a small context: stream", func(t *testing.T) {
		body, _ := sjson.Set(request("test/small", 40, nil), "stream", true)
		req, _ := http.NewRequest("POST", g.URL+"/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+g.Key)
		req.Header.Set("X-Service-Metadata", "enabled")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		var text strings.Builder
		var stage gjson.Result
		done := false
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			d, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if d == "[DONE]" {
				done = true
				continue
			}
			c := gjson.Parse(d)
			text.WriteString(c.Get("choices.0.delta.content").Str)
			if s := stageOf(c); s.Exists() {
				stage = s
			}
		}
		if !done || !strings.Contains(text.String(), lastQuestion) {
			t.Fatalf("done %v, text %q", done, text.String())
		}
		checkSent(t, gjson.ParseBytes(up.Last().Body), original, 4096)
		if stage.Get("data.engine").Str != "middle-out" || stage.Get("data.compressed_count").Int() >= int64(original) {
			t.Fatalf("stage %s", stage.Raw)
		}
	})

	t.Run("default on: a short request is untouched and shows no stage", func(t *testing.T) {
		status, b := chat(t, g, request("test/small", 2, nil))
		if status != 200 || stageOf(b).Exists() {
			t.Fatalf("%d %s", status, b.Get("service_metadata.pipeline").Raw)
		}
		if n := len(gjson.GetBytes(up.Last().Body, "messages").Array()); n != len(conversation(2)) {
			t.Fatalf("upstream got %d messages", n)
		}
	})

	for _, stream := range []bool{false, true} {
		t.Run("enabled false: 400 naming the context and the plugin, stream "+strconv.FormatBool(stream), func(t *testing.T) {
			before := up.Count()
			status, b := chat(t, g, request("test/small", 40, map[string]any{"stream": stream, "plugins": []any{map[string]any{"id": "context-compression", "enabled": false}}}))
			msg := b.Get("error.message").Str
			if status != 400 || b.Get("error.code").Int() != 400 || !strings.Contains(msg, "largest context available for test/small: 4096 tokens") ||
				!strings.Contains(msg, `"id": "context-compression"`) || b.Get("error.metadata.context_length").Int() != 4096 {
				t.Fatalf("%d %s", status, b.Raw)
			}
			if up.Count() != before {
				t.Fatal("the over-long request reached the upstream")
			}
		})
	}

	t.Run("off by default above 8192 tokens: 400", func(t *testing.T) {
		status, b := chat(t, g, request("test/big", 120, nil))
		if status != 400 || !strings.Contains(b.Get("error.message").Str, "16384 tokens") || stageOf(b).Exists() {
			t.Fatalf("%d %s", status, b.Raw)
		}
	})

	t.Run("listed above 8192 tokens", func(t *testing.T) {
		status, b := chat(t, g, request("test/big", 120, map[string]any{"plugins": []any{map[string]any{"id": "context-compression"}}}))
		if status != 200 || stageOf(b).Get("data.context_length").Int() != 16384 {
			t.Fatalf("%d %s", status, b.Raw)
		}
		checkSent(t, gjson.ParseBytes(up.Last().Body), len(conversation(120)), 16384)
	})

	t.Run("an unknown engine is a 400 naming the option", func(t *testing.T) {
		status, b := chat(t, g, request("test/small", 2, map[string]any{"plugins": []any{map[string]any{"id": "context-compression", "engine": "top-down"}}}))
		if status != 400 || !strings.Contains(b.Get("error.message").Str, "plugins[0].engine") {
			t.Fatalf("%d %s", status, b.Raw)
		}
	})
}

// The other providers' wire formats get the compressed conversation, and
// the Anthropic provider's message-count limit (max_messages: 9 in the
// catalog) is kept even where the tokens would fit.
func TestCompressionOtherProviders(t *testing.T) {
	g := start(t)

	t.Run("anthropic: tokens", func(t *testing.T) {
		status, b := chat(t, g, request("test/claude-small", 40, nil))
		if status != 200 {
			t.Fatalf("%d %s", status, b.Raw)
		}
		sent := gjson.ParseBytes(g.Anthropics["anth"].Last().Body)
		msgs := sent.Get("messages").Array()
		if sent.Get("system").Str != "You are the project's memory." || len(msgs) > 9 || !strings.Contains(msgs[len(msgs)-1].Raw, lastQuestion) {
			t.Fatalf("anthropic got %s", sent.Raw)
		}
	})

	t.Run("anthropic: message count", func(t *testing.T) {
		// 12 short turns: a few hundred tokens, 26 messages.
		ms := []map[string]any{{"role": "system", "content": "Be brief."}}
		for i := range 12 {
			ms = append(ms, map[string]any{"role": "user", "content": "question " + strconv.Itoa(i)}, map[string]any{"role": "assistant", "content": "answer " + strconv.Itoa(i)})
		}
		ms = append(ms, map[string]any{"role": "user", "content": lastQuestion})
		body, _ := json.Marshal(map[string]any{"model": "test/claude-small", "messages": ms})
		status, b := chat(t, g, string(body))
		if status != 200 {
			t.Fatalf("%d %s", status, b.Raw)
		}
		sent := gjson.ParseBytes(g.Anthropics["anth"].Last().Body)
		msgs := sent.Get("messages").Array()
		// 9 messages with the system prompt: 8 in Anthropic's messages.
		if len(msgs) != 8 || msgs[0].Get("content").Raw == "" || !strings.Contains(msgs[0].Raw, "question 0") || !strings.Contains(msgs[len(msgs)-1].Raw, lastQuestion) {
			t.Fatalf("anthropic got %d messages: %s", len(msgs), sent.Get("messages").Raw)
		}
		st := stageOf(b)
		if st.Get("data.max_messages").Int() != 9 || st.Get("data.compressed_count").Int() != 9 {
			t.Fatalf("stage %s", st.Raw)
		}
	})

	t.Run("gemini", func(t *testing.T) {
		status, b := chat(t, g, request("test/gemini-small", 40, nil))
		if status != 200 {
			t.Fatalf("%d %s", status, b.Raw)
		}
		sent := gjson.ParseBytes(g.Geminis["gem"].Last().Body)
		contents := sent.Get("contents").Array()
		if len(contents) >= len(conversation(40)) || !strings.Contains(contents[len(contents)-1].Raw, lastQuestion) ||
			!strings.Contains(sent.Get("systemInstruction").Raw, "project's memory") {
			t.Fatalf("gemini got %d contents", len(contents))
		}
	})
}
