package validate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi/chatparams"
	"github.com/switchyard/switchyard/host/agentbody"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/tidwall/gjson"
)

// base is a minimal valid chat request without its closing brace; cases
// append fields (a later duplicate of a key is validated too).
const base = `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]`

// with is base plus fields.
func with(fields string) string { return base + "," + fields + "}" }

// withModel is a minimal request whose model is the JSON value m.
func withModel(m string) string {
	return `{"model":` + m + `,"messages":[{"role":"user","content":"hi"}]}`
}

// msgs is a request whose messages array is m.
func msgs(m string) string { return `{"model":"a/b","messages":` + m + `}` }

// plug is a request whose plugins array holds the one plugin p.
func plug(p string) string { return with(`"plugins":[` + p + `]`) }

// prov is a request whose provider object is p.
func prov(p string) string { return with(`"provider":` + p) }

// repeat joins n copies of item with commas.
func repeat(item string, n int) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }

// pairs makes n metadata pairs with keys of klen and values of vlen
// characters (of the string char).
func pairs(n, klen, vlen int, char string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		k := strings.Repeat(char, klen-2) + string(rune('a'+i/26)) + string(rune('a'+i%26))
		b.WriteString(`"` + k + `":"` + strings.Repeat(char, vlen) + `"`)
	}
	return b.String()
}

// maximal uses every field of spec 2.1–2.4 with a valid value.
const maximal = `{
 "model":"openai/gpt-4o","models":["anthropic/claude-3.5-sonnet","meta-llama/llama-3-70b:free"],
 "messages":[
  {"role":"system","content":"You are a \"careful\" assistant.\nAnswer briefly."},
  {"role":"developer","content":[{"type":"text","text":"dev note","cache_control":{"type":"ephemeral"}}]},
  {"role":"user","name":"ann","content":[
    {"type":"text","text":"What is in this image and this recording?"},
    {"type":"image_url","image_url":{"url":"https://example.com/y.png","detail":"high"}},
    {"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},
    {"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,AA"}}]},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
  {"role":"tool","tool_call_id":"call_1","content":"sunny, 21 \u00b0C"},
  {"role":"assistant","content":"It is sunny.","refusal":null}
 ],
 "stream":true,"stream_options":{"include_usage":true},
 "temperature":0.7,"top_p":1,"top_k":40,"min_p":0.05,"top_a":0.1,"frequency_penalty":-2,"presence_penalty":2,
 "repetition_penalty":1.1,"logit_bias":{"50256":-100,"13":5.5},"logprobs":true,"top_logprobs":20,
 "max_completion_tokens":1000,"max_tokens":16,"seed":-7,"stop":["a","b","c","d"],
 "response_format":{"type":"json_schema","json_schema":{"name":"weather","description":"d","schema":{"type":"object","properties":{"t":{"type":"number"}}},"strict":true}},
 "tools":[{"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true},"cache_control":{"type":"ephemeral"}},
          {"type":"function","function":{"name":"search-web_2"}}],
 "tool_choice":{"type":"function","function":{"name":"get_weather"}},
 "parallel_tool_calls":false,
 "reasoning":{"effort":"high","summary":"auto","max_tokens":2048,"exclude":false,"enabled":true},"reasoning_effort":"high",
 "modalities":["text","image","audio"],"image_config":{"aspect_ratio":"16:9","n":2,"sizes":["1k"]},
 "metadata":{"team":"search","trace":"ü-1"},"user":"user-1234","session_id":"sess-1","service_tier":"flex",
 "provider":{"allow_fallbacks":false,"data_collection":"deny","enforce_distillable_text":true,"ignore":["azure"],"only":["openai","together"],"order":["openai"],
   "max_price":{"prompt":"1.5","completion":"2","request":"0","image":"0.01","audio":"1e-3"},
   "preferred_max_latency":{"p50":1,"p75":1.5,"p90":3,"p99":10},"preferred_min_throughput":50,"quantizations":["fp8","bf16","unknown"],
   "require_parameters":true,"sort":{"by":"price","partition":"none"},"zdr":true},
 "plugins":[
   {"id":"auto-router","enabled":true,"allowed_models":["openai/*","anthropic/claude-*"],"cost_quality_tradeoff":7},
   {"id":"moderation"},
   {"id":"web","engine":"native","exclude_domains":["x.com"],"include_domains":["*.gov","example.com/docs"],"max_results":5,"max_uses":2,"search_prompt":"Sources:","user_location":{"type":"approximate","city":"Oslo","country":"NO","region":"Oslo","timezone":"Europe/Oslo"}},
   {"id":"web-fetch","allowed_domains":["a.com"],"blocked_domains":["b.com"],"max_content_tokens":1000,"max_uses":3},
   {"id":"file-parser","pdf":{"engine":"pdf-text"}},
   {"id":"response-healing","enabled":false},
   {"id":"context-compression","engine":"middle-out"},
   {"id":"pareto-router","min_coding_score":0.5,"price_source":"weighted_avg"},
   {"id":"fusion","analysis_models":["openai/gpt-4o","anthropic/claude-sonnet-4"],"model":"openai/gpt-4o","preset":"general-fast","max_tool_calls":16,"tools":[{"type":"service:web_search","parameters":{"max_results":3}},{"type":"service:web_fetch"}]},
   {"id":"acme-pii-filter","enabled":true,"mode":"strict"}],
 "route":"fallback","cache_control":{"type":"ephemeral","ttl":"1h"},"debug":{"echo_upstream_body":true},"trace":{"trace_id":"t-1","generation_name":"g"},
 "stop_server_tools_when":[{"type":"step_count_is","step_count":3},{"type":"max_cost","max_cost_in_dollars":0.5},{"type":"tokens_over","tokens":1000}],
 "some_future_openai_field":{"x":1},"prediction":{"type":"content","content":"x"}
}`

func TestChatAccepts(t *testing.T) {
	cases := []struct{ name, body string }{
		{"minimal", base + `}`},
		{"maximal", maximal},
		{"models only", `{"models":["a/b"],"messages":[{"role":"user","content":"x"}]}`},
		{"model with variant", withModel(`"meta-llama/llama-3.1-8b-instruct:free"`)},
		{"every nullable field null", with(`"stream_options":null,"temperature":null,"top_p":null,"top_k":null,"min_p":null,"top_a":null,
			"frequency_penalty":null,"presence_penalty":null,"repetition_penalty":null,"logit_bias":null,"logprobs":null,"top_logprobs":null,
			"max_completion_tokens":null,"max_tokens":null,"seed":null,"stop":null,"parallel_tool_calls":null,"reasoning_effort":null,
			"reasoning":{"effort":null,"summary":null,"max_tokens":null,"exclude":null,"enabled":null},"service_tier":null,"route":null,"provider":null`)},
		{"provider fields null", prov(`{"allow_fallbacks":null,"data_collection":null,"enforce_distillable_text":null,"ignore":null,"only":null,"order":null,
			"max_price":null,"preferred_max_latency":null,"preferred_min_throughput":null,"quantizations":null,"require_parameters":null,"sort":null,"zdr":null}`)},
		{"range bounds low", with(`"temperature":0,"top_p":0,"top_k":0,"min_p":0,"top_a":0,"frequency_penalty":-2,"presence_penalty":-2,"repetition_penalty":0.0001,"top_logprobs":0,"max_tokens":1,"max_completion_tokens":1,"logit_bias":{"0":-100}`)},
		{"range bounds high", with(`"temperature":2,"top_p":1,"min_p":1,"top_a":1,"frequency_penalty":2,"presence_penalty":2,"repetition_penalty":2,"top_logprobs":20,"logit_bias":{"100257":100}`)},
		{"integral floats", with(`"max_tokens":16.0,"top_k":1e2,"seed":-3.0`)},
		{"seed 64-bit bounds", with(`"seed":-9223372036854775808`)},
		{"stop string", with(`"stop":"END"`)},
		{"stop empty array", with(`"stop":[]`)},
		{"tool choice none", with(`"tool_choice":"none"`)},
		{"tool choice auto", with(`"tool_choice":"auto"`)},
		{"tool choice required", with(`"tool_choice":"required"`)},
		{"server tool choice", with(`"tool_choice":{"type":"web_search","search_context_size":"low"}`)},
		{"server tools mixed with a function", with(`"tools":[{"type":"service:web_search","parameters":{"max_results":3}},{"type":"service:datetime"},{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"service:datetime"},"max_tool_calls":30`)},
		{"every stop condition", with(`"stop_server_tools_when":[{"type":"step_count_is","step_count":2},{"type":"max_cost","max_cost_in_dollars":0.01},{"type":"has_tool_call","tool_name":"web_search"},{"type":"max_tokens_used","max_tokens":5000},{"type":"finish_reason_is","reason":"length"}],"max_tool_calls":null`)},
		{"named choice without tools", with(`"tool_choice":{"type":"function","function":{"name":"f"}}`)},
		{"response formats", with(`"response_format":{"type":"text"}`)},
		{"json_object", with(`"response_format":{"type":"json_object"}`)},
		{"grammar", with(`"response_format":{"type":"grammar","grammar":"root ::= \"a\""}`)},
		{"python", with(`"response_format":{"type":"python"}`)},
		{"metadata at limits", with(`"metadata":{` + pairs(16, 64, 512, "k") + `}`)},
		{"metadata limits count characters", with(`"metadata":{` + pairs(16, 64, 512, "é") + `}`)},
		{"metadata empty", with(`"metadata":{}`)},
		{"session id 256 characters", with(`"session_id":"` + strings.Repeat("é", 256) + `"`)},
		{"session id escapes count once", with(`"session_id":"` + strings.Repeat(`\u00e9`, 256) + `"`)},
		{"escaped enum value", msgs(`[{"role":"us\u0065r","content":"x"}]`)},
		{"escaped key", `{"mod\u0065l":"a/b","messages":[{"role":"user","content":"x"}]}`},
		{"assistant null content", msgs(`[{"role":"assistant","content":null}]`)},
		{"assistant tool calls without content", msgs(`[{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]}]`)},
		{"empty content string", msgs(`[{"role":"user","content":""}]`)},
		{"empty content parts", msgs(`[{"role":"user","content":[]}]`)},
		{"message extra fields", msgs(`[{"role":"assistant","content":"x","reasoning":"r","reasoning_details":[]}]`)},
		{"max_price numbers", prov(`{"max_price":{"prompt":1.5,"completion":0,"request":null}}`)},
		{"max_price decimal forms", prov(`{"max_price":{"prompt":".5","completion":"2.","request":"1E+2","image":" 0.25 "}}`)},
		{"sort strings", prov(`{"sort":"throughput"}`)},
		{"sort latency object", prov(`{"sort":{"by":"latency"}}`)},
		{"sort partition model", prov(`{"sort":{"by":"throughput","partition":"model"}}`)},
		{"latency number", prov(`{"preferred_max_latency":0.5,"preferred_min_throughput":{"p90":20,"p99":null}}`)},
		{"quantizations any case", prov(`{"quantizations":["FP8","int4","fp4","fp6","int8","fp16","fp32"]}`)},
		{"empty plugins", with(`"plugins":[]`)},
		{"third-party plugin", plug(`{"id":"acme-plugin","anything":[1,2]}`)},
		{"fusion empty tools", plug(`{"id":"fusion","tools":[]}`)},
		{"fusion eight models", plug(`{"id":"fusion","analysis_models":[` + repeat(`"a/b"`, 8) + `]}`)},
		{"auto-router bounds", plug(`{"id":"auto-router","cost_quality_tradeoff":0},{"id":"auto-router","cost_quality_tradeoff":10}`)},
		{"pareto bounds", plug(`{"id":"pareto-router","min_coding_score":0},{"id":"pareto-router","min_coding_score":1,"price_source":"prompt"}`)},
		{"reasoning effort values", with(`"reasoning_effort":"minimal","reasoning":{"effort":"minimal"}`)},
		{"reasoning_effort alone", with(`"reasoning_effort":"xhigh"`)},
		{"reasoning effort null vs value", with(`"reasoning_effort":null,"reasoning":{"effort":"low"}`)},
		{"route sort", with(`"route":"sort"`)},
		{"cache_control 5m", with(`"cache_control":{"type":"ephemeral","ttl":"5m"}`)},
		{"unknown top-level fields", with(`"n":1,"audio":{"voice":"alloy"},"store":true,"verbosity":"low"`)},
		{"whitespace around", "\n\t " + base + "} \n"},
		{"image_config empty", with(`"image_config":{}`)},
		// What OpenAI's SDKs and common clients send (issue 9): null for
		// absent, legacy function messages, custom tools, vendor-less models.
		{"client nulls", with(`"stream":null,"metadata":null,"modalities":null,"response_format":null,"tools":null,"tool_choice":null,"user":null`)},
		{"null function fields", with(`"tools":[{"type":"function","function":{"name":"f","description":null,"parameters":null,"strict":null}}]`)},
		{"null message name", msgs(`[{"role":"user","content":"x","name":null}]`)},
		{"include_obfuscation", with(`"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false}`)},
		{"custom tools", with(`"tools":[{"type":"custom","custom":{"name":"code_exec","description":"runs code","format":{"type":"grammar","grammar":{"definition":"start: /.+/","syntax":"lark"}}}},{"type":"custom","custom":{"name":"free","format":{"type":"text"}}}],"tool_choice":{"type":"custom","custom":{"name":"free"}}`)},
		{"legacy function call", msgs(`[{"role":"user","content":"x"},{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}},{"role":"function","name":"f","content":"42"}]`)},
		{"function message null content", msgs(`[{"role":"function","name":"f","content":null}]`)},
		{"model without vendor", withModel(`"gpt-4o-mini"`)},
		{"models without vendor", with(`"models":["gpt-4o","a/b"]`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !gjson.Valid(tc.body) {
				t.Fatalf("test body is not JSON: %s", tc.body)
			}
			if _, err := chatWithPlugins([]byte(tc.body)); err != nil {
				t.Fatalf("rejected: %v", err)
			}
		})
	}
}

type reject struct {
	name, body string
	path       string // the message starts with path + ": " ("" for the whole body)
	contains   string // and contains this
}

func TestChatRejects(t *testing.T) {
	long := strings.Repeat("f", 65)
	cases := []reject{
		// The body.
		{"empty body", ``, "", "request body is empty"},
		{"blank body", " \r\n\t", "", "request body is empty"},
		{"malformed", `{"model":`, "", "request body is not valid JSON"},
		{"trailing garbage", base + `} {}`, "", "request body is not valid JSON"},
		{"single quotes", `{'model':'a/b'}`, "", "not valid JSON"},
		{"array body", `[]`, "", "must be a JSON object, got an array"},
		{"string body", `"hi"`, "", "must be a JSON object, got a string"},
		{"null body", `null`, "", "must be a JSON object, got null"},
		{"too deep", with(`"trace":{"x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`), "", "deeper than 128 levels"},
		{"too deep and invalid", strings.Repeat("[", 1<<20), "", "deeper than 128"},

		// messages (section 8: at least 1 item).
		{"messages missing", `{"model":"a/b"}`, "messages", "required"},
		{"messages empty", msgs(`[]`), "messages", "must have at least 1 item"},
		{"messages object", msgs(`{}`), "messages", "must be an array, got an object"},
		{"messages null", msgs(`null`), "messages", "must be an array, got null"},
		{"message string", msgs(`["hi"]`), "messages[0]", "must be an object, got a string"},
		{"role missing", msgs(`[{"content":"x"}]`), "messages[0].role", "required"},
		{"role unknown", msgs(`[{"role":"user","content":"x"},{"role":"robot","content":"x"}]`), "messages[1].role", "must be one of system, user, developer, assistant, tool"},
		{"role number", msgs(`[{"role":1,"content":"x"}]`), "messages[0].role", "must be one of"},
		{"user content missing", msgs(`[{"role":"user"}]`), "messages[0].content", "required"},
		{"system content missing", msgs(`[{"role":"system"}]`), "messages[0].content", "required"},
		{"developer content missing", msgs(`[{"role":"developer"}]`), "messages[0].content", "required"},
		{"assistant content missing", msgs(`[{"role":"assistant"}]`), "messages[0].content", "required in an assistant message without tool_calls"},
		{"tool content missing", msgs(`[{"role":"tool","tool_call_id":"1"}]`), "messages[0].content", "required"},
		{"user content null", msgs(`[{"role":"user","content":null}]`), "messages[0].content", "may be null only in an assistant message"},
		{"tool content null", msgs(`[{"role":"tool","tool_call_id":"1","content":null}]`), "messages[0].content", "may be null only"},
		{"content number", msgs(`[{"role":"user","content":5}]`), "messages[0].content", "must be a string or an array of content parts, got a number"},
		{"content object", msgs(`[{"role":"user","content":{"text":"x"}}]`), "messages[0].content", "got an object"},
		{"part string", msgs(`[{"role":"user","content":["x"]}]`), "messages[0].content[0]", "must be an object"},
		{"part without type", msgs(`[{"role":"user","content":[{"text":"x"}]}]`), "messages[0].content[0].type", "required"},
		{"part type number", msgs(`[{"role":"user","content":[{"type":1}]}]`), "messages[0].content[0].type", "required: a string"},
		{"text part without text", msgs(`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text"}]}]`), "messages[0].content[1].text", "required"},
		{"text part text number", msgs(`[{"role":"user","content":[{"type":"text","text":1}]}]`), "messages[0].content[0].text", "must be a string"},
		{"image part without image_url", msgs(`[{"role":"user","content":[{"type":"image_url"}]}]`), "messages[0].content[0].image_url", "required"},
		{"image_url string", msgs(`[{"role":"user","content":[{"type":"image_url","image_url":"https://x"}]}]`), "messages[0].content[0].image_url", "must be an object"},
		{"image_url without url", msgs(`[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]`), "messages[0].content[0].image_url.url", "required"},
		{"image_url url number", msgs(`[{"role":"user","content":[{"type":"image_url","image_url":{"url":3}}]}]`), "messages[0].content[0].image_url.url", "must be a non-empty string"},
		{"input_audio part not object", msgs(`[{"role":"user","content":[{"type":"input_audio"},5]}]`), "messages[0].content[1]", "must be an object"},
		{"tool without tool_call_id", msgs(`[{"role":"tool","content":"x"}]`), "messages[0].tool_call_id", "required in a tool message"},
		{"tool_call_id number", msgs(`[{"role":"tool","tool_call_id":7,"content":"x"}]`), "messages[0].tool_call_id", "must be a non-empty string"},
		{"tool_call_id empty", msgs(`[{"role":"tool","tool_call_id":"","content":"x"}]`), "messages[0].tool_call_id", "non-empty"},
		{"name number", msgs(`[{"role":"user","name":1,"content":"x"}]`), "messages[0].name", "must be a string"},
		{"assistant empty tool_calls, no content", msgs(`[{"role":"assistant","tool_calls":[]}]`), "messages[0].content", "required in an assistant message without tool_calls"},
		{"tool_calls object", msgs(`[{"role":"assistant","content":null,"tool_calls":{}}]`), "messages[0].tool_calls", "must be an array"},
		{"tool call string", msgs(`[{"role":"assistant","tool_calls":["f"]}]`), "messages[0].tool_calls[0]", "must be an object"},
		{"tool call id missing", msgs(`[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]`), "messages[0].tool_calls[0].id", "required"},
		{"tool call id number", msgs(`[{"role":"assistant","tool_calls":[{"id":1,"type":"function","function":{"name":"f","arguments":"{}"}}]}]`), "messages[0].tool_calls[0].id", "must be a string"},
		{"tool call type", msgs(`[{"role":"assistant","tool_calls":[{"id":"1","type":"retrieval","function":{"name":"f","arguments":"{}"}}]}]`), "messages[0].tool_calls[0].type", "must be one of function"},
		{"tool call function missing", msgs(`[{"role":"assistant","tool_calls":[{"id":"1","type":"function"}]}]`), "messages[0].tool_calls[0].function", "required"},
		{"tool call name missing", msgs(`[{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"arguments":"{}"}}]}]`), "messages[0].tool_calls[0].function.name", "required"},
		{"tool call arguments missing", msgs(`[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f"}}]}]`), "messages[0].tool_calls[0].function.arguments", "required"},
		{"tool call arguments object", msgs(`[{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":{}}}]}]`), "messages[0].tool_calls[0].function.arguments", "must be a string (the arguments as JSON text)"},

		// model and models.
		{"model and models missing", `{"messages":[{"role":"user","content":"x"}]}`, "model", "required (or give models)"},
		{"models empty, no model", `{"models":[],"messages":[{"role":"user","content":"x"}]}`, "model", "required (or give models)"},
		{"model with a space", withModel(`"gpt 4o"`), "model", "must be a model id of the form <vendor>/<model_name>"},
		{"model empty vendor", withModel(`"/gpt-4o"`), "model", "<vendor>/<model_name>"},
		{"model empty name", withModel(`"openai/"`), "model", "<vendor>/<model_name>"},
		{"model two slashes", withModel(`"openai/gpt/4o"`), "model", "<vendor>/<model_name>"},
		{"model empty variant", withModel(`"openai/gpt-4o:"`), "model", "<vendor>/<model_name>"},
		{"model space", withModel(`"openai/gpt 4o"`), "model", "<vendor>/<model_name>"},
		{"model empty", withModel(`""`), "model", "<vendor>/<model_name>"},
		{"model number", withModel(`4`), "model", "must be a model id string"},
		{"model null", withModel(`null`), "model", "got null"},
		{"models string", with(`"models":"a/b"`), "models", "must be an array"},
		{"models bad item", with(`"models":["ok/x","a/b/c"]`), "models[1]", "<vendor>/<model_name>"},
		{"models item number", with(`"models":[1]`), "models[0]", "must be a model id string"},

		// stream and stream_options.
		{"stream string", with(`"stream":"true"`), "stream", "must be a boolean, got a string"},
		{"stream_options obfuscation", with(`"stream_options":{"include_obfuscation":"no"}`), "stream_options.include_obfuscation", "must be a boolean"},
		{"custom tool without name", with(`"tools":[{"type":"custom","custom":{"description":"d"}}]`), "tools[0].custom.name", "required"},
		{"custom tool without custom", with(`"tools":[{"type":"custom"}]`), "tools[0].custom", "required"},
		{"custom tool grammar syntax", with(`"tools":[{"type":"custom","custom":{"name":"c","format":{"type":"grammar","grammar":{"definition":"x","syntax":"ebnf"}}}}]`), "tools[0].custom.format.grammar.syntax", "must be one of lark, regex"},
		{"tool type unknown", with(`"tools":[{"type":"mcp","function":{"name":"f"}}]`), "tools[0].type", "must be one of function, custom"},
		{"function message without name", msgs(`[{"role":"function","content":"42"}]`), "messages[0].name", "required in a function message"},
		{"function message content object", msgs(`[{"role":"function","name":"f","content":{}}]`), "messages[0].content", "must be a string or null"},
		{"function_call without arguments", msgs(`[{"role":"assistant","content":null,"function_call":{"name":"f"}}]`), "messages[0].function_call.arguments", "required"},
		{"stream_options string", with(`"stream_options":"usage"`), "stream_options", "must be an object"},
		{"include_usage string", with(`"stream_options":{"include_usage":"yes"}`), "stream_options.include_usage", "must be a boolean"},
		{"stream_options unknown", with(`"stream_options":{"include_usage":true,"x":1}`), "stream_options.x", "unknown field"},

		// Sampling ranges (section 8 rows: temperature, top_p, penalties, top_logprobs).
		{"temperature high", with(`"temperature":3.5`), "temperature", "must be a number between 0 and 2, got 3.5"},
		{"temperature just high", with(`"temperature":2.01`), "temperature", "between 0 and 2"},
		{"temperature low", with(`"temperature":-0.1`), "temperature", "got -0.1"},
		{"temperature string", with(`"temperature":"1"`), "temperature", "got a string"},
		{"temperature huge", with(`"temperature":1e400`), "temperature", "between 0 and 2"},
		{"top_p high", with(`"top_p":1.5`), "top_p", "must be a number between 0 and 1"},
		{"top_p low", with(`"top_p":-0.5`), "top_p", "between 0 and 1"},
		{"top_k negative", with(`"top_k":-1`), "top_k", "must be an integer of at least 0"},
		{"top_k fraction", with(`"top_k":1.5`), "top_k", "must be an integer of at least 0, got 1.5"},
		{"top_k string", with(`"top_k":"5"`), "top_k", "got a string"},
		{"min_p high", with(`"min_p":1.1`), "min_p", "between 0 and 1"},
		{"min_p low", with(`"min_p":-0.1`), "min_p", "between 0 and 1"},
		{"top_a high", with(`"top_a":2`), "top_a", "between 0 and 1"},
		{"top_a low", with(`"top_a":-1`), "top_a", "between 0 and 1"},
		{"frequency_penalty high", with(`"frequency_penalty":2.5`), "frequency_penalty", "must be a number between -2 and 2"},
		{"frequency_penalty low", with(`"frequency_penalty":-2.1`), "frequency_penalty", "between -2 and 2"},
		{"presence_penalty low", with(`"presence_penalty":-3`), "presence_penalty", "between -2 and 2"},
		{"presence_penalty high", with(`"presence_penalty":2.0001`), "presence_penalty", "between -2 and 2"},
		{"repetition_penalty zero", with(`"repetition_penalty":0`), "repetition_penalty", "greater than 0 and at most 2"},
		{"repetition_penalty high", with(`"repetition_penalty":2.5`), "repetition_penalty", "greater than 0 and at most 2"},
		{"repetition_penalty string", with(`"repetition_penalty":"1"`), "repetition_penalty", "greater than 0"},
		{"logit_bias array", with(`"logit_bias":[1]`), "logit_bias", "must be an object"},
		{"logit_bias key word", with(`"logit_bias":{"abc":1}`), "logit_bias.abc", "keys must be token ids"},
		{"logit_bias key negative", with(`"logit_bias":{"-1":1}`), "logit_bias.-1", "keys must be token ids"},
		{"logit_bias value high", with(`"logit_bias":{"1":101}`), "logit_bias.1", "between -100 and 100"},
		{"logit_bias value low", with(`"logit_bias":{"1":-100.5}`), "logit_bias.1", "between -100 and 100"},
		{"logit_bias value string", with(`"logit_bias":{"1":"5"}`), "logit_bias.1", "got a string"},
		{"logprobs string", with(`"logprobs":"yes"`), "logprobs", "must be a boolean"},
		{"top_logprobs high", with(`"top_logprobs":21`), "top_logprobs", "must be an integer between 0 and 20, got 21"},
		{"top_logprobs negative", with(`"top_logprobs":-1`), "top_logprobs", "between 0 and 20"},
		{"top_logprobs fraction", with(`"top_logprobs":2.5`), "top_logprobs", "between 0 and 20, got 2.5"},
		{"max_completion_tokens zero", with(`"max_completion_tokens":0`), "max_completion_tokens", "must be an integer of at least 1"},
		{"max_completion_tokens fraction", with(`"max_completion_tokens":10.5`), "max_completion_tokens", "integer"},
		{"max_tokens string", with(`"max_tokens":"16"`), "max_tokens", "must be an integer of at least 1, got a string"},
		{"max_tokens zero", with(`"max_tokens":0`), "max_tokens", "at least 1"},
		{"max_tokens negative", with(`"max_tokens":-16`), "max_tokens", "at least 1"},
		{"max_tokens beyond 64 bits", with(`"max_tokens":99999999999999999999`), "max_tokens", "integer"},
		{"seed fraction", with(`"seed":1.5`), "seed", "must be an integer"},
		{"seed string", with(`"seed":"1"`), "seed", "must be an integer"},
		{"seed beyond 64 bits", with(`"seed":1e30`), "seed", "must be an integer (64-bit)"},
		{"stop five", with(`"stop":["a","b","c","d","e"]`), "stop", "at most 4 stop sequences, got 5"},
		{"stop number", with(`"stop":4`), "stop", "must be a string, an array of at most 4 strings, or null"},
		{"stop object", with(`"stop":{}`), "stop", "got an object"},
		{"stop item number", with(`"stop":["a",1]`), "stop[1]", "must be a string"},

		// response_format (2.1.3).
		{"format string", with(`"response_format":"json"`), "response_format", "must be an object"},
		{"format without type", with(`"response_format":{}`), "response_format.type", "required"},
		{"format unknown type", with(`"response_format":{"type":"xml"}`), "response_format.type", "must be one of text, json_object, json_schema, grammar, python"},
		{"json_schema missing", with(`"response_format":{"type":"json_schema"}`), "response_format.json_schema", "required when type is json_schema"},
		{"json_schema string", with(`"response_format":{"type":"json_schema","json_schema":"x"}`), "response_format.json_schema", "must be an object"},
		{"json_schema without name", with(`"response_format":{"type":"json_schema","json_schema":{"schema":{}}}`), "response_format.json_schema.name", "required"},
		{"json_schema name number", with(`"response_format":{"type":"json_schema","json_schema":{"name":1,"schema":{}}}`), "response_format.json_schema.name", "non-empty string"},
		{"json_schema without schema", with(`"response_format":{"type":"json_schema","json_schema":{"name":"x"}}`), "response_format.json_schema.schema", "required"},
		{"json_schema schema string", with(`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":"{}"}}`), "response_format.json_schema.schema", "must be an object"},
		{"json_schema strict string", with(`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{},"strict":"yes"}}`), "response_format.json_schema.strict", "boolean"},
		{"grammar missing", with(`"response_format":{"type":"grammar"}`), "response_format.grammar", "required when type is grammar"},
		{"grammar number", with(`"response_format":{"type":"grammar","grammar":1}`), "response_format.grammar", "must be a string"},

		// tools (2.1.2; section 8: function name at most 64 characters).
		{"tools object", with(`"tools":{}`), "tools", "must be an array"},
		{"tool string", with(`"tools":["f"]`), "tools[0]", "must be an object"},
		{"tool type missing", with(`"tools":[{"function":{"name":"f"}}]`), "tools[0].type", "required"},
		{"tool type", with(`"tools":[{"type":"retrieval","function":{"name":"f"}}]`), "tools[0].type", "must be one of function"},
		{"tool function missing", with(`"tools":[{"type":"function"}]`), "tools[0].function", "required"},
		{"tool name missing", with(`"tools":[{"type":"function","function":{}}]`), "tools[0].function.name", "required"},
		{"tool name 65", with(`"tools":[{"type":"function","function":{"name":"` + long + `"}}]`), "tools[0].function.name", "must be 1 to 64 letters, digits, underscores or dashes"},
		{"tool name space", with(`"tools":[{"type":"function","function":{"name":"get weather"}}]`), "tools[0].function.name", "1 to 64"},
		{"tool name dot", with(`"tools":[{"type":"function","function":{"name":"a.b"}}]`), "tools[0].function.name", "1 to 64"},
		{"tool name empty", with(`"tools":[{"type":"function","function":{"name":""}}]`), "tools[0].function.name", "1 to 64"},
		{"tool name number", with(`"tools":[{"type":"function","function":{"name":5}}]`), "tools[0].function.name", "got a number"},
		{"tool description", with(`"tools":[{"type":"function","function":{"name":"f","description":1}}]`), "tools[0].function.description", "must be a string"},
		{"tool parameters string", with(`"tools":[{"type":"function","function":{"name":"f","parameters":"{}"}}]`), "tools[0].function.parameters", "must be an object"},
		{"tool strict string", with(`"tools":[{"type":"function","function":{"name":"f","strict":"yes"}}]`), "tools[0].function.strict", "must be a boolean"},
		{"tool cache_control string", with(`"tools":[{"type":"function","function":{"name":"f"},"cache_control":"ephemeral"}]`), "tools[0].cache_control", "must be an object"},
		{"tool_choice string", with(`"tool_choice":"any"`), "tool_choice", "must be one of none, auto, required"},
		{"tool_choice number", with(`"tool_choice":5`), "tool_choice", "must be none, auto, required or a tool choice object"},
		{"tool_choice without type", with(`"tool_choice":{}`), "tool_choice.type", "required"},
		{"tool_choice function missing", with(`"tool_choice":{"type":"function"}`), "tool_choice.function", "required"},
		{"tool_choice name missing", with(`"tool_choice":{"type":"function","function":{}}`), "tool_choice.function.name", "required"},
		{"tool_choice name empty", with(`"tool_choice":{"type":"function","function":{"name":""}}`), "tool_choice.function.name", "must not be empty"},
		{"tool_choice unknown tool", with(`"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}`), "tool_choice.function.name", `"g" is not the name of one of the request's tools`},
		{"tool_choice before tools", with(`"tool_choice":{"type":"function","function":{"name":"g"}},"tools":[]`), "tool_choice.function.name", "is not the name"},
		{"parallel_tool_calls", with(`"parallel_tool_calls":1`), "parallel_tool_calls", "must be a boolean"},

		// reasoning.
		{"reasoning string", with(`"reasoning":"high"`), "reasoning", "must be an object"},
		{"effort value", with(`"reasoning":{"effort":"extreme"}`), "reasoning.effort", "must be one of max, xhigh, high, medium, low, minimal, none"},
		{"summary value", with(`"reasoning":{"summary":"long"}`), "reasoning.summary", "must be one of auto, concise, detailed"},
		{"reasoning max_tokens", with(`"reasoning":{"max_tokens":0}`), "reasoning.max_tokens", "at least 1"},
		{"reasoning exclude", with(`"reasoning":{"exclude":"y"}`), "reasoning.exclude", "boolean"},
		{"reasoning enabled", with(`"reasoning":{"enabled":1}`), "reasoning.enabled", "boolean"},
		{"reasoning unknown", with(`"reasoning":{"budget":1}`), "reasoning.budget", "unknown field"},
		{"reasoning_effort value", with(`"reasoning_effort":"huge"`), "reasoning_effort", "must be one of max, xhigh"},
		{"reasoning_effort number", with(`"reasoning_effort":3`), "reasoning_effort", "must be one of"},
		{"efforts differ", with(`"reasoning_effort":"low","reasoning":{"effort":"high"}`), "reasoning_effort", `"low" differs from reasoning.effort "high"`},
		{"duplicate top-level key", with(`"temperature":1,"temperature":1`), "temperature", "duplicate field"},
		{"duplicate model", with(`"model":"openai/gpt-4o"`), "model", "duplicate field"},
		{"duplicate role", msgs(`[{"role":"user","role":"system","content":"x"}]`), "messages[0].role", "duplicate field"},
		{"duplicate part type", msgs(`[{"role":"user","content":[{"type":"text","text":"x","type":"image_url"}]}]`), "messages[0].content[0].type", "duplicate field"},
		{"duplicate tool call arguments", msgs(`[{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}","arguments":"{}"}}]}]`), "messages[0].tool_calls[0].function.arguments", "duplicate field"},
		{"duplicate provider field", prov(`{"zdr":true,"zdr":false}`), "provider.zdr", "duplicate field"},
		{"duplicate metadata key", with(`"metadata":{"a":"1","a":"2"}`), "metadata.a", "duplicate field"},
		{"efforts differ other order", with(`"reasoning":{"effort":"high"},"reasoning_effort":"none"`), "reasoning_effort", "differs"},

		// modalities, image_config.
		{"modalities string", with(`"modalities":"text"`), "modalities", "must be an array"},
		{"modality unknown", with(`"modalities":["text","video"]`), "modalities[1]", "must be one of text, image, audio"},
		{"image_config array", with(`"image_config":[]`), "image_config", "must be an object"},
		{"image_config bool", with(`"image_config":{"x":true}`), "image_config.x", "must be a string, a number or an array, got a boolean"},
		{"image_config object", with(`"image_config":{"size":{"w":1}}`), "image_config.size", "got an object"},
		{"image_config null", with(`"image_config":{"size":null}`), "image_config.size", "got null"},

		// metadata (section 8: 16 pairs, keys 64, values 512).
		{"metadata string", with(`"metadata":"x"`), "metadata", "must be an object"},
		{"metadata 17 pairs", with(`"metadata":{` + pairs(17, 4, 1, "k") + `}`), "metadata", "at most 16 pairs, got 17"},
		{"metadata key 65", with(`"metadata":{"` + strings.Repeat("k", 65) + `":"v"}`), "metadata." + strings.Repeat("k", 64) + "…", "keys are at most 64 characters, got 65"},
		{"metadata key 65 characters", with(`"metadata":{"` + strings.Repeat("é", 65) + `":"v"}`), "metadata." + strings.Repeat("é", 32) + "…", "keys are at most 64 characters, got 65"},
		{"metadata empty key", with(`"metadata":{"":"v"}`), "metadata", "keys must not be empty"},
		{"metadata value 513", with(`"metadata":{"k":"` + strings.Repeat("v", 513) + `"}`), "metadata.k", "values are at most 512 characters, got 513"},
		{"metadata value 513 characters", with(`"metadata":{"k":"` + strings.Repeat("ü", 513) + `"}`), "metadata.k", "got 513"},
		{"metadata value number", with(`"metadata":{"k":1}`), "metadata.k", "values must be strings, got a number"},
		{"metadata value null", with(`"metadata":{"k":null}`), "metadata.k", "got null"},

		// user, session_id (section 8: 256), service_tier.
		{"user number", with(`"user":5`), "user", "must be a string"},
		{"session_id 257", with(`"session_id":"` + strings.Repeat("s", 257) + `"`), "session_id", "at most 256 characters, got 257"},
		{"session_id 257 characters", with(`"session_id":"` + strings.Repeat("ß", 257) + `"`), "session_id", "got 257"},
		{"session_id number", with(`"session_id":1`), "session_id", "must be a string"},
		{"service_tier", with(`"service_tier":"turbo"`), "service_tier", "must be one of auto, default, flex, priority, scale"},

		// provider (2.4): no extra properties.
		{"provider unknown", prov(`{"fastest":true}`), "provider.fastest", "unknown field"},
		{"provider unknown null", prov(`{"foo":null}`), "provider.foo", "unknown field"},
		{"provider array", prov(`[]`), "provider", "must be an object"},
		{"provider string", prov(`"openai"`), "provider", "must be an object"},
		{"allow_fallbacks", prov(`{"allow_fallbacks":"no"}`), "provider.allow_fallbacks", "must be a boolean"},
		{"data_collection", prov(`{"data_collection":"maybe"}`), "provider.data_collection", "must be one of allow, deny"},
		{"enforce_distillable_text", prov(`{"enforce_distillable_text":1}`), "provider.enforce_distillable_text", "boolean"},
		{"ignore string", prov(`{"ignore":"azure"}`), "provider.ignore", "must be an array"},
		{"only item number", prov(`{"only":[1]}`), "provider.only[0]", "provider slug"},
		{"order item empty", prov(`{"order":["openai",""]}`), "provider.order[1]", "provider slug"},
		{"order string", prov(`{"order":"openai"}`), "provider.order", "must be an array"},
		{"max_price string", prov(`{"max_price":"1"}`), "provider.max_price", "must be an object"},
		{"max_price unknown", prov(`{"max_price":{"tokens":"1"}}`), "provider.max_price.tokens", "unknown field"},
		{"max_price negative", prov(`{"max_price":{"prompt":"-1"}}`), "provider.max_price.prompt", "non-negative decimal"},
		{"max_price word", prov(`{"max_price":{"completion":"cheap"}}`), "provider.max_price.completion", "non-negative decimal"},
		{"max_price two dots", prov(`{"max_price":{"request":"1.2.3"}}`), "provider.max_price.request", "non-negative decimal"},
		{"max_price empty", prov(`{"max_price":{"image":""}}`), "provider.max_price.image", "non-negative decimal"},
		{"max_price infinite", prov(`{"max_price":{"audio":"1e999"}}`), "provider.max_price.audio", "non-negative decimal"},
		{"max_price negative number", prov(`{"max_price":{"prompt":-0.5}}`), "provider.max_price.prompt", "non-negative decimal"},
		{"max_price bool", prov(`{"max_price":{"prompt":true}}`), "provider.max_price.prompt", "non-negative decimal"},
		{"latency negative", prov(`{"preferred_max_latency":-1}`), "provider.preferred_max_latency", "must be a number at least 0"},
		{"latency string", prov(`{"preferred_max_latency":"fast"}`), "provider.preferred_max_latency", "must be a number (the p50 threshold) or an object"},
		{"latency unknown percentile", prov(`{"preferred_max_latency":{"p95":1}}`), "provider.preferred_max_latency.p95", "unknown field"},
		{"latency p50 negative", prov(`{"preferred_max_latency":{"p50":-1}}`), "provider.preferred_max_latency.p50", "at least 0"},
		{"throughput p90 string", prov(`{"preferred_min_throughput":{"p90":"1"}}`), "provider.preferred_min_throughput.p90", "got a string"},
		{"throughput array", prov(`{"preferred_min_throughput":[1]}`), "provider.preferred_min_throughput", "got an array"},
		{"quantization unknown", prov(`{"quantizations":["fp8","fp7"]}`), "provider.quantizations[1]", "must be one of int4, int8, fp4, fp6, fp8, fp16, bf16, fp32, unknown"},
		{"quantizations string", prov(`{"quantizations":"fp8"}`), "provider.quantizations", "must be an array"},
		{"require_parameters", prov(`{"require_parameters":"true"}`), "provider.require_parameters", "boolean"},
		{"sort unknown", prov(`{"sort":"cheapest"}`), "provider.sort", "must be one of price, throughput, latency"},
		{"sort number", prov(`{"sort":5}`), "provider.sort", "or an object"},
		{"sort by unknown", prov(`{"sort":{"by":"fast"}}`), "provider.sort.by", "must be one of price, throughput, latency"},
		{"sort by missing", prov(`{"sort":{"partition":"model"}}`), "provider.sort.by", "required"},
		{"sort partition", prov(`{"sort":{"by":"price","partition":"all"}}`), "provider.sort.partition", "must be one of model, none"},
		{"sort unknown field", prov(`{"sort":{"by":"price","order":"asc"}}`), "provider.sort.order", "unknown field"},
		{"zdr", prov(`{"zdr":"yes"}`), "provider.zdr", "boolean"},

		// plugins (2.3; section 8 rows for auto-router, pareto-router, fusion).
		{"plugins object", with(`"plugins":{}`), "plugins", "must be an array"},
		{"plugin string", with(`"plugins":["web"]`), "plugins[0]", "must be an object"},
		{"plugin without id", plug(`{"enabled":true}`), "plugins[0].id", "required"},
		{"plugin id number", plug(`{"id":1}`), "plugins[0].id", "got a number"},
		{"plugin id empty", plug(`{"id":""}`), "plugins[0].id", "required"},
		{"third-party enabled type", with(`"plugins":[{"id":"web"},{"id":"acme","enabled":1}]`), "plugins[1].enabled", "must be a boolean"},
		{"plugin enabled type", plug(`{"id":"web","enabled":"no"}`), "plugins[0].enabled", "must be a boolean"},
		{"moderation has no enabled", plug(`{"id":"moderation","enabled":false}`), "plugins[0].enabled", "moderation has no options and cannot be disabled"},
		{"moderation option", plug(`{"id":"moderation","level":"high"}`), "plugins[0].level", "unknown option of plugin moderation"},
		{"response-healing option", plug(`{"id":"response-healing","strict":true}`), "plugins[0].strict", "unknown option of plugin response-healing"},
		{"auto-router tradeoff 11", plug(`{"id":"auto-router","cost_quality_tradeoff":11}`), "plugins[0].cost_quality_tradeoff", "must be an integer between 0 and 10, got 11"},
		{"auto-router tradeoff negative", plug(`{"id":"auto-router","cost_quality_tradeoff":-1}`), "plugins[0].cost_quality_tradeoff", "between 0 and 10"},
		{"auto-router tradeoff fraction", plug(`{"id":"auto-router","cost_quality_tradeoff":5.5}`), "plugins[0].cost_quality_tradeoff", "integer"},
		{"auto-router allowed_models string", plug(`{"id":"auto-router","allowed_models":"openai/*"}`), "plugins[0].allowed_models", "must be an array"},
		{"auto-router allowed_models item", plug(`{"id":"auto-router","allowed_models":[1]}`), "plugins[0].allowed_models[0]", "must be a string"},
		{"auto-router unknown", plug(`{"id":"auto-router","models":[]}`), "plugins[0].models", "unknown option of plugin auto-router"},
		{"web unknown", plug(`{"id":"web","depth":3}`), "plugins[0].depth", "unknown option of plugin web"},
		{"web engine", plug(`{"id":"web","engine":1}`), "plugins[0].engine", "non-empty string"},
		{"web include_domains", plug(`{"id":"web","include_domains":"a.com"}`), "plugins[0].include_domains", "must be an array"},
		{"web exclude_domains item", plug(`{"id":"web","exclude_domains":[1]}`), "plugins[0].exclude_domains[0]", "must be a string"},
		{"web max_results", plug(`{"id":"web","max_results":0}`), "plugins[0].max_results", "at least 1"},
		{"web max_uses", plug(`{"id":"web","max_uses":1.5}`), "plugins[0].max_uses", "integer"},
		{"web search_prompt", plug(`{"id":"web","search_prompt":{}}`), "plugins[0].search_prompt", "must be a string"},
		{"web location string", plug(`{"id":"web","user_location":"Oslo"}`), "plugins[0].user_location", "must be an object"},
		{"web location type", plug(`{"id":"web","user_location":{"type":"exact"}}`), "plugins[0].user_location.type", "must be one of approximate"},
		{"web location type missing", plug(`{"id":"web","user_location":{"city":"Oslo"}}`), "plugins[0].user_location.type", "required"},
		{"web location city", plug(`{"id":"web","user_location":{"type":"approximate","city":1}}`), "plugins[0].user_location.city", "must be a string"},
		{"web location unknown", plug(`{"id":"web","user_location":{"type":"approximate","zip":"0150"}}`), "plugins[0].user_location.zip", "unknown field"},
		{"web-fetch allowed_domains", plug(`{"id":"web-fetch","allowed_domains":"a.com"}`), "plugins[0].allowed_domains", "must be an array"},
		{"web-fetch blocked_domains", plug(`{"id":"web-fetch","blocked_domains":[true]}`), "plugins[0].blocked_domains[0]", "must be a string"},
		{"web-fetch max_content_tokens", plug(`{"id":"web-fetch","max_content_tokens":0}`), "plugins[0].max_content_tokens", "at least 1"},
		{"web-fetch max_uses", plug(`{"id":"web-fetch","max_uses":-1}`), "plugins[0].max_uses", "at least 1"},
		{"web-fetch unknown", plug(`{"id":"web-fetch","max_results":3}`), "plugins[0].max_results", "unknown option of plugin web-fetch"},
		{"file-parser pdf", plug(`{"id":"file-parser","pdf":"native"}`), "plugins[0].pdf", "must be an object"},
		{"file-parser unknown", plug(`{"id":"file-parser","docx":{}}`), "plugins[0].docx", "unknown option"},
		{"context-compression engine empty", plug(`{"id":"context-compression","engine":""}`), "plugins[0].engine", "must not be empty"},
		{"context-compression engine number", plug(`{"id":"context-compression","engine":5}`), "plugins[0].engine", "non-empty string"},
		{"pareto min_coding_score high", plug(`{"id":"pareto-router","min_coding_score":1.2}`), "plugins[0].min_coding_score", "must be a number between 0 and 1, got 1.2"},
		{"pareto min_coding_score low", plug(`{"id":"pareto-router","min_coding_score":-0.1}`), "plugins[0].min_coding_score", "between 0 and 1"},
		{"pareto price_source", plug(`{"id":"pareto-router","price_source":"median"}`), "plugins[0].price_source", "must be one of prompt, weighted_avg"},
		{"fusion no models", plug(`{"id":"fusion","analysis_models":[]}`), "plugins[0].analysis_models", "must have at least 1 item"},
		{"fusion nine models", plug(`{"id":"fusion","analysis_models":[` + repeat(`"a/b"`, 9) + `]}`), "plugins[0].analysis_models", "at most 8 items, got 9"},
		{"fusion model item", plug(`{"id":"fusion","analysis_models":["bad"]}`), "plugins[0].analysis_models[0]", "<vendor>/<model_name>"},
		{"fusion analysis_models string", plug(`{"id":"fusion","analysis_models":"a/b"}`), "plugins[0].analysis_models", "must be an array"},
		{"fusion judge model", plug(`{"id":"fusion","model":"judge"}`), "plugins[0].model", "<vendor>/<model_name>"},
		{"fusion preset", plug(`{"id":"fusion","preset":"general-slow"}`), "plugins[0].preset", "must be one of general-high, general-budget, general-fast"},
		{"fusion max_tool_calls 17", plug(`{"id":"fusion","max_tool_calls":17}`), "plugins[0].max_tool_calls", "must be an integer between 1 and 16, got 17"},
		{"fusion max_tool_calls 0", plug(`{"id":"fusion","max_tool_calls":0}`), "plugins[0].max_tool_calls", "between 1 and 16"},
		{"fusion max_tool_calls fraction", plug(`{"id":"fusion","max_tool_calls":2.5}`), "plugins[0].max_tool_calls", "integer"},
		{"fusion nine tools", plug(`{"id":"fusion","tools":[` + repeat(`{"type":"service:web_search"}`, 9) + `]}`), "plugins[0].tools", "at most 8 items, got 9"},
		{"fusion tool without type", plug(`{"id":"fusion","tools":[{"parameters":{}}]}`), "plugins[0].tools[0].type", "required"},
		{"fusion tool type empty", plug(`{"id":"fusion","tools":[{"type":""}]}`), "plugins[0].tools[0].type", "must not be empty"},
		{"server tool type", with(`"tools":[{"type":"service:Web-Search"}]`), "tools[0].type", "service: followed by lowercase letters"},
		{"server tool empty name", with(`"tools":[{"type":"service:"}]`), "tools[0].type", "service: followed by"},
		{"server tool parameters string", with(`"tools":[{"type":"service:datetime","parameters":"utc"}]`), "tools[0].parameters", "must be an object"},
		{"server tool options beside parameters", with(`"tools":[{"type":"service:datetime","timezone":"UTC"}]`), "tools[0].timezone", `give its options in "parameters"`},
		{"server tool choice not offered", with(`"tools":[{"type":"service:datetime"}],"tool_choice":{"type":"service:web_search"}`), "tool_choice.type", `"service:web_search" is not one of the request's tools`},
		{"max_tool_calls zero", with(`"max_tool_calls":0`), "max_tool_calls", "integer from 1 to 30"},
		{"max_tool_calls too many", with(`"max_tool_calls":31`), "max_tool_calls", "integer from 1 to 30"},
		{"max_tool_calls string", with(`"max_tool_calls":"8"`), "max_tool_calls", "integer from 1 to 30"},
		{"max_tokens_used missing", with(`"stop_server_tools_when":[{"type":"max_tokens_used"}]`), "stop_server_tools_when[0].max_tokens", "required"},
		{"max_tokens_used zero", with(`"stop_server_tools_when":[{"type":"max_tokens_used","max_tokens":0}]`), "stop_server_tools_when[0].max_tokens", "at least 1"},
		{"has_tool_call name empty", with(`"stop_server_tools_when":[{"type":"has_tool_call","tool_name":""}]`), "stop_server_tools_when[0].tool_name", "must not be empty"},
		{"finish_reason_is without reason", with(`"stop_server_tools_when":[{"type":"finish_reason_is"}]`), "stop_server_tools_when[0].reason", "required"},
		{"fusion tool parameters", plug(`{"id":"fusion","tools":[{"type":"x","parameters":"p"}]}`), "plugins[0].tools[0].parameters", "must be an object"},
		{"fusion tool unknown", plug(`{"id":"fusion","tools":[{"type":"x","max":1}]}`), "plugins[0].tools[0].max", "unknown field"},
		{"fusion tools string", plug(`{"id":"fusion","tools":"web"}`), "plugins[0].tools", "must be an array"},

		// route, cache_control, debug, trace, stop_server_tools_when.
		{"route", with(`"route":"cheapest"`), "route", "must be one of fallback, sort"},
		{"route number", with(`"route":1`), "route", "must be one of fallback, sort"},
		{"cache_control string", with(`"cache_control":"ephemeral"`), "cache_control", "must be an object"},
		{"cache_control type", with(`"cache_control":{"type":"persistent"}`), "cache_control.type", "must be one of ephemeral"},
		{"cache_control type missing", with(`"cache_control":{"ttl":"5m"}`), "cache_control.type", "required"},
		{"cache_control ttl", with(`"cache_control":{"type":"ephemeral","ttl":"10m"}`), "cache_control.ttl", "must be one of 5m, 1h"},
		{"cache_control unknown", with(`"cache_control":{"type":"ephemeral","scope":"x"}`), "cache_control.scope", "unknown field"},
		{"debug unknown", with(`"debug":{"verbose":true}`), "debug.verbose", "unknown field"},
		{"debug echo string", with(`"debug":{"echo_upstream_body":"yes"}`), "debug.echo_upstream_body", "must be a boolean"},
		{"debug string", with(`"debug":"on"`), "debug", "must be an object"},
		{"trace string", with(`"trace":"x"`), "trace", "must be an object"},
		{"stop conditions empty", with(`"stop_server_tools_when":[]`), "stop_server_tools_when", "must have at least 1 item"},
		{"stop conditions object", with(`"stop_server_tools_when":{}`), "stop_server_tools_when", "must be an array"},
		{"stop condition string", with(`"stop_server_tools_when":["x"]`), "stop_server_tools_when[0]", "must be an object"},
		{"stop condition without type", with(`"stop_server_tools_when":[{"step_count":1}]`), "stop_server_tools_when[0].type", "required"},
		{"step_count zero", with(`"stop_server_tools_when":[{"type":"step_count_is","step_count":0}]`), "stop_server_tools_when[0].step_count", "at least 1"},
		{"step_count missing", with(`"stop_server_tools_when":[{"type":"step_count_is"}]`), "stop_server_tools_when[0].step_count", "required"},
		{"step_count fraction", with(`"stop_server_tools_when":[{"type":"step_count_is","step_count":1.5}]`), "stop_server_tools_when[0].step_count", "integer"},
		{"max_cost zero", with(`"stop_server_tools_when":[{"type":"step_count_is","step_count":2},{"type":"max_cost","max_cost_in_dollars":0}]`), "stop_server_tools_when[1].max_cost_in_dollars", "must be a number greater than 0"},
		{"max_cost missing", with(`"stop_server_tools_when":[{"type":"max_cost"}]`), "stop_server_tools_when[0].max_cost_in_dollars", "required"},
		{"max_cost string", with(`"stop_server_tools_when":[{"type":"max_cost","max_cost_in_dollars":"1"}]`), "stop_server_tools_when[0].max_cost_in_dollars", "got a string"},
	}
	runRejects(t, chatWithPlugins, cases)
}

func runRejects[T any](t *testing.T, fn func([]byte) (T, *apierr.Error), cases []reject) {
	t.Helper()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			_, err := fn([]byte(tc.body))
			if err == nil {
				t.Fatalf("accepted %s", clip(tc.body, 300))
			}
			if err.Status != 400 {
				t.Fatalf("status %d, want 400: %s", err.Status, err.Message)
			}
			prefix := tc.path + ": "
			if tc.path == "" {
				prefix = ""
			}
			if !strings.HasPrefix(err.Message, prefix) || !strings.Contains(err.Message, tc.contains) {
				t.Fatalf("message %q\nwant it to start with %q and contain %q", err.Message, prefix, tc.contains)
			}
		})
	}
}

func TestEmbeddingsAccepts(t *testing.T) {
	for name, body := range map[string]string{
		"string":          `{"model":"openai/text-embedding-3-small","input":"hello"}`,
		"strings":         `{"model":"a/b","input":["a","b"],"encoding_format":"base64","dimensions":256,"user":"u","provider":{"order":["x"],"allow_fallbacks":true}}`,
		"float":           `{"model":"a/b","input":"x","encoding_format":"float"}`,
		"multimodal":      `{"model":"a/b","input":[{"content":[{"type":"text","text":"cat"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]},{"content":[{"type":"text","text":"dog"}]}]}`,
		"2048 inputs":     `{"model":"a/b","input":[` + repeat(`"x"`, MaxEmbeddingInputs) + `]}`,
		"unknown fields":  `{"model":"a/b","input":"x","input_type":"query","truncate":"END"}`,
		"null provider":   `{"model":"a/b","input":"x","provider":null}`,
		"token ids":       `{"model":"a/b","input":[1,2,3]}`,
		"token id arrays": `{"model":"a/b","input":[[1,2,3],[4]]}`,
		"null user":       `{"model":"a/b","input":"x","user":null,"encoding_format":null}`,
		"no vendor":       `{"model":"text-embedding-3-small","input":"x"}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Embeddings([]byte(body)); err != nil {
				t.Fatalf("rejected: %v", err)
			}
		})
	}
}

func TestEmbeddingsRejects(t *testing.T) {
	e := func(fields string) string { return `{"model":"a/b",` + fields + `}` }
	runRejects(t, Embeddings, []reject{
		{"empty body", ``, "", "request body is empty"},
		{"malformed", `{"model":"a/b",`, "", "not valid JSON"},
		{"array body", `["x"]`, "", "must be a JSON object"},
		{"model missing", `{"input":"x"}`, "model", "required"},
		{"model with a slash too many", `{"model":"a/b/c","input":"x"}`, "model", "<vendor>/<model_name>"},
		{"model number", `{"model":1,"input":"x"}`, "model", "must be a model id string"},
		{"input missing", `{"model":"a/b"}`, "input", "required"},
		{"input empty", e(`"input":""`), "input", "must not be empty"},
		{"input null", e(`"input":null`), "input", "got null"},
		{"input number", e(`"input":5`), "input", "must be a string, an array of strings, or an array of multimodal items, got a number"},
		{"input object", e(`"input":{"content":[]}`), "input", "got an object"},
		{"input empty array", e(`"input":[]`), "input", "must have at least 1 item"},
		{"input empty item", e(`"input":["a",""]`), "input[1]", "must not be empty"},
		{"token id negative", e(`"input":[1,-2,3]`), "input[1]", "must be an integer between 0 and"},
		{"token id fraction", e(`"input":[[1,2.5]]`), "input[0][1]", "must be an integer"},
		{"token id string", e(`"input":[1,"a"]`), "input[1]", "must be an integer"},
		{"token id array empty", e(`"input":[[1],[]]`), "input[1]", "must have at least 1 item"},
		{"token ids mixed with strings", e(`"input":["a",[1]]`), "input[1]", "mixes strings and multimodal items (or token-id arrays)"},
		{"input bool item", e(`"input":[true]`), "input[0]", "must be a string or a multimodal item"},
		{"too many inputs", e(`"input":[` + repeat(`"x"`, MaxEmbeddingInputs+1) + `]`), "input", "at most 2048 inputs per request, got 2049"},
		{"mixed kinds", e(`"input":["a",{"content":[{"type":"text","text":"b"}]}]`), "input[1]", "mixes strings and multimodal items"},
		{"item without content", e(`"input":[{}]`), "input[0].content", "required"},
		{"item content string", e(`"input":[{"content":"x"}]`), "input[0].content", "must be an array"},
		{"item no parts", e(`"input":[{"content":[]}]`), "input[0].content", "must have at least 1 item"},
		{"item unknown field", e(`"input":[{"content":[{"type":"text","text":"x"}],"weight":2}]`), "input[0].weight", "unknown field"},
		{"part string", e(`"input":[{"content":["x"]}]`), "input[0].content[0]", "must be an object"},
		{"part type audio", e(`"input":[{"content":[{"type":"input_audio"}]}]`), "input[0].content[0].type", "must be text or image_url"},
		{"part type missing", e(`"input":[{"content":[{"text":"x"}]}]`), "input[0].content[0].type", "must be text or image_url, got nothing"},
		{"text part empty", e(`"input":[{"content":[{"type":"text","text":""}]}]`), "input[0].content[0].text", "must not be empty"},
		{"text part missing", e(`"input":[{"content":[{"type":"text"}]}]`), "input[0].content[0].text", "required"},
		{"image part missing", e(`"input":[{"content":[{"type":"image_url"}]}]`), "input[0].content[0].image_url", "required"},
		{"image url empty", e(`"input":[{"content":[{"type":"image_url","image_url":{"url":""}}]}]`), "input[0].content[0].image_url.url", "must not be empty"},
		{"encoding_format", e(`"input":"x","encoding_format":"int8"`), "encoding_format", "must be one of float, base64"},
		{"dimensions zero", e(`"input":"x","dimensions":0`), "dimensions", "between 1 and"},
		{"dimensions fraction", e(`"input":"x","dimensions":1.5`), "dimensions", "integer"},
		{"user number", e(`"input":"x","user":1`), "user", "must be a string"},
		{"provider unknown", e(`"input":"x","provider":{"nope":1}`), "provider.nope", "unknown field"},
		{"provider sort", e(`"input":"x","provider":{"sort":"cheap"}`), "provider.sort", "must be one of price"},
		{"provider max_price", e(`"input":"x","provider":{"max_price":{"prompt":"-1"}}`), "provider.max_price.prompt", "non-negative"},
	})
}

func FuzzChat(f *testing.F) {
	seeds := []string{
		maximal, base + `}`, ``, `{`, `[]`, `{"messages":null}`,
		with(`"stop":["a","b","c","d","e"]`),
		plug(`{"id":"fusion","tools":[{}],"analysis_models":[]}`),
		msgs(`[{"role":"tool","content":[{"type":"image_url"}]},{"role":"assistant","tool_calls":[{}]}]`),
		with(`"metadata":{"":"","\u00e9":"\ud800"}`),
		prov(`{"max_price":{"prompt":"1e-3"},"sort":{"by":"price"},"preferred_max_latency":{"p50":1}}`),
		with(`"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}`),
		with(`"reasoning":{"effort":"low"},"reasoning_effort":"low","seed":1e19,"top_k":-0`),
		`{"a":` + strings.Repeat("[", 130),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := Chat(body)
		if err != nil {
			if err.Status != 400 || err.Message == "" {
				t.Fatalf("bad error %+v", err)
			}
			return
		}
		// Accepted: a JSON object with messages, and a model or models.
		root := gjson.ParseBytes(body)
		if !gjson.ValidBytes(body) || !root.IsObject() || !root.Get("messages").IsArray() ||
			!(root.Get("model").Exists() || root.Get("models").IsArray()) {
			t.Fatalf("accepted %q", body)
		}
	})
}

func FuzzEmbeddings(f *testing.F) {
	for _, s := range []string{
		`{"model":"a/b","input":"x"}`,
		`{"model":"a/b","input":["x","y"],"dimensions":3,"encoding_format":"base64"}`,
		`{"model":"a/b","input":[{"content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"u"}}]}]}`,
		`{"model":"a/b","input":[[1]]}`, `{"model":"a/b","input":["",1]}`, `{"input":"x","provider":{"zdr":true}}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := Embeddings(body)
		if err != nil {
			if err.Status != 400 || err.Message == "" {
				t.Fatalf("bad error %+v", err)
			}
			return
		}
		root := gjson.ParseBytes(body)
		if !gjson.ValidBytes(body) || !root.IsObject() || !root.Get("model").Exists() || !root.Get("input").Exists() {
			t.Fatalf("accepted %q", body)
		}
	})
}

// chatBody builds a realistic request of about size bytes: a system prompt,
// tools, provider preferences, and a conversation with tool calls whose
// texts carry escapes (newlines, quotes, unicode) as real ones do.
func chatBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"anthropic/claude-sonnet-4","models":["openai/gpt-4o"],"stream":true,"temperature":0.7,"max_tokens":1024,` +
		`"provider":{"sort":"throughput","data_collection":"deny","max_price":{"prompt":"3","completion":"15"}},` +
		`"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name, e.g. \"Oslo\""},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}}}],` +
		`"tool_choice":"auto","metadata":{"app":"support-bot","tenant":"t-42"},"user":"user-8c1f",` +
		`"messages":[{"role":"system","content":"You are a helpful assistant for Example Corp.\nBe concise; use the tools when a question needs live data.\n"}`)
	turns := []string{
		`{"role":"user","content":"Hi! Can you tell me what the weather is like in Oslo today? I\u2019m planning a walk \ud83d\ude0a"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\",\"unit\":\"c\"}"}}]}`,
		`{"role":"tool","tool_call_id":"call_%d","content":"{\"temp\":21,\"conditions\":\"sunny\",\"wind\":\"3 m/s\"}"}`,
		`{"role":"assistant","content":"It is sunny in Oslo, 21 \u00b0C with a light wind (3 m/s).\n\nA good day for a walk \u2014 bring sunglasses!"}`,
		`{"role":"user","content":[{"type":"text","text":"Great. And what about this place?\nHere is a photo:"},{"type":"image_url","image_url":{"url":"https://example.com/photos/fjord.jpg"}}]}`,
	}
	for i := 0; b.Len() < size-200; i++ {
		b.WriteByte(',')
		b.WriteString(strings.ReplaceAll(turns[i%len(turns)], "%d", fmt.Sprint(i/len(turns))))
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func BenchmarkChat1KB(b *testing.B)  { benchChat(b, chatBody(1<<10)) }
func BenchmarkChat10KB(b *testing.B) { benchChat(b, chatBody(10<<10)) }

// BenchmarkChatAgent is the validation of an agent-shaped body (the
// request path's benchmarks all run at these sizes: docs/performance.md):
// its cost per byte must not grow with the size.
func BenchmarkChatAgent(b *testing.B) {
	for _, size := range agentbody.Sizes {
		b.Run(agentbody.Name(size), func(b *testing.B) { benchChat(b, agentbody.Chat("openai/gpt-4o", false, size)) })
	}
}

func benchChat(b *testing.B, body []byte) {
	if _, err := Chat(body); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Chat(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEmbeddings(b *testing.B) {
	body := []byte(`{"model":"openai/text-embedding-3-small","input":[` + repeat(`"The quick brown fox jumps over the lazy dog."`, 100) + `]}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Embeddings(body); err != nil {
			b.Fatal(err)
		}
	}
}

// The validation walk notes what the host's compatibility pass must do, so
// that a body needing nothing is not walked again; an absent member is not
// a null (gjson's zero Result reads as one).
func TestChatCompatNeeds(t *testing.T) {
	for _, tc := range []struct {
		body          string
		nulls, legacy bool
	}{
		{`{"model":"a/b","messages":[{"role":"user","content":"hi"}]}`, false, false},
		{`{"model":"a/b","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"x"}]}`, false, false},
		{`{"model":"a/b","temperature":null,"messages":[{"role":"user","content":"hi"}]}`, false, false},
		{`{"model":"a/b","user":null,"messages":[{"role":"user","content":"hi"}]}`, true, false},
		{`{"model":"a/b","messages":[{"role":"user","content":"hi","name":null}]}`, true, false},
		{`{"model":"a/b","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","description":null}}]}`, true, false},
		{`{"model":"a/b","messages":[{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}},{"role":"function","name":"f","content":"1"}]}`, false, true},
	} {
		req, err := Chat([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err.Message)
		}
		if req.Nulls != tc.nulls || req.Legacy != tc.legacy {
			t.Errorf("%s: Nulls %v Legacy %v, want %v %v", tc.body, req.Nulls, req.Legacy, tc.nulls, tc.legacy)
		}
	}
}

// The tools walk notes a custom tool (a routed parameter of its own) and a
// server tool, by each tool's type, wherever it is in the array and
// whatever schema the tools before it carry.
func TestChatToolKinds(t *testing.T) {
	fn := `{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"type":{"type":"string","enum":["custom","service:web_search"]}}}}}`
	for _, tc := range []struct {
		tools          string
		custom, server bool
	}{
		{`[` + fn + `]`, false, false},
		{`[` + fn + `,{"type":"custom","custom":{"name":"grammar"}}]`, true, false},
		{`[` + fn + `,{"type":"openrouter:web_search"}]`, false, true},
		{`[{"type":"service:web_search"},{"type":"cus\u0074om","custom":{"name":"g"}},` + fn + `]`, true, true},
	} {
		req, err := Chat([]byte(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}],"tools":` + tc.tools + `}`))
		if err != nil {
			t.Fatalf("%s: %v", tc.tools, err)
		}
		if custom := slices.Contains(req.Params, chatparams.CustomTools); custom != tc.custom || req.ServerTools != tc.server {
			t.Errorf("%s: custom %v server %v, want %v %v", tc.tools, custom, req.ServerTools, tc.custom, tc.server)
		}
	}
}
