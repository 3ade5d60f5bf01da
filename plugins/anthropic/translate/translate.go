// Package translate is the Anthropic adapter's translation, for Anthropic's Messages API: it turns
// the unified (OpenAI-shaped) chat request into a Messages request, and
// Messages results and stream events back into chat completions and
// chunks. The provider key goes in x-api-key through the host's
// ${API_KEY} placeholder.
//
// It is a plain package so it builds for the host too: the module's main
// only registers these handlers, and the tests run them natively against
// payloads from Anthropic's Messages API reference and official SDKs (testdata/SOURCES.md).
package translate

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/internal/websearch"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Adapter holds what differs between builds of the module.
type Adapter struct {
	// Build is stamped into the X-Switchyard-Adapter request header so
	// operators can see which build translated a request.
	Build string
}

// defaultMaxTokens is sent when the caller gave no bound: the Messages API
// requires one.
const defaultMaxTokens = 4096

// thinkingBudget maps reasoning effort to Anthropic's thinking budget.
var thinkingBudget = map[string]int{
	"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32000, "max": 32000,
}

// headers are the upstream request's headers; beta, when not empty, is
// the client's anthropic-beta header, forwarded.
func (a *Adapter) headers(ctx []byte, beta string) string {
	h := "x-api-key: " + abi.APIKeyPlaceholder + "\nanthropic-version: 2023-06-01\nContent-Type: application/json\nX-Switchyard-Adapter: " + a.Build + "\n"
	if vertex(ctx) {
		// The version is in the body; the host's scheme sends the token.
		h = "Content-Type: application/json\nX-Switchyard-Adapter: " + a.Build + "\n"
	}
	if beta = strings.NewReplacer("\r", "", "\n", "").Replace(beta); beta != "" {
		h += "anthropic-beta: " + beta + "\n"
	}
	return h
}

// nativeRequest is the chat_request hook for a Messages body the client
// sent (the host's native mode, manifest capability messages_native): it
// goes upstream as it is, only its model set to the endpoint's, with the
// client's anthropic-beta header. Thinking blocks and their signatures,
// cache_control and everything else the client wrote arrive unchanged.
func (a *Adapter) nativeRequest(ctx, body []byte, out *sdk.Out) error {
	var err error
	if vertex(ctx) {
		body, err = sjson.DeleteBytes(body, "model")
		if err == nil {
			body, err = sjson.SetBytes(body, "anthropic_version", vertexVersion)
		}
	} else {
		body, err = sjson.SetBytes(body, "model", sdk.Get(ctx, "model").Str)
	}
	if err != nil {
		return err
	}
	out.FieldString("POST")
	out.FieldString(path(ctx, sdk.Get(body, "stream").Bool()))
	out.FieldString(a.headers(ctx, sdk.Get(ctx, "beta").Str))
	out.Field(body)
	return nil
}

// vertexVersion is the API version Claude on Vertex AI takes in the body
// (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude).
const vertexVersion = "vertex-2023-10-16"

// vertex reports a provider that serves Claude through Vertex AI (api:
// vertex): the model is in the URL, the version in the body, and the
// host's google-service-account scheme authorizes it.
func vertex(ctx []byte) bool { return sdk.Get(ctx, "api").Str == "vertex" }

// path is the request's path: /messages, or on Vertex AI the model's
// rawPredict (streamRawPredict for a stream, the same SSE events) under
// the provider's .../publishers/anthropic base URL.
func path(ctx []byte, stream bool) string {
	if !vertex(ctx) {
		return "/messages"
	}
	m := "/models/" + sdk.Get(ctx, "model").Str
	if stream {
		return m + ":streamRawPredict"
	}
	return m + ":rawPredict"
}

// ChatRequest is the chat_request hook.
func (a *Adapter) ChatRequest(in *sdk.In, out *sdk.Out) error {
	ctx := in.Field(0)
	if sdk.Get(ctx, "native").Str == "messages" {
		return a.nativeRequest(ctx, in.Field(1), out)
	}
	var p sdk.Params
	req := p.Load(ctx, in.Field(1))

	out.FieldString("POST")
	out.FieldString(path(ctx, req.Get("stream").Bool()))
	out.FieldString(a.headers(ctx, ""))
	out.Open()
	out.Byte('{')
	if vertex(ctx) {
		out.MemberString("anthropic_version", vertexVersion)
	} else {
		out.MemberString("model", sdk.Get(ctx, "model").Str)
	}

	maxTokens := defaultMaxTokens
	if v := p.Get("max_completion_tokens"); v.Exists() {
		maxTokens = int(v.Int())
	} else if v := p.Get("max_tokens"); v.Exists() {
		maxTokens = int(v.Int())
	}
	effort := req.Get("reasoning.effort").Str
	if e := req.Get("reasoning_effort").Str; e != "" {
		effort = e
	}
	budget := 0
	if !p.Dropped("reasoning") && !p.Dropped("reasoning_effort") {
		budget = thinkingBudget[effort]
		if mt := req.Get("reasoning.max_tokens"); mt.Exists() {
			budget = int(mt.Int())
		}
	}
	if budget > 0 && maxTokens <= budget {
		maxTokens = budget + defaultMaxTokens
	}
	out.Member("max_tokens", strconv.Itoa(maxTokens))
	if budget > 0 {
		out.Member("thinking", `{"type":"enabled","budget_tokens":`+strconv.Itoa(budget)+`}`)
	}

	// System and developer messages become the system prompt.
	var system []string
	req.Get("messages").ForEach(func(_, m gjson.Result) bool {
		if r := m.Get("role").Str; r == "system" || r == "developer" {
			system = append(system, sdk.ContentText(m.Get("content")))
		}
		return true
	})
	if len(system) > 0 {
		out.MemberString("system", strings.Join(system, "\n\n"))
	}
	// cache_control (spec 2.1) puts the cache breakpoint on the last
	// cacheable block: the last content block of the last message.
	cache := req.Get("cache_control")
	msgs := req.Get("messages").Array()
	out.Member("messages", "[")
	first := true
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		var b []byte
		switch m.Get("role").Str {
		case "user":
			b = append(b, `{"role":"user","content":`...)
			b = userContent(b, m.Get("content"))
		case "assistant":
			b = append(b, `{"role":"assistant","content":`...)
			b = assistantContent(b, m)
		case "tool":
			// The results of one turn's parallel calls go in one user
			// message: Anthropic's parallel tool use guide says separate
			// messages teach the model to stop calling tools in parallel.
			b = append(b, `{"role":"user","content":[`...)
			for {
				b = toolResult(b, msgs[i])
				if i+1 == len(msgs) || msgs[i+1].Get("role").Str != "tool" {
					break
				}
				i++
				b = append(b, ',')
			}
			b = append(b, ']')
		default:
			continue
		}
		b = append(b, '}')
		if i == len(msgs)-1 && cache.IsObject() {
			b = withBreakpoint(b, cache)
		}
		if !first {
			out.Byte(',')
		}
		first = false
		out.Write(b)
	}
	out.Byte(']')

	if budget == 0 { // Anthropic refuses sampling parameters with thinking on
		for _, name := range []string{"temperature", "top_p", "top_k"} {
			if v := p.Get(name); v.Exists() {
				out.Member(name, v.Raw)
			}
		}
	}
	if v := p.Get("stop"); v.Exists() {
		if v.Type == gjson.String {
			out.Member("stop_sequences", "["+v.Raw+"]")
		} else {
			out.Member("stop_sequences", v.Raw)
		}
	}
	if req.Get("stream").Bool() {
		out.Member("stream", "true")
	}
	search, native := websearch.Requested(req)
	if tools := p.Get("tools"); (tools.IsArray() && len(tools.Array()) > 0) || native {
		var b []byte
		b = append(b, '[')
		i := 0
		tools.ForEach(func(_, t gjson.Result) bool {
			if i > 0 {
				b = append(b, ',')
			}
			i++
			f := t.Get("function")
			b = append(b, `{"name":`...)
			b = append(b, sdk.Quote(f.Get("name").Str)...)
			if d := f.Get("description"); d.Exists() {
				b = append(b, `,"description":`...)
				b = append(b, sdk.Quote(d.Str)...)
			}
			schema := f.Get("parameters").Raw
			if schema == "" {
				schema = `{"type":"object","properties":{}}`
			}
			b = append(b, `,"input_schema":`...)
			b = append(b, schema...)
			b = append(b, '}')
			return true
		})
		if native {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, webSearchTool(search)...)
		}
		b = append(b, ']')
		out.Member("tools", string(b))
		if tc := toolChoice(p.Get("tool_choice"), p.Get("parallel_tool_calls")); tc != "" {
			out.Member("tool_choice", tc)
		}
	}
	if u := req.Get("user"); u.Type == gjson.String && u.Str != "" {
		out.Member("metadata", `{"user_id":`+sdk.Quote(u.Str)+`}`)
	}
	out.Byte('}')
	out.Close()
	return nil
}

// webSearchTool is Anthropic's web search server tool for the web plugin's
// native engine (docs/web-search.md). Anthropic takes allowed_domains or
// blocked_domains, not both: include_domains wins when both are given.
func webSearchTool(o websearch.Options) string {
	t := `{"type":"web_search_20250305","name":"web_search"`
	if o.MaxUses > 0 {
		t += `,"max_uses":` + itoa(o.MaxUses)
	}
	domains := func(ds []string) string {
		q := make([]string, len(ds))
		for i, d := range ds {
			q[i] = sdk.Quote(websearch.Domain(d))
		}
		return "[" + strings.Join(q, ",") + "]"
	}
	switch {
	case len(o.Include) > 0:
		t += `,"allowed_domains":` + domains(o.Include)
	case len(o.Exclude) > 0:
		t += `,"blocked_domains":` + domains(o.Exclude)
	}
	if o.Location != "" {
		t += `,"user_location":{"type":"approximate"`
		for _, f := range websearch.LocationFields(o.Location) {
			t += "," + f
		}
		t += "}"
	}
	return t + "}"
}

// toolResult appends the tool_result block for a tool message.
func toolResult(b []byte, m gjson.Result) []byte {
	b = append(b, `{"type":"tool_result","tool_use_id":`...)
	b = append(b, sdk.Quote(m.Get("tool_call_id").Str)...)
	b = append(b, `,"content":`...)
	b = append(b, sdk.Quote(sdk.ContentText(m.Get("content")))...)
	return append(b, '}')
}

func toolChoice(tc, parallel gjson.Result) string {
	extra := ""
	if parallel.Exists() && !parallel.Bool() {
		extra = `,"disable_parallel_tool_use":true`
	}
	switch {
	case tc.Str == "none":
		return `{"type":"none"}`
	case tc.Str == "required":
		return `{"type":"any"` + extra + `}`
	case tc.Get("function.name").Exists():
		return `{"type":"tool","name":` + sdk.Quote(tc.Get("function.name").Str) + extra + `}`
	case extra != "":
		return `{"type":"auto"` + extra + `}`
	}
	return ""
}

// withBreakpoint adds cache_control to the last content block of message
// msg (a string content becomes one text block).
func withBreakpoint(msg []byte, cache gjson.Result) []byte {
	cc := `{"type":"ephemeral"}`
	if ttl := cache.Get("ttl"); ttl.Type == gjson.String {
		cc = `{"type":"ephemeral","ttl":` + sdk.Quote(ttl.Str) + `}`
	}
	content := gjson.GetBytes(msg, "content")
	if content.Type == gjson.String {
		out, err := sjson.SetRawBytes(msg, "content", []byte(`[{"type":"text","text":`+content.Raw+`,"cache_control":`+cc+`}]`))
		if err == nil {
			return out
		}
		return msg
	}
	if n := len(content.Array()); n > 0 {
		if out, err := sjson.SetRawBytes(msg, "content."+strconv.Itoa(n-1)+".cache_control", []byte(cc)); err == nil {
			return out
		}
	}
	return msg
}

func userContent(b []byte, c gjson.Result) []byte {
	if c.Type == gjson.String {
		return append(b, sdk.Quote(c.Str)...)
	}
	b = append(b, '[')
	n := 0
	c.ForEach(func(_, p gjson.Result) bool {
		var block string
		switch p.Get("type").Str {
		case "text":
			block = `{"type":"text","text":` + sdk.Quote(p.Get("text").Str)
			if cc := p.Get("cache_control"); cc.IsObject() { // a breakpoint the caller placed
				block += `,"cache_control":` + cc.Raw
			}
			block += `}`
		case "image_url":
			block = imageBlock(p.Get("image_url.url").Str)
		case "file":
			// A PDF for the model to read itself (the file-parser plugin's
			// native engine, or a request without the plugin).
			block = documentBlock(p.Get("file.file_data").Str)
		default:
			return true
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, block...)
		return true
	})
	return append(b, ']')
}

// imageBlock turns an image URL (https or a data: URL) into an image block.
func imageBlock(url string) string {
	if mediaType, data, ok := sdk.DataURL(url); ok {
		return `{"type":"image","source":{"type":"base64","media_type":` + sdk.Quote(mediaType) + `,"data":` + sdk.Quote(data) + `}}`
	}
	return `{"type":"image","source":{"type":"url","url":` + sdk.Quote(url) + `}}`
}

// documentBlock turns a file's data URL (or https URL) into a document
// block, Anthropic's PDF input.
func documentBlock(url string) string {
	if mediaType, data, ok := sdk.DataURL(url); ok {
		return `{"type":"document","source":{"type":"base64","media_type":` + sdk.Quote(mediaType) + `,"data":` + sdk.Quote(data) + `}}`
	}
	return `{"type":"document","source":{"type":"url","url":` + sdk.Quote(url) + `}}`
}

func assistantContent(b []byte, m gjson.Result) []byte {
	calls := m.Get("tool_calls")
	t := sdk.ContentText(m.Get("content"))
	if !calls.IsArray() || len(calls.Array()) == 0 {
		return append(b, sdk.Quote(t)...)
	}
	b = append(b, '[')
	n := 0
	if t != "" {
		b = append(b, `{"type":"text","text":`...)
		b = append(b, sdk.Quote(t)...)
		b = append(b, '}')
		n++
	}
	calls.ForEach(func(_, c gjson.Result) bool {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		input := c.Get("function.arguments").Str
		if !gjson.Valid(input) || !gjson.Parse(input).IsObject() {
			input = "{}"
		}
		b = append(b, `{"type":"tool_use","id":`...)
		b = append(b, sdk.Quote(c.Get("id").Str)...)
		b = append(b, `,"name":`...)
		b = append(b, sdk.Quote(c.Get("function.name").Str)...)
		b = append(b, `,"input":`...)
		b = append(b, input...)
		b = append(b, '}')
		return true
	})
	return append(b, ']')
}

var finishReasons = map[string]string{
	"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
	"pause_turn": "stop", "refusal": "content_filter",
}

// nativeFinish is Anthropic's stop_reason as OpenRouter's
// native_finish_reason (JSON): the reason as the provider gave it, null
// when it gave none.
func nativeFinish(s string) string {
	if s == "" {
		return "null"
	}
	return sdk.Quote(s)
}

func finishReason(s string) string {
	if f, ok := finishReasons[s]; ok {
		return f
	}
	return "stop"
}

// usage builds OpenAI usage from Anthropic counts: prompt tokens include
// the cached ones, which are reported again as cached_tokens.
func usage(input, cacheRead, cacheWrite, output int64) string {
	prompt := input + cacheRead + cacheWrite
	return `{"prompt_tokens":` + itoa(prompt) + `,"completion_tokens":` + itoa(output) + `,"total_tokens":` + itoa(prompt+output) +
		`,"prompt_tokens_details":{"cached_tokens":` + itoa(cacheRead) + `}}`
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// citations appends the url_citation annotations of a text block's
// web_search_result_location citations: each cites the whole block, which
// spans [start, end) of the message content (docs/web-search.md).
func citations(dst []string, cs gjson.Result, start, end int) []string {
	cs.ForEach(func(_, c gjson.Result) bool {
		if c.Get("type").Str == "web_search_result_location" {
			dst = append(dst, websearch.Annotation(c.Get("url").Str, c.Get("title").Str, c.Get("cited_text").Str, start, end))
		}
		return true
	})
	return dst
}

// withSearches adds Anthropic's count of server-side web searches to the
// usage object u as usage.server_tool_use.web_search_requests.
func withSearches(usage string, u gjson.Result) string {
	n := u.Get("server_tool_use.web_search_requests").Int()
	if n == 0 {
		return usage
	}
	return usage[:len(usage)-1] + `,"server_tool_use":{"web_search_requests":` + itoa(n) + `}}`
}

// ChatResponse is the chat_response hook.
func ChatResponse(in *sdk.In, out *sdk.Out) error {
	msg := gjson.ParseBytes(in.Field(1))
	if msg.Get("type").Str != "message" {
		return sdk.Error("upstream response is not an Anthropic message")
	}
	var content, reasoning strings.Builder
	var calls, annotations []string
	runes := 0 // code points of content so far: the unit of annotation indices
	msg.Get("content").ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").Str {
		case "text":
			text := b.Get("text").Str
			start := runes
			runes += websearch.Runes(text)
			content.WriteString(text)
			annotations = citations(annotations, b.Get("citations"), start, runes)
		case "thinking":
			reasoning.WriteString(b.Get("thinking").Str)
		case "tool_use":
			calls = append(calls, `{"id":`+sdk.Quote(b.Get("id").Str)+`,"type":"function","function":{"name":`+sdk.Quote(b.Get("name").Str)+`,"arguments":`+sdk.Quote(b.Get("input").Raw)+`}}`)
		}
		return true
	})
	u := msg.Get("usage")
	var b strings.Builder
	b.WriteString(`{"id":` + sdk.Quote(msg.Get("id").Str) + `,"object":"chat.completion","model":` + sdk.Quote(msg.Get("model").Str))
	b.WriteString(`,"choices":[{"index":0,"message":{"role":"assistant","content":`)
	if content.Len() == 0 && len(calls) > 0 {
		b.WriteString("null")
	} else {
		b.WriteString(sdk.Quote(content.String()))
	}
	if reasoning.Len() > 0 {
		b.WriteString(`,"reasoning":` + sdk.Quote(reasoning.String()))
	}
	if len(calls) > 0 {
		b.WriteString(`,"tool_calls":[` + strings.Join(calls, ",") + `]`)
	}
	if len(annotations) > 0 {
		b.WriteString(`,"annotations":[` + strings.Join(annotations, ",") + `]`)
	}
	b.WriteString(`},"finish_reason":` + sdk.Quote(finishReason(msg.Get("stop_reason").Str)) +
		`,"native_finish_reason":` + nativeFinish(msg.Get("stop_reason").Str) + `}]`)
	b.WriteString(`,"usage":` + withSearches(usage(u.Get("input_tokens").Int(), u.Get("cache_read_input_tokens").Int(), u.Get("cache_creation_input_tokens").Int(), u.Get("output_tokens").Int()), u))
	b.WriteString(`,"system_fingerprint":null}`)
	out.FieldString(b.String())
	return nil
}

// streamState is what later events of a Messages stream need: the ids and
// input counts of message_start, the index of the current tool call, the
// code points of content sent so far and where the current text block
// began (annotation indices), the citations of that block (sent when it
// ends, once its span is known), and whether the current block is a server
// tool's (web_search), whose input is not a client's tool call.
type streamState struct {
	ID, Model    string
	In, CR, CW   int64
	Tool         int64
	Runes, Start int64
	Server       bool
	Cites        string // raw JSON array of citations, or ""
}

// The state is written and read by hand (gjson), not with encoding/json:
// it crosses the boundary on every event of every stream.
// It is written piecewise into the output field, making no strings.
func (st *streamState) write(out *sdk.Out) {
	out.Open()
	out.WriteString(`{"id":`)
	out.WriteQuoted(st.ID)
	out.WriteString(`,"model":`)
	out.WriteQuoted(st.Model)
	for _, f := range [...]struct {
		name string
		v    int64
	}{{`,"in":`, st.In}, {`,"cr":`, st.CR}, {`,"cw":`, st.CW}, {`,"tool":`, st.Tool}} {
		out.WriteString(f.name)
		out.WriteInt(f.v)
	}
	if st.Runes > 0 {
		out.WriteString(`,"n":`)
		out.WriteInt(st.Runes)
		out.WriteString(`,"bs":`)
		out.WriteInt(st.Start)
	}
	if st.Server {
		out.WriteString(`,"srv":true`)
	}
	if st.Cites != "" {
		out.WriteString(`,"cit":`)
		out.WriteString(st.Cites)
	}
	out.Byte('}')
	out.Close()
}

// view is b as a string without a copy, for gjson: a hook's input fields
// stay put for the call, and no string read from them outlives it
// (everything written out is copied into the output).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func readState(raw []byte) streamState {
	g := gjson.Parse(view(raw))
	st := streamState{ID: g.Get("id").Str, Model: g.Get("model").Str, In: g.Get("in").Int(), CR: g.Get("cr").Int(), CW: g.Get("cw").Int(),
		Tool: -1, Runes: g.Get("n").Int(), Start: g.Get("bs").Int(), Server: g.Get("srv").Bool(), Cites: g.Get("cit").Raw}
	if t := g.Get("tool"); t.Exists() {
		st.Tool = t.Int()
	}
	return st
}

// StreamEvent is the chat_stream_event hook: it translates one Messages
// stream event (state: streamState).
func StreamEvent(in *sdk.In, out *sdk.Out) error {
	ev := gjson.Parse(view(in.Field(1)))
	st := readState(in.Field(2))
	// The chunks are written piecewise: this runs once per event of every
	// stream from an Anthropic-format provider.
	chunkHead := func() {
		out.Open()
		out.WriteString(`{"id":`)
		out.WriteQuoted(st.ID)
		out.WriteString(`,"object":"chat.completion.chunk","model":`)
		out.WriteQuoted(st.Model)
		out.WriteString(`,"choices":`)
	}
	chunk := func(choices string) {
		chunkHead()
		out.WriteString(choices)
		out.Byte('}')
		out.Close()
	}
	// deltaHead opens a one-choice chunk up to its delta's value; the
	// caller writes the value and calls deltaEnd.
	deltaHead := func() {
		chunkHead()
		out.WriteString(`[{"index":0,"delta":`)
	}
	deltaEnd := func() {
		out.WriteString(`,"finish_reason":null}]}`)
		out.Close()
	}
	delta := func(d string) {
		deltaHead()
		out.WriteString(d)
		deltaEnd()
	}

	switch ev.Get("type").Str {
	case "message_start":
		m := ev.Get("message")
		u := m.Get("usage")
		st = streamState{ID: m.Get("id").Str, Model: m.Get("model").Str, In: u.Get("input_tokens").Int(),
			CR: u.Get("cache_read_input_tokens").Int(), CW: u.Get("cache_creation_input_tokens").Int(), Tool: -1}
		st.write(out)
		delta(`{"role":"assistant","content":""}`)
	case "content_block_start":
		b := ev.Get("content_block")
		st.Server = b.Get("type").Str == "server_tool_use"
		st.Start = st.Runes
		if b.Get("type").Str != "tool_use" {
			st.write(out)
			return nil
		}
		st.Tool++
		st.write(out)
		delta(`{"tool_calls":[{"index":` + itoa(st.Tool) + `,"id":` + sdk.Quote(b.Get("id").Str) + `,"type":"function","function":{"name":` + sdk.Quote(b.Get("name").Str) + `,"arguments":""}}]}`)
	case "content_block_delta":
		d := ev.Get("delta")
		switch d.Get("type").Str {
		case "text_delta":
			text := d.Get("text").Str
			st.Runes += int64(websearch.Runes(text))
			st.write(out)
			deltaHead()
			out.WriteString(`{"content":`)
			out.WriteQuoted(text)
			out.Byte('}')
			deltaEnd()
		case "thinking_delta":
			out.Field(in.Field(2))
			delta(`{"reasoning":` + sdk.Quote(d.Get("thinking").Str) + `}`)
		case "input_json_delta":
			out.Field(in.Field(2))
			if !st.Server { // a server tool's query is Anthropic's business
				delta(`{"tool_calls":[{"index":` + itoa(st.Tool) + `,"function":{"arguments":` + sdk.Quote(d.Get("partial_json").Str) + `}}]}`)
			}
		case "citations_delta":
			c := d.Get("citation")
			if c.Get("type").Str == "web_search_result_location" {
				if st.Cites == "" {
					st.Cites = "[" + c.Raw + "]"
				} else {
					st.Cites = st.Cites[:len(st.Cites)-1] + "," + c.Raw + "]"
				}
			}
			st.write(out)
		default:
			out.Field(in.Field(2))
		}
	case "content_block_stop":
		if len(st.Cites) == 0 {
			out.Field(in.Field(2))
			return nil
		}
		anns := citations(nil, gjson.Parse(st.Cites), int(st.Start), int(st.Runes))
		st.Cites = ""
		st.write(out)
		delta(`{"annotations":[` + strings.Join(anns, ",") + `]}`)
	case "message_delta":
		out.Field(in.Field(2))
		fr := finishReason(ev.Get("delta.stop_reason").Str)
		chunk(`[{"index":0,"delta":{},"finish_reason":` + sdk.Quote(fr) + `,"native_finish_reason":` +
			nativeFinish(ev.Get("delta.stop_reason").Str) + `}]`)
		u := ev.Get("usage")
		in0 := st.In
		if v := u.Get("input_tokens"); v.Exists() && v.Int() > 0 {
			in0 = v.Int()
		}
		chunk(`[],"usage":` + withSearches(usage(in0, st.CR, st.CW, u.Get("output_tokens").Int()), u))
	case "error":
		out.Field(in.Field(2))
		out.FieldString(`{"error":{"message":` + sdk.Quote(ev.Get("error.message").Str) + `,"type":` + sdk.Quote(ev.Get("error.type").Str) + `}}`)
	default: // ping, message_stop
		out.Field(in.Field(2))
	}
	return nil
}

// MapError is the error hook: Anthropic's statuses mean what the gateway's
// do and its error bodies carry error.message.
func MapError(in *sdk.In, out *sdk.Out) error { return sdk.MapError(in, out) }
