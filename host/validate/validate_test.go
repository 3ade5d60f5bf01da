package validate

import (
	"strings"
	"testing"
)

// base is a minimal valid chat request; cases replace or add fields.
const base = `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]`

// maximal uses every field of spec 2.1 with a valid value.
const maximal = `{
 "model":"openai/gpt-4o","models":["anthropic/claude-3.5-sonnet","meta-llama/llama-3:free"],
 "messages":[
  {"role":"system","content":"be brief"},
  {"role":"developer","content":"dev"},
  {"role":"user","name":"ann","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"high"}},{"type":"input_audio","input_audio":{"data":"AA","format":"wav"}}]},
  {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
  {"role":"tool","tool_call_id":"c1","content":"sunny"}
 ],
 "stream":true,"stream_options":{"include_usage":true},
 "temperature":0,"top_p":1,"top_k":40,"min_p":0.05,"top_a":0.1,"frequency_penalty":-2,"presence_penalty":2,
 "repetition_penalty":1.1,"logit_bias":{"50256":-100,"13":5.5},"logprobs":true,"top_logprobs":20,
 "max_completion_tokens":100,"max_tokens":16,"seed":-7,"stop":["a","b","c","d"],
 "response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"},"strict":true}},
 "tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"},"strict":true},"cache_control":{"type":"ephemeral"}}],
 "tool_choice":{"type":"function","function":{"name":"get_weather"}},
 "parallel_tool_calls":false,"reasoning":{"effort":"high","summary":"auto"},"reasoning_effort":"high",
 "modalities":["text","image"],"image_config":{"aspect_ratio":"16:9","n":2,"sizes":["1k"]},
 "metadata":{"team":"a"},"user":"u1","session_id":"s1","service_tier":"flex",
 "provider":{"allow_fallbacks":false,"data_collection":"deny","enforce_distillable_text":true,"ignore":["x"],"only":["openai"],"order":["openai"],
   "max_price":{"prompt":"1.5","completion":"2","request":"0","image":"0.01","audio":"0"},
   "preferred_max_latency":{"p50":1,"p90":3},"preferred_min_throughput":50,"quantizations":["fp8","bf16"],
   "require_parameters":true,"sort":{"by":"price","partition":"none"},"zdr":true},
 "plugins":[{"id":"auto-router","allowed_models":["openai/*"],"cost_quality_tradeoff":7},{"id":"moderation"},
   {"id":"web","engine":"native","exclude_domains":["x.com"],"include_domains":["*.gov"],"max_results":5,"max_uses":2,"search_prompt":"s","user_location":{"type":"approximate","city":"Oslo","country":"NO"}},
   {"id":"web-fetch","allowed_domains":["a.com"],"blocked_domains":["b.com"],"max_content_tokens":1000,"max_uses":3},
   {"id":"file-parser","pdf":{"engine":"text"}},{"id":"response-healing","enabled":false},{"id":"context-compression","engine":"middle-out"},
   {"id":"pareto-router","min_coding_score":0.5,"price_source":"weighted_avg"},
   {"id":"fusion","analysis_models":["openai/gpt-4o"],"model":"openai/gpt-4o","preset":"general-fast","max_tool_calls":16,"tools":[{"type":"service:web_search","parameters":{}}]}],
 "route":"fallback","cache_control":{"type":"ephemeral","ttl":"1h"},"debug":{"echo_upstream_body":true},"trace":{"id":"t"},
 "stop_server_tools_when":[{"type":"step_count_is","step_count":3},{"type":"max_cost","max_cost_in_dollars":0.5}],
 "some_future_openai_field":{"x":1}
}`

func TestChatAccepts(t *testing.T) {
	for name, body := range map[string]string{
		"minimal":              base + `}`,
		"maximal":              maximal,
		"models only":          `{"models":["a/b"],"messages":[{"role":"user","content":"x"}]}`,
		"nullable nulls":       base + `,"temperature":null,"top_p":null,"top_k":null,"stop":null,"seed":null,"provider":null,"service_tier":null,"route":null,"reasoning_effort":null}`,
		"stop string":          base + `,"stop":"END"}`,
		"tool choice strings":  base + `,"tool_choice":"required"}`,
		"server tool choice":   base + `,"tool_choice":{"type":"web_search"}}`,
		"metadata at limits":   base + `,"metadata":{` + pairs(16, 64, 512) + `}}`,
		"session id 256 chars": base + `,"session_id":"` + strings.Repeat("é", 256) + `"}`,
		"integral float":       base + `,"max_tokens":16.0}`,
		"max_price as numbers": base + `,"provider":{"max_price":{"prompt":1.5}}}`,
		"sort string":          base + `,"provider":{"sort":"throughput"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if err := Chat([]byte(body)); err != nil {
				t.Fatalf("rejected: %v", err)
			}
		})
	}
}

// pairs makes n metadata pairs with keys of klen and values of vlen characters.
func pairs(n, klen, vlen int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		k := strings.Repeat("k", klen-2) + string(rune('a'+i/26)) + string(rune('a'+i%26))
		b.WriteString(`"` + k + `":"` + strings.Repeat("v", vlen) + `"`)
	}
	return b.String()
}

func TestChatRejects(t *testing.T) {
	cases := []struct {
		name, body, field string
	}{
		// body
		{"empty", ``, "empty"},
		{"not json", `{"model":`, "not valid JSON"},
		{"array body", `[]`, "JSON object"},
		// messages (section 8: at least 1)
		{"no messages", `{"model":"a/b"}`, "messages"},
		{"empty messages", `{"model":"a/b","messages":[]}`, "messages: must have at least 1 item"},
		{"messages not array", `{"model":"a/b","messages":{}}`, "messages: must be an array"},
		{"message not object", base + `,"messages":["hi"]}`, "messages[0]: must be an object"},
		{"no role", `{"model":"a/b","messages":[{"content":"x"}]}`, "messages[0].role: required"},
		{"bad role", `{"model":"a/b","messages":[{"role":"robot","content":"x"}]}`, "messages[0].role: must be one of"},
		{"no content", `{"model":"a/b","messages":[{"role":"user"}]}`, "messages[0].content: required"},
		{"null user content", `{"model":"a/b","messages":[{"role":"user","content":null}]}`, "messages[0].content: may be null only"},
		{"numeric content", `{"model":"a/b","messages":[{"role":"user","content":5}]}`, "messages[0].content: must be a string"},
		{"part without type", `{"model":"a/b","messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages[0].content[0].type"},
		{"text part without text", `{"model":"a/b","messages":[{"role":"user","content":[{"type":"text"}]}]}`, "messages[0].content[0].text"},
		{"image part without url", `{"model":"a/b","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, "image_url.url"},
		{"tool without call id", `{"model":"a/b","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id"},
		{"bad tool call", `{"model":"a/b","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f"}}]}]}`, "tool_calls[0].function.arguments: required"},
		{"name not string", `{"model":"a/b","messages":[{"role":"user","name":1,"content":"x"}]}`, "messages[0].name"},
		// model
		{"no model", `{"messages":[{"role":"user","content":"x"}]}`, "model: required"},
		{"model without vendor", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`, "model: must be a model id"},
		{"model not string", `{"model":4,"messages":[{"role":"user","content":"x"}]}`, "model: must be a string"},
		{"bad fallback model", base + `,"models":["ok/x","bad"]}`, "models[1]"},
		// section 8 ranges
		{"temperature high", base + `,"temperature":2.01}`, "temperature: must be a number between 0 and 2"},
		{"temperature low", base + `,"temperature":-0.1}`, "temperature"},
		{"temperature string", base + `,"temperature":"1"}`, "temperature: must be a number"},
		{"top_p high", base + `,"top_p":1.5}`, "top_p: must be a number between 0 and 1"},
		{"top_k negative", base + `,"top_k":-1}`, "top_k"},
		{"top_k fraction", base + `,"top_k":1.5}`, "top_k: must be an integer"},
		{"min_p", base + `,"min_p":2}`, "min_p"},
		{"top_a", base + `,"top_a":-1}`, "top_a"},
		{"frequency_penalty", base + `,"frequency_penalty":2.5}`, "frequency_penalty: must be a number between -2 and 2"},
		{"presence_penalty", base + `,"presence_penalty":-3}`, "presence_penalty"},
		{"repetition_penalty zero", base + `,"repetition_penalty":0}`, "repetition_penalty"},
		{"logit_bias key", base + `,"logit_bias":{"abc":1}}`, "logit_bias.abc: keys must be token ids"},
		{"logit_bias value", base + `,"logit_bias":{"1":101}}`, "logit_bias.1"},
		{"logprobs", base + `,"logprobs":"yes"}`, "logprobs: must be a boolean"},
		{"top_logprobs high", base + `,"top_logprobs":21}`, "top_logprobs: must be an integer between 0 and 20"},
		{"top_logprobs negative", base + `,"top_logprobs":-1}`, "top_logprobs"},
		{"max_completion_tokens zero", base + `,"max_completion_tokens":0}`, "max_completion_tokens"},
		{"max_tokens string", base + `,"max_tokens":"16"}`, "max_tokens: must be an integer"},
		{"seed fraction", base + `,"seed":1.5}`, "seed: must be an integer"},
		{"five stops", base + `,"stop":["a","b","c","d","e"]}`, "stop: at most 4 stop sequences, got 5"},
		{"stop number", base + `,"stop":4}`, "stop: must be a string or an array"},
		{"stop item", base + `,"stop":["a",1]}`, "stop[1]"},
		{"stream", base + `,"stream":"true"}`, "stream: must be a boolean"},
		{"stream_options field", base + `,"stream_options":{"include_usage":true,"x":1}}`, "stream_options.x: unknown field"},
		// response_format
		{"format without type", base + `,"response_format":{}}`, "response_format.type: required"},
		{"format type", base + `,"response_format":{"type":"xml"}}`, "response_format.type: must be one of"},
		{"json_schema missing", base + `,"response_format":{"type":"json_schema"}}`, "response_format.json_schema: must be an object"},
		{"json_schema no schema", base + `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, "response_format.json_schema.schema: required"},
		{"grammar missing", base + `,"response_format":{"type":"grammar"}}`, "response_format.grammar"},
		// tools (section 8: function name at most 64)
		{"tool name too long", base + `,"tools":[{"type":"function","function":{"name":"` + strings.Repeat("f", 65) + `"}}]}`, "tools[0].function.name: must be 1 to 64"},
		{"tool name chars", base + `,"tools":[{"type":"function","function":{"name":"get weather"}}]}`, "tools[0].function.name"},
		{"tool type", base + `,"tools":[{"type":"retrieval","function":{"name":"f"}}]}`, "tools[0].type"},
		{"tool parameters", base + `,"tools":[{"type":"function","function":{"name":"f","parameters":"{}"}}]}`, "tools[0].function.parameters: must be an object"},
		{"tool_choice string", base + `,"tool_choice":"any"}`, "tool_choice: must be one of none, auto, required"},
		{"tool_choice unknown tool", base + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, "tool_choice.function.name"},
		{"parallel_tool_calls", base + `,"parallel_tool_calls":1}`, "parallel_tool_calls"},
		// reasoning
		{"effort value", base + `,"reasoning":{"effort":"extreme"}}`, "reasoning.effort: must be one of"},
		{"summary value", base + `,"reasoning":{"summary":"long"}}`, "reasoning.summary"},
		{"reasoning_effort value", base + `,"reasoning_effort":"huge"}`, "reasoning_effort"},
		{"effort disagreement", base + `,"reasoning_effort":"low","reasoning":{"effort":"high"}}`, "reasoning_effort: \"low\" differs from reasoning.effort"},
		// misc fields
		{"modalities", base + `,"modalities":["text","video"]}`, "modalities[1]"},
		{"image_config value", base + `,"image_config":{"x":true}}`, "image_config.x"},
		{"metadata 17 pairs", base + `,"metadata":{` + pairs(17, 4, 1) + `}}`, "metadata: at most 16 pairs"},
		{"metadata key 65", base + `,"metadata":{"` + strings.Repeat("k", 65) + `":"v"}}`, "keys are at most 64 characters"},
		{"metadata value 513", base + `,"metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`, "metadata.k: values are at most 512 characters"},
		{"metadata value type", base + `,"metadata":{"k":1}}`, "metadata.k: values must be strings"},
		{"session_id 257", base + `,"session_id":"` + strings.Repeat("s", 257) + `"}`, "session_id: at most 256 characters"},
		{"user", base + `,"user":5}`, "user: must be a string"},
		{"service_tier", base + `,"service_tier":"turbo"}`, "service_tier: must be one of"},
		{"route", base + `,"route":"cheapest"}`, "route: must be one of fallback, sort"},
		{"cache_control type", base + `,"cache_control":{"type":"persistent"}}`, "cache_control.type"},
		{"cache_control missing type", base + `,"cache_control":{"ttl":"5m"}}`, "cache_control.type: required"},
		{"debug field", base + `,"debug":{"verbose":true}}`, "debug.verbose: unknown field"},
		{"trace", base + `,"trace":"x"}`, "trace: must be an object"},
		{"stop conditions empty", base + `,"stop_server_tools_when":[]}`, "stop_server_tools_when: must have at least 1 item"},
		{"step_count", base + `,"stop_server_tools_when":[{"type":"step_count_is","step_count":0}]}`, "stop_server_tools_when[0].step_count"},
		{"max_cost", base + `,"stop_server_tools_when":[{"type":"max_cost","max_cost_in_dollars":0}]}`, "max_cost_in_dollars"},
		// provider (2.4)
		{"provider unknown", base + `,"provider":{"fastest":true}}`, "provider.fastest: unknown field"},
		{"provider not object", base + `,"provider":[]}`, "provider"},
		{"data_collection", base + `,"provider":{"data_collection":"maybe"}}`, "provider.data_collection"},
		{"order not array", base + `,"provider":{"order":"openai"}}`, "provider.order"},
		{"max_price unknown", base + `,"provider":{"max_price":{"tokens":"1"}}}`, "provider.max_price.tokens"},
		{"max_price negative", base + `,"provider":{"max_price":{"prompt":"-1"}}}`, "provider.max_price.prompt"},
		{"sort value", base + `,"provider":{"sort":"cheapest"}}`, "provider.sort"},
		{"sort partition", base + `,"provider":{"sort":{"by":"price","partition":"all"}}}`, "provider.sort.partition"},
		// plugins (2.3 and section 8)
		{"third-party plugin enabled type", base + `,"plugins":[{"id":"telepathy","enabled":1}]}`, "plugins[0].enabled"},
		{"plugin without id", base + `,"plugins":[{"enabled":true}]}`, "plugins[0].id: required"},
		{"plugin enabled type", base + `,"plugins":[{"id":"web","enabled":"no"}]}`, "plugins[0].enabled"},
		{"moderation has no enabled", base + `,"plugins":[{"id":"moderation","enabled":false}]}`, "plugins[0].enabled: unknown option"},
		{"plugin unknown option", base + `,"plugins":[{"id":"web","depth":3}]}`, "plugins[0].depth: unknown option of plugin web"},
		{"cost_quality_tradeoff high", base + `,"plugins":[{"id":"auto-router","cost_quality_tradeoff":11}]}`, "cost_quality_tradeoff: must be an integer between 0 and 10"},
		{"cost_quality_tradeoff fraction", base + `,"plugins":[{"id":"auto-router","cost_quality_tradeoff":5.5}]}`, "cost_quality_tradeoff"},
		{"min_coding_score", base + `,"plugins":[{"id":"pareto-router","min_coding_score":1.2}]}`, "min_coding_score: must be a number between 0 and 1"},
		{"price_source", base + `,"plugins":[{"id":"pareto-router","price_source":"median"}]}`, "price_source"},
		{"fusion no models", base + `,"plugins":[{"id":"fusion","analysis_models":[]}]}`, "analysis_models: must have at least 1 item"},
		{"fusion nine models", base + `,"plugins":[{"id":"fusion","analysis_models":["a/1","a/2","a/3","a/4","a/5","a/6","a/7","a/8","a/9"]}]}`, "analysis_models: at most 8 items"},
		{"fusion max_tool_calls", base + `,"plugins":[{"id":"fusion","max_tool_calls":17}]}`, "max_tool_calls: must be an integer between 1 and 16"},
		{"fusion max_tool_calls zero", base + `,"plugins":[{"id":"fusion","max_tool_calls":0}]}`, "max_tool_calls"},
		{"fusion nine tools", base + `,"plugins":[{"id":"fusion","tools":[` + strings.TrimSuffix(strings.Repeat(`{"type":"service:web_search"},`, 9), ",") + `]}]}`, "tools: at most 8 items"},
		{"fusion tool type", base + `,"plugins":[{"id":"fusion","tools":[{"parameters":{}}]}]}`, "tools[0].type: required"},
		{"fusion preset", base + `,"plugins":[{"id":"fusion","preset":"general-slow"}]}`, "preset"},
		{"web location type", base + `,"plugins":[{"id":"web","user_location":{"type":"exact"}}]}`, "user_location.type"},
		{"web max_results", base + `,"plugins":[{"id":"web","max_results":0}]}`, "max_results"},
		{"web-fetch max_uses", base + `,"plugins":[{"id":"web-fetch","max_uses":-1}]}`, "max_uses"},
		{"context-compression engine", base + `,"plugins":[{"id":"context-compression","engine":""}]}`, "engine"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Chat([]byte(tc.body))
			if err == nil {
				t.Fatalf("accepted %s", tc.body)
			}
			if err.Status != 400 || !strings.Contains(err.Message, tc.field) {
				t.Fatalf("got %d %q, want 400 mentioning %q", err.Status, err.Message, tc.field)
			}
		})
	}
}

func TestEmbeddings(t *testing.T) {
	ok := []string{
		`{"model":"openai/text-embedding-3-small","input":"hello"}`,
		`{"model":"a/b","input":["a","b"],"encoding_format":"base64","dimensions":256,"user":"u","provider":{"order":["x"]}}`,
		`{"model":"a/b","input":[{"content":[{"type":"text","text":"cat"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}]}`,
	}
	for _, b := range ok {
		if err := Embeddings([]byte(b)); err != nil {
			t.Errorf("%s rejected: %v", b, err)
		}
	}
	bad := []struct{ name, body, field string }{
		{"no model", `{"input":"x"}`, "model: required"},
		{"no input", `{"model":"a/b"}`, "input: required"},
		{"empty input", `{"model":"a/b","input":""}`, "input: must not be empty"},
		{"empty array", `{"model":"a/b","input":[]}`, "input: must have at least 1 item"},
		{"empty item", `{"model":"a/b","input":["a",""]}`, "input[1]: must not be empty"},
		{"tokens", `{"model":"a/b","input":[[1,2,3]]}`, "input[0]: token-id input is not supported"},
		{"number input", `{"model":"a/b","input":5}`, "input: must be a string"},
		{"too many", `{"model":"a/b","input":[` + strings.TrimSuffix(strings.Repeat(`"x",`, MaxEmbeddingInputs+1), ",") + `]}`, "at most 2048 inputs"},
		{"part type", `{"model":"a/b","input":[{"content":[{"type":"audio"}]}]}`, "input[0].content[0].type"},
		{"no parts", `{"model":"a/b","input":[{"content":[]}]}`, "input[0].content: must have at least 1 item"},
		{"image without url", `{"model":"a/b","input":[{"content":[{"type":"image_url","image_url":{"url":""}}]}]}`, "image_url.url: must not be empty"},
		{"item field", `{"model":"a/b","input":[{"content":[{"type":"text","text":"x"}],"weight":2}]}`, "input[0].weight: unknown field"},
		{"encoding", `{"model":"a/b","input":"x","encoding_format":"int8"}`, "encoding_format"},
		{"dimensions", `{"model":"a/b","input":"x","dimensions":0}`, "dimensions"},
		{"bad model", `{"model":"ada","input":"x"}`, "model: must be a model id"},
		{"provider", `{"model":"a/b","input":"x","provider":{"nope":1}}`, "provider.nope: unknown field"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			err := Embeddings([]byte(tc.body))
			if err == nil || err.Status != 400 || !strings.Contains(err.Message, tc.field) {
				t.Fatalf("got %v, want 400 mentioning %q", err, tc.field)
			}
		})
	}
}

func FuzzChat(f *testing.F) {
	f.Add([]byte(maximal))
	f.Add([]byte(base + `}`))
	f.Add([]byte(base + `,"stop":["a","b","c","d","e"]}`))
	f.Add([]byte(base + `,"plugins":[{"id":"fusion","tools":[{}]}]}`))
	f.Add([]byte(`{"model":"a/b","messages":[{"role":"tool","content":[{"type":"image_url"}]}],"metadata":{"":""}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		err := Chat(body)
		if err != nil && (err.Status != 400 || err.Message == "") {
			t.Fatalf("bad error %+v", err)
		}
	})
}

func FuzzEmbeddings(f *testing.F) {
	f.Add([]byte(`{"model":"a/b","input":"x"}`))
	f.Add([]byte(`{"model":"a/b","input":[{"content":[{"type":"text","text":"x"}]}]}`))
	f.Add([]byte(`{"model":"a/b","input":[[1]]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		err := Embeddings(body)
		if err != nil && (err.Status != 400 || err.Message == "") {
			t.Fatalf("bad error %+v", err)
		}
	})
}

func benchBody(size int) []byte {
	pad := strings.Repeat("lorem ipsum ", size/12)
	return []byte(`{"model":"openai/gpt-4o","temperature":0.7,"max_tokens":256,"provider":{"sort":"price"},"messages":[{"role":"system","content":"` + pad + `"},{"role":"user","content":"hello"}]}`)
}

func BenchmarkChat1KB(b *testing.B)  { benchChat(b, 1<<10) }
func BenchmarkChat10KB(b *testing.B) { benchChat(b, 10<<10) }

func benchChat(b *testing.B, size int) {
	body := benchBody(size)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Chat(body); err != nil {
			b.Fatal(err)
		}
	}
}
