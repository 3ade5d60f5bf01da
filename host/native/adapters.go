package native

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/wasm"
	anthropic "github.com/switchyard/switchyard/plugins/anthropic/translate"
	bedrock "github.com/switchyard/switchyard/plugins/bedrock/translate"
	cohere "github.com/switchyard/switchyard/plugins/cohere/translate"
	gemini "github.com/switchyard/switchyard/plugins/gemini/translate"
	"github.com/switchyard/switchyard/sdk"
)

// The adapters for the other wire formats (Anthropic Messages, Gemini,
// Bedrock Converse, Cohere v2) translate every request, every answer and
// every event of every stream: in a Go guest each is a Wasm call (the
// Anthropic stream hook cost 133 µs in the module against 7 µs native,
// and a native Messages stream cost four times a chat stream's gateway
// CPU). Their chat hooks are native hooks too, named
// "<adapter>-chat/<n>", "<adapter>-response/<n>" and "<adapter>-stream/<n>".
//
// Their samples are the adapters' own recorded fixtures (samples/<name>,
// copies of plugins/<name>/testdata, whose SOURCES.md say where each
// payload comes from): every documented request in each adapter context of
// the adapter's, every recorded answer, and every event of every recorded
// stream with the state the events before it left.

//go:embed samples
var samples embed.FS

// chatAdapter is a first-party adapter whose chat hooks the host
// implements.
type chatAdapter struct {
	name     string
	request  func(build string) sdk.Handler
	response sdk.Handler
	stream   sdk.Handler
	// ctxs are the adapter contexts each documented request is sampled in
	// (a documented request's own "ctx" is merged over each).
	ctxs []string
	// extra request samples (ctx, body) the documented ones do not cover.
	extra [][][]byte
	// answers and streams are sample files; a stream file holds one event
	// per "data: " line (SSE) or per line (JSON lines).
	answers, streams []string
	// revs are the revisions of the request, response and stream
	// implementations' names ("<name>-response/2"); 0 is 1. A changed
	// translation takes the next one.
	revs [3]int
}

var chatAdapters = []chatAdapter{
	{name: "anthropic",
		request:  func(build string) sdk.Handler { return (&anthropic.Adapter{Build: build}).ChatRequest },
		response: anthropic.ChatResponse, stream: anthropic.StreamEvent,
		ctxs: []string{
			`{"model":"claude-opus-4-1","provider":"anthropic","stream":false,"drop":[],"generation_id":"gen-1","catalog_model":"anthropic/claude-opus-4.1"}`,
			`{"model":"claude-opus-4-1","provider":"anthropic","stream":true,"drop":["top_k","stop"],"generation_id":"gen-2","catalog_model":"anthropic/claude-opus-4.1"}`,
			`{"model":"claude-opus-4-1@20250805","provider":"vertex","stream":true,"drop":[],"generation_id":"gen-3","catalog_model":"anthropic/claude-opus-4.1","api":"vertex"}`,
		},
		extra:   anthropicNative,
		answers: []string{"message_tool_use.json", "message_web_search.json", "message_cache_read.json"},
		streams: []string{"stream_basic.sse", "stream_tool_use.sse", "stream_thinking.sse", "stream_web_search.sse", "stream_error.sse"},
	},
	{name: "gemini",
		request:  func(build string) sdk.Handler { return (&gemini.Adapter{Build: build}).ChatRequest },
		response: gemini.ChatResponse, stream: gemini.StreamEvent,
		ctxs: []string{
			`{"model":"gemini-2.5-flash","provider":"google","stream":false,"drop":[],"generation_id":"gen-1","catalog_model":"google/gemini-2.5-flash"}`,
			`{"model":"gemini-2.5-flash","provider":"google","stream":true,"drop":["seed"],"generation_id":"gen-2","catalog_model":"google/gemini-2.5-flash"}`,
			`{"model":"gemini-2.5-flash","provider":"vertex","stream":true,"drop":[],"generation_id":"gen-3","catalog_model":"google/gemini-2.5-flash","api":"vertex"}`,
		},
		answers: []string{"response_google_search.json", "response_implicit_caching.json", "response_parallel_calls.json", "response_prompt_feedback.json", "response_thinking.json"},
		streams: []string{"stream_basic.sse", "stream_google_search.sse", "stream_thinking_function_call.sse"},
	},
	{name: "bedrock",
		request:  func(build string) sdk.Handler { return (&bedrock.Adapter{Build: build}).ChatRequest },
		response: bedrock.ChatResponse, stream: bedrock.StreamEvent,
		ctxs: []string{
			`{"model":"anthropic.claude-3-5-sonnet-20240620-v1:0","provider":"bedrock","stream":false,"drop":[],"generation_id":"gen-1","catalog_model":"anthropic/claude-3.5-sonnet"}`,
			`{"model":"us.amazon.nova-pro-v1:0","provider":"bedrock","stream":true,"drop":["top_k"],"generation_id":"gen-2","catalog_model":"amazon/nova-pro"}`,
		},
		answers: []string{"converse_response.json", "converse_tool_use.json"},
		streams: []string{"converse_stream_tool.jsonl"},
	},
	{name: "cohere",
		request:  func(build string) sdk.Handler { return (&cohere.Adapter{Build: build}).ChatRequest },
		response: cohere.ChatResponse, stream: cohere.StreamEvent,
		ctxs: []string{
			`{"model":"command-a-03-2025","provider":"cohere","stream":false,"drop":[],"generation_id":"gen-1","catalog_model":"cohere/command-a"}`,
			`{"model":"command-a-03-2025","provider":"cohere","stream":true,"drop":["seed"],"generation_id":"gen-2","catalog_model":"cohere/command-a"}`,
		},
		answers: []string{"chat_response.json", "chat_thinking.json", "chat_tool_call.json", "chat_citations.json"},
		streams: []string{"stream_text.sse", "stream_tool.sse", "stream_citations.sse"},
		// response and stream 2: citations as url_citation annotations.
		revs: [3]int{1, 2, 2},
	},
}

// anthropicNative are Messages bodies the client sent (the native mode:
// passed through with its model set and the client's beta header), on
// Anthropic and on Vertex AI.
var anthropicNative = [][][]byte{
	fields(`{"model":"claude-sonnet-4-5","provider":"anthropic","stream":true,"drop":[],"generation_id":"gen-6","catalog_model":"anthropic/claude-sonnet-4.5","native":"messages","beta":"interleaved-thinking-2025-05-14"}`,
		`{"model":"anthropic/claude-sonnet-4.5","max_tokens":1024,"stream":true,"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"…","signature":"EqQBCgIYAhIM"},{"type":"text","text":"Hello"}]},{"role":"user","content":"Again"}]}`),
	fields(`{"model":"claude-sonnet-4-5@20250929","provider":"vertex","stream":false,"drop":[],"generation_id":"gen-7","catalog_model":"anthropic/claude-sonnet-4.5","native":"messages","api":"vertex"}`,
		`{"model":"anthropic/claude-sonnet-4.5","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}`),
}

// hooks are the adapter's three native hooks. Samples are built here,
// once per Hooks call (an engine's start), from the embedded fixtures.
func (a chatAdapter) hooks() map[string]wasm.NativeHook {
	return map[string]wasm.NativeHook{
		a.hookName("chat", 0): {Hook: abi.HookChatRequest, Samples: a.requestSamples(), Bind: bind(a.request)},
		a.hookName("response", 1): {Hook: abi.HookChatResponse, Samples: a.answerSamples(),
			Bind: bind(func(string) sdk.Handler { return a.response })},
		a.hookName("stream", 2): {Hook: abi.HookChatStreamEvent, Samples: a.streamSamples(),
			Bind: bind(func(string) sdk.Handler { return a.stream })},
	}
}

// hookName is the implementation's name, "<adapter>-<kind>/<revision>".
func (a chatAdapter) hookName(kind string, i int) string {
	return a.name + "-" + kind + "/" + strconv.Itoa(max(a.revs[i], 1))
}

func (a chatAdapter) file(name string) []byte {
	b, err := samples.ReadFile("samples/" + a.name + "/" + name)
	if err != nil {
		panic(err) // embedded: a missing file is a build mistake
	}
	return b
}

func (a chatAdapter) requestSamples() [][][]byte {
	var cases []struct {
		Ctx     json.RawMessage `json:"ctx"`
		Unified json.RawMessage `json:"unified"`
	}
	if err := json.Unmarshal(a.file("requests.json"), &cases); err != nil {
		panic(err)
	}
	out := append([][][]byte(nil), a.extra...)
	for _, c := range cases {
		for _, ctx := range a.ctxs {
			out = append(out, [][]byte{mergeCtx(ctx, c.Ctx), c.Unified})
		}
	}
	return succeeding(a.request(""), out)
}

// succeeding keeps the samples the handler translates: the check compares
// outputs, and a request the adapter refuses (a documented refusal) fails
// in the module too, which the check reads as a mismatch.
func succeeding(h sdk.Handler, in [][][]byte) [][][]byte {
	var c sdk.Caller
	return slices.DeleteFunc(in, func(s [][]byte) bool {
		_, err := c.Call(h, s...)
		return err != nil
	})
}

// mergeCtx sets the members of a documented request's own context (its
// model, its API form) over ctx.
func mergeCtx(ctx string, own json.RawMessage) []byte {
	var base, over map[string]any
	_ = json.Unmarshal([]byte(ctx), &base)
	if json.Unmarshal(own, &over) == nil {
		for k, v := range over {
			base[k] = v
		}
	}
	b, _ := json.Marshal(base)
	return b
}

func (a chatAdapter) answerSamples() [][][]byte {
	ctx := []byte(a.ctxs[0])
	var out [][][]byte
	for _, name := range a.answers {
		out = append(out, [][]byte{ctx, a.file(name)})
	}
	return succeeding(a.response, out)
}

func (a chatAdapter) streamSamples() [][][]byte {
	ctx := []byte(a.ctxs[min(1, len(a.ctxs)-1)])
	var c sdk.Caller
	var out [][][]byte
	for _, name := range a.streams {
		state := []byte{}
		sc := bufio.NewScanner(bytes.NewReader(a.file(name)))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			data, ok := bytes.CutPrefix(line, []byte("data: "))
			if !ok && (!strings.HasSuffix(name, ".jsonl") || len(bytes.TrimSpace(line)) == 0) {
				continue
			}
			if !ok {
				data = line
			}
			in := [][]byte{ctx, bytes.Clone(data), state}
			res, err := c.Call(a.stream, in...)
			if err != nil || len(res) == 0 {
				break // an event the adapter fails (an error event) ends its stream
			}
			out = append(out, in)
			state = bytes.Clone(res[0])
		}
	}
	return out
}
