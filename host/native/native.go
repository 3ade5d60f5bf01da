// Package native holds the host implementations of module hooks that a
// module may declare in its manifest's "native" (docs/abi.md §native
// hooks). Each is a first-party module's own translation code — the plain
// Go package its main registers — built into the host, plus the sample
// inputs on which a declaring module must answer identically before the
// host runs it in the module's place (host/wasm, native.go).
//
// The request hooks of the OpenAI adapter run on every request to an
// OpenAI-compatible provider (its response hooks are passthrough); the
// other adapters' chat hooks (adapters.go) on every request to theirs,
// the stream hook once per event.
package native

import (
	"maps"
	"sync"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/switchyard/switchyard/plugins/openai/translate"
	"github.com/switchyard/switchyard/sdk"
)

// Names of the implementations, as manifests write them. A change to what
// an implementation computes gets a new name, so a module built against
// the old one keeps being checked against what it was written for.
const (
	OpenAIChat  = "openai-chat/3"
	OpenAIEmbed = "openai-embed/1"
)

// Hooks are the implementations this host offers, by name.
func Hooks() map[string]wasm.NativeHook {
	hooks := map[string]wasm.NativeHook{
		OpenAIChat: {Hook: abi.HookChatRequest, Samples: chatSamples,
			Bind: bind(func(build string) sdk.Handler { return (&translate.Adapter{Build: build}).ChatRequest })},
		OpenAIEmbed: {Hook: abi.HookEmbedRequest, Samples: embedSamples,
			Bind: bind(func(build string) sdk.Handler { return (&translate.Adapter{Build: build}).EmbedRequest })},
	}
	for _, a := range chatAdapters {
		maps.Copy(hooks, a.hooks())
	}
	return hooks
}

// pooledCall is one goroutine's handler and call buffers. It is the
// Lease of the output it returned: the buffers go back to the pool on
// Release.
type pooledCall struct {
	h    sdk.Handler
	c    sdk.Caller
	pool *sync.Pool
}

func (pc *pooledCall) Release() { pc.pool.Put(pc) }

// bind binds a handler of a first-party adapter to a module. The modules'
// mains stamp "name/version" as their build (plugins/openai,
// plugins/anthropic), so that is what the native code stamps too; a build
// stamped otherwise (the tests' variant) fails the sample check and keeps
// running in Wasm. An adapter may keep per-call scratch, so each goroutine
// takes its own handler and buffers from a pool, and the output stays in
// those buffers until the caller releases them.
func bind(handler func(build string) sdk.Handler) func(*manifest.Manifest) func([][]byte) ([][]byte, wasm.Lease, error) {
	return func(m *manifest.Manifest) func([][]byte) ([][]byte, wasm.Lease, error) {
		build := m.Name + "/" + m.Version
		pool := &sync.Pool{}
		pool.New = func() any { return &pooledCall{h: handler(build), pool: pool} }
		return func(in [][]byte) ([][]byte, wasm.Lease, error) {
			pc := pool.Get().(*pooledCall)
			out, err := pc.c.CallBorrowed(pc.h, in...)
			if err != nil {
				pc.Release()
				return nil, nil, err
			}
			return out, pc, nil
		}
	}
}

func fields(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, f := range s {
		out[i] = []byte(f)
	}
	return out
}

// chatSamples cover every branch of the chat translation: gateway fields
// dropped, parameters the endpoint does not take (ctx.drop), streams
// (usage asked for), reasoning.effort flattened or left to an explicit
// reasoning_effort, the web plugin's search options, tools, and bodies
// the host passes through untouched (unknown fields, unicode).
var chatSamples = [][][]byte{
	fields(`{"model":"gpt-4o-mini","provider":"openai","stream":false,"drop":[],"generation_id":"gen-1","catalog_model":"openai/gpt-4o-mini"}`,
		`{"model":"openai/gpt-4o-mini","models":["openai/gpt-4o-mini","anthropic/claude"],"provider":{"sort":"price"},"session_id":"s1","plugins":[{"id":"response-healing"}],"messages":[{"role":"developer","content":"You are helpful."},{"role":"user","content":"Hello!"}],"temperature":0.2,"max_tokens":100}`),
	fields(`{"model":"gpt-4.1","provider":"openai","stream":true,"drop":["top_k","logit_bias"],"generation_id":"gen-2","catalog_model":"openai/gpt-4.1"}`,
		`{"model":"openai/gpt-4.1","stream":true,"stream_options":{"include_usage":false},"top_k":5,"logit_bias":{"50256":-100},"seed":7,"messages":[{"role":"user","content":"What's the weather in Paris? ☀ é"}],"tools":[{"type":"function","function":{"name":"get_weather","strict":true,"parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}}}],"tool_choice":"auto","parallel_tool_calls":false}`),
	fields(`{"model":"o3","provider":"openai","stream":false,"drop":[],"generation_id":"gen-3","catalog_model":"openai/o3"}`,
		`{"model":"openai/o3","reasoning":{"effort":"high","max_tokens":2000},"messages":[{"role":"user","content":[{"type":"text","text":"Prove it."},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}],"response_format":{"type":"json_object"},"debug":{"echo_upstream_body":true},"transforms":["middle-out"]}`),
	fields(`{"model":"o3","provider":"openai","stream":false,"drop":["reasoning_effort"],"generation_id":"gen-4","catalog_model":"openai/o3"}`,
		`{"model":"openai/o3","reasoning":{"effort":"low"},"reasoning_effort":"medium","messages":[{"role":"user","content":"hi"}],"user":"u-1","stop":["\n\n"],"n":1}`),
	fields(`{"model":"gpt-4o","provider":"openai","stream":false,"drop":[],"generation_id":"gen-5","catalog_model":"openai/gpt-4o"}`,
		`{"model":"openai/gpt-4o","reasoning":{"effort":"minimal"},"reasoning_effort":"low","plugins":[{"id":"web","max_results":3,"search_prompt":"Results:"}],"messages":[{"role":"user","content":"news?"}],"frequency_penalty":0.5,"presence_penalty":-0.5,"logprobs":true,"top_logprobs":2}`),
	fields(`{"model":"gpt-4o","provider":"openai","stream":false,"drop":[],"generation_id":"gen-6","catalog_model":"openai/gpt-4o:online"}`,
		`{"model":"openai/gpt-4o:online","web_search_options":{"search_context_size":"high"},"plugins":[{"id":"web"}],"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"weather"}]}`),
	fields(`{"model":"local-model","provider":"vllm","stream":true,"drop":[],"generation_id":"gen-7","catalog_model":"local/model"}`,
		`{"messages":[{"role":"user","content":""},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"42"}],"stream":true,"unknown_field":{"x":[1,2,3]},"prediction":{"type":"content","content":"x"}}`),
	// Provider forms (ctx.api, plugins/openai/translate/forms.go): only
	// the members Mistral takes, renamed, no stream_options; OpenRouter's
	// reasoning object; Cerebras's refused members.
	fields(`{"model":"mistral-small-latest","provider":"mistral","stream":true,"drop":[],"generation_id":"gen-12","catalog_model":"mistralai/mistral-small","api":"mistral"}`,
		`{"model":"mistralai/mistral-small","stream":true,"seed":7,"max_completion_tokens":64,"user":"u","logprobs":true,"reasoning":{"effort":"low"},"plugins":[{"id":"web"}],"messages":[{"role":"user","content":"Bonjour"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`),
	fields(`{"model":"deepseek/deepseek-r1","provider":"openrouter","stream":false,"drop":[],"generation_id":"gen-13","catalog_model":"deepseek/deepseek-r1","api":"openrouter"}`,
		`{"model":"deepseek/deepseek-r1","reasoning":{"effort":"high","exclude":false},"messages":[{"role":"user","content":"9.11 or 9.8?"}]}`),
	fields(`{"model":"llama3.1-8b","provider":"cerebras","stream":false,"drop":[],"generation_id":"gen-14","catalog_model":"meta-llama/llama-3.1-8b","api":"cerebras"}`,
		`{"model":"meta-llama/llama-3.1-8b","frequency_penalty":0.5,"presence_penalty":0.1,"logit_bias":{"1":2},"parallel_tool_calls":false,"service_tier":"auto","seed":1,"messages":[{"role":"user","content":"hi"}]}`),
	// Reasoning passed back (openai-chat/3): DeepSeek's on tool turns
	// only, Fireworks' on every assistant turn, from reasoning or
	// OpenRouter's reasoning_details.
	fields(`{"model":"deepseek-reasoner","provider":"deepseek","stream":true,"drop":[],"generation_id":"gen-15","catalog_model":"deepseek/deepseek-r1","api":"deepseek"}`,
		`{"model":"deepseek/deepseek-r1","stream":true,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning":"r0"},{"role":"user","content":"c"},{"role":"assistant","content":"","reasoning":"r1","tool_calls":[{"id":"c0","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c0","content":"1"},{"role":"assistant","content":null,"reasoning_details":[{"type":"reasoning.text","text":"r2 ☀"},{"type":"reasoning.encrypted","data":"x"}],"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"2"}]}`),
	fields(`{"model":"accounts/fireworks/models/qwen3-235b-a22b","provider":"fireworks","stream":false,"drop":[],"generation_id":"gen-16","catalog_model":"qwen/qwen3-235b","api":"fireworks"}`,
		`{"model":"qwen/qwen3-235b","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning":"r0"},{"role":"assistant","content":"d","reasoning_content":"own","reasoning":"x"},{"role":"user","content":"reasoning"}]}`),
}

// embedSamples cover strings, token ids, text-only multimodal items
// (flattened) and items with images (kept).
var embedSamples = [][][]byte{
	fields(`{"model":"text-embedding-3-small","provider":"openai","stream":false,"drop":[],"generation_id":"gen-8","catalog_model":"openai/text-embedding-3-small"}`,
		`{"model":"openai/text-embedding-3-small","input":"The food was delicious","encoding_format":"base64","dimensions":256,"user":"u"}`),
	fields(`{"model":"text-embedding-3-small","provider":"openai","stream":false,"drop":[],"generation_id":"gen-9","catalog_model":"openai/text-embedding-3-small"}`,
		`{"model":"openai/text-embedding-3-small","input":["a","b ☀",[1,2,3]],"provider":{"sort":"price"}}`),
	fields(`{"model":"mm-embed","provider":"openai","stream":false,"drop":[],"generation_id":"gen-10","catalog_model":"x/mm-embed"}`,
		`{"model":"x/mm-embed","input":[{"content":[{"type":"text","text":"first"},{"type":"text","text":"second"}]},"plain"]}`),
	fields(`{"model":"mm-embed","provider":"openai","stream":false,"drop":[],"generation_id":"gen-11","catalog_model":"x/mm-embed"}`,
		`{"model":"x/mm-embed","input":[{"content":[{"type":"text","text":"a cat"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`),
}
