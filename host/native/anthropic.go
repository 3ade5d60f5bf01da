package native

import (
	"bufio"
	"bytes"
	"embed"
	"sync"

	anthropic "github.com/switchyard/switchyard/plugins/anthropic/translate"
	"github.com/switchyard/switchyard/sdk"
)

// anthropicRequestSamples cover the branches of the Messages translation:
// system prompts, sampling and stop parameters, tools with tool calls and
// results, images and documents, reasoning effort to a thinking budget,
// cache_control breakpoints, the web plugin's server tool, streams, Vertex
// AI's form, and the native mode (a Messages body passed through with the
// client's beta header).
var anthropicRequestSamples = [][][]byte{
	fields(`{"model":"claude-sonnet-4-5","provider":"anthropic","stream":false,"drop":[],"generation_id":"gen-1","catalog_model":"anthropic/claude-sonnet-4.5"}`,
		`{"model":"anthropic/claude-sonnet-4.5","messages":[{"role":"system","content":"You are terse."},{"role":"developer","content":"Answer in French."},{"role":"user","content":"Hello! ☀ é"}],"temperature":0.2,"top_p":0.9,"top_k":40,"stop":["\n\n"],"max_tokens":100,"user":"u-1","provider":{"sort":"price"}}`),
	fields(`{"model":"claude-opus-4-1","provider":"anthropic","stream":true,"drop":["top_k"],"generation_id":"gen-2","catalog_model":"anthropic/claude-opus-4.1"}`,
		`{"model":"anthropic/claude-opus-4.1","stream":true,"top_k":5,"max_completion_tokens":2048,"messages":[{"role":"user","content":"What is the weather in Paris?"},{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"toolu_1","content":"18°C, sunny"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"parallel_tool_calls":false}`),
	fields(`{"model":"claude-sonnet-4-5","provider":"anthropic","stream":false,"drop":[],"generation_id":"gen-3","catalog_model":"anthropic/claude-sonnet-4.5"}`,
		`{"model":"anthropic/claude-sonnet-4.5","reasoning":{"effort":"high"},"messages":[{"role":"user","content":[{"type":"text","text":"What is in these?","cache_control":{"type":"ephemeral"}},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjQK"}}]}],"tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`),
	fields(`{"model":"claude-haiku-4-5","provider":"anthropic","stream":false,"drop":[],"generation_id":"gen-4","catalog_model":"anthropic/claude-haiku-4.5"}`,
		`{"model":"anthropic/claude-haiku-4.5","reasoning_effort":"low","plugins":[{"id":"web","max_results":3}],"messages":[{"role":"user","content":"news?"},{"role":"assistant","content":null,"reasoning":"Thinking about it."},{"role":"user","content":""}],"response_format":{"type":"json_object"},"tool_choice":"none"}`),
	fields(`{"model":"claude-sonnet-4-5@20250929","provider":"vertex","stream":true,"drop":[],"generation_id":"gen-5","catalog_model":"anthropic/claude-sonnet-4.5","api":"vertex"}`,
		`{"model":"anthropic/claude-sonnet-4.5","stream":true,"messages":[{"role":"user","content":"hi"}]}`),
	fields(`{"model":"claude-sonnet-4-5","provider":"anthropic","stream":true,"drop":[],"generation_id":"gen-6","catalog_model":"anthropic/claude-sonnet-4.5","native":"messages","beta":"interleaved-thinking-2025-05-14"}`,
		`{"model":"anthropic/claude-sonnet-4.5","max_tokens":1024,"stream":true,"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"…","signature":"EqQBCgIYAhIM"},{"type":"text","text":"Hello"}]},{"role":"user","content":"Again"}]}`),
	fields(`{"model":"claude-sonnet-4-5@20250929","provider":"vertex","stream":false,"drop":[],"generation_id":"gen-7","catalog_model":"anthropic/claude-sonnet-4.5","native":"messages","api":"vertex"}`,
		`{"model":"anthropic/claude-sonnet-4.5","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}`),
}

// anthropicSamples are the adapter's own fixtures (samples/anthropic:
// Anthropic's reference and SDK recordings, SOURCES.md).
//
//go:embed samples/anthropic
var anthropicSamples embed.FS

func sample(name string) []byte {
	b, err := anthropicSamples.ReadFile("samples/anthropic/" + name)
	if err != nil {
		panic(err) // embedded: a missing file is a build mistake
	}
	return b
}

var responseCtx = `{"model":"claude-sonnet-4-5","provider":"anthropic","stream":false,"drop":[],"generation_id":"gen-1","catalog_model":"anthropic/claude-sonnet-4.5"}`

// anthropicResponseSamples: a tool call, web search results with
// citations, and cache reads.
var anthropicResponseSamples = sync.OnceValue(func() [][][]byte {
	var out [][][]byte
	for _, name := range []string{"message_tool_use.json", "message_web_search.json", "message_cache_read.json"} {
		out = append(out, [][]byte{[]byte(responseCtx), sample(name)})
	}
	return out
})

// anthropicStreamSamples are every event of the recorded streams (text,
// tool use, thinking with its signature, web search with citations, an
// error), each with the state the events before it left: the hook's
// inputs as a stream feeds them. The states come from the native hook
// itself; the module must agree on every event, state included.
var anthropicStreamSamples = sync.OnceValue(func() [][][]byte {
	ctx := []byte(`{"model":"claude-sonnet-4-5","provider":"anthropic","stream":true,"drop":[],"generation_id":"gen-1","catalog_model":"anthropic/claude-sonnet-4.5"}`)
	var c sdk.Caller
	var out [][][]byte
	for _, name := range []string{"stream_basic.sse", "stream_tool_use.sse", "stream_thinking.sse", "stream_web_search.sse", "stream_error.sse"} {
		state := []byte{}
		sc := bufio.NewScanner(bytes.NewReader(sample(name)))
		for sc.Scan() {
			data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
			if !ok {
				continue
			}
			in := [][]byte{ctx, bytes.Clone(data), state}
			out = append(out, in)
			res, err := c.Call(anthropic.StreamEvent, in...)
			if err != nil || len(res) == 0 {
				panic("native: anthropic stream sample " + name + " fails: the adapter's own fixture")
			}
			state = bytes.Clone(res[0])
		}
	}
	return out
})
