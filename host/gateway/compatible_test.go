package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// compatibleFake is one OpenAI-compatible provider as the openai adapter's
// form for it (api:) must meet it: it answers with the payloads of its API
// reference (plugins/openai/testdata/providers) and refuses, as the
// provider documents, a request member it does not take.
type compatibleFake struct {
	api, model, json, sse string
	// only: the provider refuses every other member (Mistral: 422).
	only []string
	// refused: members the provider answers with a 400.
	refused []string
	// toolTurnReasoning: the provider answers with a 400 an assistant turn
	// that called tools without its reasoning_content (DeepSeek's thinking
	// mode, https://api-docs.deepseek.com/guides/thinking_mode, "Tool
	// calls"; the message is illustrative).
	toolTurnReasoning bool
	// seen receives each chat request's body.
	seen chan []byte
}

func (f compatibleFake) serve(t *testing.T, key string) *httptest.Server {
	read := func(name string) []byte {
		b, err := os.ReadFile("../../plugins/openai/testdata/providers/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	answer, stream := read(f.json), read(f.sse)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"Invalid API key"}}`))
			return
		}
		if r.URL.Path != "/chat/completions" || gjson.GetBytes(body, "model").Str != f.model {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		var bad string
		gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool {
			if contains(f.refused, k.Str) || (f.only != nil && k.Str != "model" && !contains(f.only, k.Str)) {
				bad = k.Str
			}
			return bad == ""
		})
		if bad != "" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			w.Write([]byte(`{"object":"error","message":"` + bad + `: Extra inputs are not permitted","type":"invalid_request_error"}`))
			return
		}
		if f.seen != nil {
			select {
			case f.seen <- body:
			default:
			}
		}
		missing := -1
		gjson.GetBytes(body, "messages").ForEach(func(i, m gjson.Result) bool {
			if f.toolTurnReasoning && m.Get("role").Str == "assistant" && m.Get("tool_calls.#").Int() > 0 && !m.Get("reasoning_content").Exists() {
				missing = int(i.Int())
			}
			return missing < 0
		})
		if missing >= 0 {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":{"message":"Missing reasoning_content field in the assistant message at message index ` + strconv.Itoa(missing) + `","type":"invalid_request_error"}}`))
			return
		}
		if gjson.GetBytes(body, "stream").Bool() {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(stream)
			return
		}
		w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestOpenAICompatibleProviders: each provider the openai adapter speaks
// through a form (and Cohere, through its own adapter), end to end over loopback against a fake with its
// documented payloads and refusals. The client sends the same request to
// each (OpenAI's members, some a provider refuses); the answer, JSON and
// streamed, carries the reasoning as the gateway's reasoning field, the
// usage counted as OpenAI counts it, and the gateway's own cost.
func TestOpenAICompatibleProviders(t *testing.T) {
	const key = "sk-test-compatible"
	cases := []struct {
		fake                   compatibleFake
		content, reasoning     string
		completion, cached     int64
		streamed, streamReason string
		finish                 string
	}{
		{fake: compatibleFake{api: "mistral", model: "mistral-small-latest", json: "mistral_chat.json", sse: "mistral_stream.sse",
			only: []string{"messages", "temperature", "top_p", "max_tokens", "stream", "stop", "random_seed", "response_format", "tools", "tool_choice", "presence_penalty", "frequency_penalty", "n", "prediction", "parallel_tool_calls", "safe_prompt"}},
			content: "Claude Monet is often considered the best French painter.", completion: 11,
			streamed: "Claude Monet is often", finish: "length"},
		{fake: compatibleFake{api: "xai", model: "grok-3-mini", json: "xai_grok3mini.json", sse: "deepseek_reasoner_stream.sse"},
			content: "The result of 101 multiplied by 3 is 303.", reasoning: "Let me calculate 101 multiplied by 3", completion: 324, cached: 6,
			streamed: "9.8 is greater.", streamReason: "9.8 = 9.80 > 9.11", finish: "stop"},
		{fake: compatibleFake{api: "deepseek", model: "deepseek-reasoner", json: "deepseek_reasoner.json", sse: "deepseek_reasoner_stream.sse",
			toolTurnReasoning: true, seen: make(chan []byte, 1)},
			content: "9.8 is greater than 9.11.", reasoning: "Comparing 9.11 and 9.8", completion: 96,
			streamed: "9.8 is greater.", streamReason: "9.8 = 9.80 > 9.11", finish: "stop"},
		{fake: compatibleFake{api: "cerebras", model: "llama3.1-8b", json: "cerebras_chat.json", sse: "mistral_stream.sse",
			refused: []string{"frequency_penalty", "logit_bias", "presence_penalty", "parallel_tool_calls", "service_tier"}},
			content: "Hello! How can I assist you today?", completion: 10, streamed: "Claude Monet is often", finish: "length"},
		{fake: compatibleFake{api: "fireworks", model: "accounts/fireworks/models/deepseek-r1", json: "fireworks_reasoning.json", sse: "deepseek_reasoner_stream.sse",
			seen: make(chan []byte, 1)},
			content: "25 * 37 = 925.", reasoning: "25 * 37 = 25 * 40", completion: 50,
			streamed: "9.8 is greater.", streamReason: "9.8 = 9.80 > 9.11", finish: "stop"},
		{fake: compatibleFake{api: "openrouter", model: "deepseek/deepseek-r1", json: "openrouter_reasoning.json", sse: "openrouter_stream.sse"},
			content: "9.8 is greater than 9.11.", reasoning: "Compare the tenths", completion: 120,
			streamed: "9.8 is greater.", streamReason: "Compare the tenths", finish: "stop"},
	}
	var yml strings.Builder
	yml.WriteString("demo: false\ntimeouts: {attempt: 5s, request: 30s}\nproviders:\n")
	for _, tc := range cases {
		srv := tc.fake.serve(t, key)
		yml.WriteString("  - {slug: " + tc.fake.api + ", adapter: openai, api: " + tc.fake.api + ", base_url: \"" + srv.URL + "\", api_key_env: COMPAT_KEY}\n")
	}
	// Cohere has its own adapter; it shares this gateway (one start for
	// all the providers keeps the test fast).
	yml.WriteString("  - {slug: cohere, adapter: cohere, base_url: \"" + fakeCohere(t, key).URL + "\", api_key_env: COMPAT_KEY}\n")
	yml.WriteString("models:\n")
	for _, tc := range cases {
		yml.WriteString("  - {id: test/" + tc.fake.api + ", endpoints: [{provider: " + tc.fake.api + ", upstream_model: \"" + tc.fake.model + "\", price: {prompt: 1, completion: 1}}]}\n")
	}
	yml.WriteString("  - {id: cohere/command-a, endpoints: [{provider: cohere, upstream_model: command-a-03-2025, price: {prompt: 2.5, completion: 10}}]}\n")
	yml.WriteString("  - {id: cohere/embed-v4, kind: embedding, endpoints: [{provider: cohere, upstream_model: embed-v4.0, price: {prompt: 0.12}}]}\n")
	g, err := gatewaytest.Start(gatewaytest.Options{ConfigYAML: yml.String(), ConfigFile: true, Quiet: true, Env: map[string]string{"COMPAT_KEY": key}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	// OpenAI's members, some of which Mistral or Cerebras refuse.
	ask := `"messages":[{"role":"user","content":"hi"}],"seed":7,"presence_penalty":0.1,"user":"u-1","reasoning":{"effort":"high"}`
	for _, tc := range cases {
		t.Run(tc.fake.api, func(t *testing.T) {
			resp, b, err := g.Request("POST", "/chat/completions", `{"model":"test/`+tc.fake.api+`",`+ask+`}`)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%v %d %s", err, resp.StatusCode, b)
			}
			m := gjson.GetBytes(b, "choices.0.message")
			if m.Get("content").Str != tc.content || !strings.HasPrefix(m.Get("reasoning").Str, tc.reasoning) ||
				(tc.reasoning == "" && m.Get("reasoning").Exists()) || m.Get("reasoning_content").Exists() {
				t.Errorf("message %s", m.Raw)
			}
			u := gjson.GetBytes(b, "usage")
			if u.Get("completion_tokens").Int() != tc.completion || u.Get("prompt_tokens_details.cached_tokens").Int() != tc.cached {
				t.Errorf("usage %s, want completion %d cached %d", u.Raw, tc.completion, tc.cached)
			}
			// The inference cost is the gateway's price of the tokens,
			// never the upstream's own bill (OpenRouter's usage.cost).
			// (usage.cost is what the account was charged, which the
			// test key's hold may cap.)
			want := float64(u.Get("prompt_tokens").Int()+u.Get("completion_tokens").Int()) / 1e6
			if c := u.Get("cost_details.upstream_inference_cost").Float(); c < want*0.999 || c > want*1.001 {
				t.Errorf("cost %v, want %v: %s", c, want, u.Raw)
			}

			resp, b, err = g.Request("POST", "/chat/completions", `{"model":"test/`+tc.fake.api+`","stream":true,`+ask+`}`)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("stream: %v %d %s", err, resp.StatusCode, b)
			}
			var content, reasoning, finish string
			for _, line := range bytes.Split(b, []byte("\n")) {
				data, ok := bytes.CutPrefix(line, []byte("data: "))
				if !ok || string(data) == "[DONE]" {
					continue
				}
				c := gjson.ParseBytes(data)
				content += c.Get("choices.0.delta.content").Str
				reasoning += c.Get("choices.0.delta.reasoning").Str
				if f := c.Get("choices.0.finish_reason").Str; f != "" {
					finish = f
				}
			}
			if content != tc.streamed || reasoning != tc.streamReason || finish != tc.finish || bytes.Contains(b, []byte("reasoning_content")) {
				t.Errorf("stream: content %q reasoning %q finish %q\n%s", content, reasoning, finish, b)
			}
		})
	}
	t.Run("cohere", func(t *testing.T) { cohere(t, g) })

	// Reasoning passed back: a client's multi-turn tool conversation, with
	// the reasoning of the assistant's turns as the gateway returned it
	// (reasoning) or as OpenRouter's clients keep it (reasoning_details).
	// DeepSeek gets it as reasoning_content on the turns that called tools
	// (its fake refuses a tool turn without it), Fireworks on every turn.
	turns := `"messages":[{"role":"user","content":"9.11 or 9.8?"},{"role":"assistant","content":"9.8","reasoning":"tenths"},` +
		`{"role":"user","content":"weather?"},{"role":"assistant","content":null,"reasoning_details":[{"type":"reasoning.text","text":"call the tool"}],` +
		`"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"sunny"}]`
	for _, tc := range cases {
		if tc.fake.seen == nil {
			continue
		}
		t.Run(tc.fake.api+"/passback", func(t *testing.T) {
			for len(tc.fake.seen) > 0 {
				<-tc.fake.seen
			}
			resp, b, err := g.Request("POST", "/chat/completions", `{"model":"test/`+tc.fake.api+`",`+turns+`}`)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%v %d %s", err, resp.StatusCode, b)
			}
			ms := gjson.GetBytes(<-tc.fake.seen, "messages")
			first := "tenths"
			if tc.fake.toolTurnReasoning {
				first = "" // DeepSeek: a turn without tool calls needs none
			}
			if ms.Get("1.reasoning_content").Str != first || ms.Get("3.reasoning_content").Str != "call the tool" ||
				strings.Contains(ms.Raw, `"reasoning"`) || strings.Contains(ms.Raw, "reasoning_details") {
				t.Errorf("upstream messages %s", ms.Raw)
			}
		})
	}

	// A provider's api must be a form its adapter's manifest lists: vertex
	// is the anthropic and gemini adapters', not the openai adapter's. A
	// configuration naming it is refused (here on reload; at start the
	// same check runs, gateway checkAPIs).
	bad := strings.Replace(yml.String(), "adapter: openai, api: mistral,", "adapter: openai, api: vertex,", 1)
	if err := g.WriteConfig(bad); err != nil {
		t.Fatal(err)
	}
	resp, b, err := g.Request("POST", "/admin/reload", "")
	if err != nil || resp.StatusCode == 200 || !strings.Contains(string(b), `api \"vertex\" is not a form adapter \"openai\" speaks`) {
		t.Fatalf("reload with openai's api vertex: %v %d %s", err, resp.StatusCode, b)
	}
}

// cohere checks the Cohere adapter end to end on the gateway of
// TestOpenAICompatibleProviders: chat (JSON and streamed tool call),
// embeddings and a throttled call, against fakeCohere.
func cohere(t *testing.T, g *gatewaytest.Gateway) {
	resp, b, err := g.Request("POST", "/chat/completions", `{"model":"cohere/command-a","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about LLMs"}],"stop":"END","top_p":0.5}`)
	if err != nil || resp.StatusCode != 200 ||
		!strings.HasPrefix(gjson.GetBytes(b, "choices.0.message.content").Str, "LLMs stand for Large Language Models") ||
		gjson.GetBytes(b, "usage.prompt_tokens").Int() != 5 || gjson.GetBytes(b, "choices.0.finish_reason").Str != "stop" {
		t.Fatalf("chat: %v %d %s", err, resp.StatusCode, b)
	}
	resp, b, err = g.Request("POST", "/chat/completions", `{"model":"cohere/command-a","stream":true,"messages":[{"role":"user","content":"weather in Toronto?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}]}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %d %s", err, resp.StatusCode, b)
	}
	var name, args, finish string
	for _, line := range bytes.Split(b, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok || string(data) == "[DONE]" {
			continue
		}
		c := gjson.ParseBytes(data)
		name += c.Get("choices.0.delta.tool_calls.0.function.name").Str
		args += c.Get("choices.0.delta.tool_calls.0.function.arguments").Str
		if f := c.Get("choices.0.finish_reason").Str; f != "" {
			finish = f
		}
	}
	if name != "get_weather" || args != `{"location":"Toronto"}` || finish != "tool_calls" {
		t.Fatalf("stream: name %q args %q finish %q\n%s", name, args, finish, b)
	}
	resp, b, err = g.Request("POST", "/embeddings", `{"model":"cohere/embed-v4","input":["hello","goodbye"]}`)
	if err != nil || resp.StatusCode != 200 || gjson.GetBytes(b, "data.#").Int() != 2 ||
		gjson.GetBytes(b, "data.1.embedding.0").Float() != -0.0033473968 || gjson.GetBytes(b, "usage.prompt_tokens").Int() != 2 {
		t.Fatalf("embeddings: %v %d %s", err, resp.StatusCode, b)
	}
	// Citations (Cohere's RAG and tool-use examples) are url_citation
	// annotations, in JSON and in the stream.
	resp, b, err = g.Request("POST", "/chat/completions", `{"model":"cohere/command-a","messages":[{"role":"user","content":"cite"}]}`)
	a := gjson.GetBytes(b, "choices.0.message.annotations")
	if err != nil || resp.StatusCode != 200 || a.Get("#").Int() != 2 || a.Get("0.url_citation.title").Str != "Tall penguins" || a.Get("1.url_citation.start_index").Int() != 65 {
		t.Fatalf("citations: %v %d %s", err, resp.StatusCode, b)
	}
	resp, b, err = g.Request("POST", "/chat/completions", `{"model":"cohere/command-a","stream":true,"messages":[{"role":"user","content":"cite"}]}`)
	var urls []string
	for _, line := range bytes.Split(b, []byte("\n")) {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			gjson.GetBytes(data, "choices.0.delta.annotations").ForEach(func(_, a gjson.Result) bool {
				urls = append(urls, a.Get("url_citation.url").Str)
				return true
			})
		}
	}
	if err != nil || resp.StatusCode != 200 || strings.Join(urls, " ") != "get_weather_1byjy32y4hvq:0 https://weather.gc.ca/city/pages/on-143_metric_e.html" {
		t.Fatalf("streamed citations %q: %v %s", urls, err, b)
	}
	resp, b, err = g.Request("POST", "/chat/completions", `{"model":"cohere/command-a","messages":[{"role":"user","content":"throttle me"}]}`)
	if err != nil || resp.StatusCode != 429 || !strings.Contains(gjson.GetBytes(b, "error.message").Str, "Trial key") {
		t.Fatalf("throttled: %v %d %s", err, resp.StatusCode, b)
	}
}

// fakeCohere answers v2 Chat and Embed as Cohere does, with the API
// reference's payloads (plugins/cohere/testdata), after checking the
// bearer key and the request's shape (Cohere's names, not OpenAI's); the
// message "throttle me" gets Cohere's 429.
func fakeCohere(t *testing.T, key string) *httptest.Server {
	read := func(name string) []byte {
		b, err := os.ReadFile("../../plugins/cohere/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	chat, stream, embed, throttled := read("chat_response.json"), read("stream_tool.sse"), read("embed_response.json"), read("error_rate_limit.json")
	cited, citedStream := read("chat_citations.json"), read("stream_citations.sse")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := gjson.ParseBytes(body)
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(498)
			w.Write(read("error_invalid_token.json"))
			return
		}
		switch {
		case r.URL.Path == "/v2/embed" && req.Get("input_type").Exists() && req.Get("embedding_types.0").Str == "float" && req.Get("texts.#").Int() == 2:
			w.Write(embed)
		case r.URL.Path != "/v2/chat" || req.Get("model").Str != "command-a-03-2025" || req.Get("stop").Exists() || req.Get("top_p").Exists():
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"id":"x","message":"invalid request: unknown field"}`))
		case req.Get("messages.0.content").Str == "throttle me":
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write(throttled)
		case req.Get("messages.0.content").Str == "cite" && req.Get("stream").Bool():
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(citedStream)
		case req.Get("messages.0.content").Str == "cite":
			w.Write(cited)
		case req.Get("stream").Bool():
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(stream)
		default:
			w.Write(chat)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
