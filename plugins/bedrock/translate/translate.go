// Package translate is the Bedrock adapter's translation, for Amazon
// Bedrock's Converse and ConverseStream APIs (one request shape for every
// model family Bedrock serves: Anthropic, Meta, Mistral, Amazon Nova, …).
//
// Credentials: the host signs the request with SigV4 (provider auth
// scheme aws-sigv4, host/credentials), after this module wrote it; with a
// Bedrock API key instead (api_key_env, no auth block) the key goes as a
// bearer token through the ${API_KEY} placeholder. Streams: ConverseStream
// answers in AWS's binary event-stream framing, which the host decodes
// (host/eventstream); each frame reaches StreamEvent as the JSON union
// member the SDKs build from it, {"contentBlockDelta": {...}}.
//
// It is a plain package so it builds for the host too: the module's main
// only registers these handlers, and the tests run them natively against
// payloads from the Bedrock API reference (testdata/SOURCES.md).
package translate

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// Adapter holds what differs between builds of the module.
type Adapter struct {
	// Build is stamped into the X-Switchyard-Adapter request header.
	Build string
}

const headers = "Authorization: Bearer " + abi.APIKeyPlaceholder + "\nContent-Type: application/json\nAccept: application/json\n"

// ChatRequest is the chat_request hook: a Converse request.
func (a *Adapter) ChatRequest(in *sdk.In, out *sdk.Out) error {
	ctx := in.Field(0)
	var p sdk.Params
	req := p.Load(ctx, in.Field(1))
	// A model id may be an ARN (an inference profile): escaped as one
	// path segment, as the SDK does.
	model := url.PathEscape(sdk.Get(ctx, "model").Str)
	out.FieldString("POST")
	if req.Get("stream").Bool() {
		out.FieldString("/model/" + model + "/converse-stream")
	} else {
		out.FieldString("/model/" + model + "/converse")
	}
	out.FieldString(headers + "X-Switchyard-Adapter: " + a.Build + "\n")

	var system []string
	var msgs []message
	var bad error
	req.Get("messages").ForEach(func(_, m gjson.Result) bool {
		switch m.Get("role").Str {
		case "system", "developer":
			if c := m.Get("content"); c.IsArray() {
				c.ForEach(func(_, part gjson.Result) bool {
					if t := part.Get("text").Str; t != "" {
						system = append(system, `{"text":`+sdk.Quote(t)+`}`)
						system = appendCachePoint(system, part)
					}
					return true
				})
			} else if t := sdk.ContentText(m.Get("content")); t != "" {
				system = append(system, `{"text":`+sdk.Quote(t)+`}`)
			}
		case "user":
			var blocks []string
			blocks, bad = userBlocks(m.Get("content"))
			msgs = appendMessage(msgs, "user", blocks...)
		case "assistant":
			var blocks []string
			if t := sdk.ContentText(m.Get("content")); t != "" {
				blocks = append(blocks, `{"text":`+sdk.Quote(t)+`}`)
			}
			m.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
				args := c.Get("function.arguments").Str
				if !gjson.Valid(args) || !gjson.Parse(args).IsObject() {
					args = "{}"
				}
				blocks = append(blocks, `{"toolUse":{"toolUseId":`+sdk.Quote(c.Get("id").Str)+`,"name":`+sdk.Quote(c.Get("function.name").Str)+`,"input":`+args+`}}`)
				return true
			})
			if len(blocks) > 0 {
				msgs = appendMessage(msgs, "assistant", blocks...)
			}
		case "tool":
			// Tool results are user content in Converse; the results of
			// one turn's parallel calls share one user message.
			msgs = appendMessage(msgs, "user", `{"toolResult":{"toolUseId":`+sdk.Quote(m.Get("tool_call_id").Str)+
				`,"content":[{"text":`+sdk.Quote(sdk.ContentText(m.Get("content")))+`}]}}`)
		}
		return bad == nil
	})
	if bad != nil {
		return bad
	}
	out.Open()
	out.Byte('{')
	var b strings.Builder
	b.WriteByte('[')
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"` + m.role + `","content":[` + strings.Join(m.blocks, ",") + `]}`)
	}
	b.WriteByte(']')
	out.Member("messages", b.String())
	if len(system) > 0 {
		out.Member("system", "["+strings.Join(system, ",")+"]")
	}
	var ic []string
	budget := thinking(req, &p, sdk.Get(ctx, "model").Str)
	maxTokens := p.Get("max_completion_tokens")
	if !maxTokens.Exists() {
		maxTokens = p.Get("max_tokens")
	}
	switch {
	case budget > 0 && (!maxTokens.Exists() || maxTokens.Int() <= budget):
		// Claude wants room to answer beyond its thinking budget.
		ic = append(ic, `"maxTokens":`+itoa(budget+4096))
	case maxTokens.Exists():
		ic = append(ic, `"maxTokens":`+maxTokens.Raw)
	}
	for _, name := range [][2]string{{"temperature", "temperature"}, {"top_p", "topP"}} {
		if v := p.Get(name[0]); v.Exists() {
			ic = append(ic, sdk.Quote(name[1])+":"+v.Raw)
		}
	}
	if v := p.Get("stop"); v.Exists() {
		if v.Type == gjson.String {
			ic = append(ic, `"stopSequences":[`+v.Raw+`]`)
		} else {
			ic = append(ic, `"stopSequences":`+v.Raw)
		}
	}
	if len(ic) > 0 {
		out.Member("inferenceConfig", "{"+strings.Join(ic, ",")+"}")
	}
	if tc := toolConfig(p.Get("tools"), p.Get("tool_choice")); tc != "" {
		out.Member("toolConfig", tc)
	}
	// Model-specific fields, outside Converse's common ones: top_k (not in
	// inferenceConfig; Anthropic's and others' models take it here) and
	// Claude's extended thinking.
	var extra []string
	if v := p.Get("top_k"); v.Exists() {
		extra = append(extra, `"top_k":`+v.Raw)
	}
	if budget > 0 {
		extra = append(extra, `"thinking":{"type":"enabled","budget_tokens":`+itoa(budget)+`}`)
	}
	if len(extra) > 0 {
		out.Member("additionalModelRequestFields", "{"+strings.Join(extra, ",")+"}")
	}
	out.Byte('}')
	out.Close()
	return nil
}

// thinkingBudget is the thinking budget of each reasoning effort, as the
// anthropic adapter sends it to Claude.
var thinkingBudget = map[string]int64{"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32000, "max": 32000}

// thinking is the thinking budget a request asks for (reasoning_effort,
// reasoning.effort or reasoning.max_tokens), for Claude models only:
// Converse passes reasoning settings through as model-specific fields,
// and only Anthropic's take them in this form (model ids
// anthropic.claude-…, or an inference profile us.anthropic.claude-…).
func thinking(req gjson.Result, p *sdk.Params, model string) int64 {
	if !strings.Contains(model, "anthropic.claude") || p.Dropped("reasoning") || p.Dropped("reasoning_effort") {
		return 0
	}
	effort := req.Get("reasoning.effort").Str
	if e := req.Get("reasoning_effort").Str; e != "" {
		effort = e
	}
	if mt := req.Get("reasoning.max_tokens"); mt.Exists() {
		return mt.Int()
	}
	return thinkingBudget[effort]
}

type message struct {
	role   string
	blocks []string
}

// appendMessage adds blocks as a message of role, or to the last message
// when it has the same role: Converse wants the roles to alternate (a
// tool result followed by the user's words is one user message).
func appendMessage(msgs []message, role string, blocks ...string) []message {
	if len(blocks) == 0 {
		return msgs
	}
	if n := len(msgs); n > 0 && msgs[n-1].role == role {
		msgs[n-1].blocks = append(msgs[n-1].blocks, blocks...)
		return msgs
	}
	return append(msgs, message{role: role, blocks: blocks})
}

var formats = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp"}

var docFormats = map[string]string{"application/pdf": "pdf", "text/csv": "csv", "text/plain": "txt", "text/html": "html", "text/markdown": "md",
	"application/msword": "doc", "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
	"application/vnd.ms-excel": "xls", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx"}

// userBlocks translates a user message's content: text, images and
// files given as data URLs (Converse takes bytes, or S3 locations the
// gateway does not have; a web URL cannot be passed on).
func userBlocks(c gjson.Result) ([]string, error) {
	if c.Type == gjson.String {
		if c.Str == "" {
			return nil, nil
		}
		return []string{`{"text":` + sdk.Quote(c.Str) + `}`}, nil
	}
	var blocks []string
	var err error
	c.ForEach(func(_, part gjson.Result) bool {
		switch part.Get("type").Str {
		case "text":
			if t := part.Get("text").Str; t != "" {
				blocks = append(blocks, `{"text":`+sdk.Quote(t)+`}`)
				blocks = appendCachePoint(blocks, part)
			}
		case "image_url":
			mt, data, ok := sdk.DataURL(part.Get("image_url.url").Str)
			f := formats[mt]
			if !ok || f == "" {
				err = sdk.Error("Bedrock takes images as base64 data URLs of PNG, JPEG, GIF or WebP; this image is a web URL or another type")
				return false
			}
			blocks = append(blocks, `{"image":{"format":"`+f+`","source":{"bytes":`+sdk.Quote(data)+`}}}`)
		case "file":
			mt, data, ok := sdk.DataURL(part.Get("file.file_data").Str)
			f := docFormats[mt]
			if !ok || f == "" {
				err = sdk.Error("Bedrock takes documents as base64 data URLs (PDF, CSV, DOC(X), XLS(X), HTML, TXT, MD)")
				return false
			}
			blocks = append(blocks, `{"document":{"format":"`+f+`","name":`+sdk.Quote(docName(part.Get("file.filename").Str, len(blocks)))+`,"source":{"bytes":`+sdk.Quote(data)+`}}}`)
		}
		return true
	})
	return blocks, err
}

// appendCachePoint marks the end of a cached prefix: a content part with
// cache_control (Anthropic's marker, as OpenRouter-style clients send it)
// is followed by Converse's cachePoint block, which caches everything
// before it on the models that support prompt caching.
func appendCachePoint(blocks []string, part gjson.Result) []string {
	if part.Get("cache_control").Exists() {
		blocks = append(blocks, `{"cachePoint":{"type":"default"}}`)
	}
	return blocks
}

// docName is a document's name as Bedrock allows it (letters, digits,
// single spaces, hyphens, parentheses, brackets), without its extension.
func docName(name string, i int) string {
	if dot := strings.LastIndexByte(name, '.'); dot > 0 {
		name = name[:dot]
	}
	var b strings.Builder
	space := false
	for _, r := range name {
		ok := r == '-' || r == '(' || r == ')' || r == '[' || r == ']' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if ok {
			b.WriteRune(r)
			space = false
		} else if !space && b.Len() > 0 {
			b.WriteByte(' ')
			space = true
		}
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		return s
	}
	return "document " + strconv.Itoa(i+1)
}

// toolConfig translates function tools and tool_choice; "none" sends no
// tools (Converse has no "none" choice).
func toolConfig(tools, choice gjson.Result) string {
	if !tools.IsArray() || len(tools.Array()) == 0 || choice.Str == "none" {
		return ""
	}
	var specs []string
	tools.ForEach(func(_, t gjson.Result) bool {
		if t.Get("type").Str != "function" {
			return true
		}
		f := t.Get("function")
		params := f.Get("parameters").Raw
		if params == "" {
			params = `{"type":"object","properties":{}}`
		}
		spec := `{"toolSpec":{"name":` + sdk.Quote(f.Get("name").Str)
		if d := f.Get("description").Str; d != "" {
			spec += `,"description":` + sdk.Quote(d)
		}
		specs = append(specs, spec+`,"inputSchema":{"json":`+params+`}}}`)
		return true
	})
	if len(specs) == 0 {
		return ""
	}
	tc := `{"tools":[` + strings.Join(specs, ",") + `]`
	switch {
	case choice.Str == "required":
		tc += `,"toolChoice":{"any":{}}`
	case choice.Str == "auto":
		tc += `,"toolChoice":{"auto":{}}`
	case choice.Get("function.name").Exists():
		tc += `,"toolChoice":{"tool":{"name":` + sdk.Quote(choice.Get("function.name").Str) + `}}`
	}
	return tc + "}"
}

// finishReason maps Converse's stopReason.
func finishReason(s string) string {
	switch s {
	case "end_turn", "stop_sequence":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "guardrail_intervened", "content_filtered":
		return "content_filter"
	case "":
		return "stop"
	}
	return "stop"
}

// usage maps Converse's usage (cache reads count in the prompt, as
// OpenAI counts cached tokens).
func usage(u gjson.Result) string {
	in, outTok := u.Get("inputTokens").Int(), u.Get("outputTokens").Int()
	cr, cw := u.Get("cacheReadInputTokens").Int(), u.Get("cacheWriteInputTokens").Int()
	prompt := in + cr + cw
	s := `{"prompt_tokens":` + itoa(prompt) + `,"completion_tokens":` + itoa(outTok) + `,"total_tokens":` + itoa(prompt+outTok)
	if cr > 0 || cw > 0 {
		s += `,"prompt_tokens_details":{"cached_tokens":` + itoa(cr) + `,"cache_write_tokens":` + itoa(cw) + `}`
	}
	return s + "}"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// ChatResponse is the chat_response hook: a Converse response.
func ChatResponse(in *sdk.In, out *sdk.Out) error {
	resp := gjson.ParseBytes(in.Field(1))
	msg := resp.Get("output.message")
	if !msg.Exists() {
		return sdk.Error("upstream response has no output.message")
	}
	var text, reasoning strings.Builder
	var calls []string
	msg.Get("content").ForEach(func(_, b gjson.Result) bool {
		switch {
		case b.Get("text").Exists():
			text.WriteString(b.Get("text").Str)
		case b.Get("reasoningContent").Exists():
			reasoning.WriteString(b.Get("reasoningContent.reasoningText.text").Str)
		case b.Get("toolUse").Exists():
			tu := b.Get("toolUse")
			calls = append(calls, `{"id":`+sdk.Quote(tu.Get("toolUseId").Str)+`,"type":"function","function":{"name":`+sdk.Quote(tu.Get("name").Str)+`,"arguments":`+sdk.Quote(orEmpty(tu.Get("input").Raw))+`}}`)
		}
		return true
	})
	var b strings.Builder
	b.WriteString(`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":`)
	if text.Len() == 0 && len(calls) > 0 {
		b.WriteString("null")
	} else {
		b.WriteString(sdk.Quote(text.String()))
	}
	if reasoning.Len() > 0 {
		b.WriteString(`,"reasoning":` + sdk.Quote(reasoning.String()))
	}
	if len(calls) > 0 {
		b.WriteString(`,"tool_calls":[` + strings.Join(calls, ",") + `]`)
	}
	stop := resp.Get("stopReason").Str
	b.WriteString(`},"finish_reason":` + sdk.Quote(finishReason(stop)) + `,"native_finish_reason":` + sdk.Quote(stop) + `}]`)
	b.WriteString(`,"usage":` + usage(resp.Get("usage")) + `}`)
	out.FieldString(b.String())
	return nil
}

func orEmpty(raw string) string {
	if raw == "" {
		return "{}"
	}
	return raw
}

// StreamEvent is the chat_stream_event hook: one ConverseStream event as
// the host decoded it ({"<member>": {...}}). State: {"calls": n, "idx":
// {"<contentBlockIndex>": toolCallIndex}, "stop": reason}: the tool calls
// numbered so far and which content block each is (their argument deltas
// name only the block), and the stop reason, which comes in messageStop
// while the usage comes after it in metadata.
func StreamEvent(in *sdk.In, out *sdk.Out) error {
	ev := gjson.ParseBytes(in.Field(1))
	st := gjson.ParseBytes(in.Field(2))
	calls := st.Get("calls").Int()
	idx := st.Get("idx")
	stop := st.Get("stop").Str
	head := `{"object":"chat.completion.chunk","choices":`
	var chunk string
	var member string
	var body gjson.Result
	ev.ForEach(func(k, v gjson.Result) bool { member, body = k.Str, v; return false })
	switch member {
	case "messageStart":
		chunk = head + `[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	case "contentBlockStart":
		if tu := body.Get("start.toolUse"); tu.Exists() {
			block := body.Get("contentBlockIndex").Raw
			idx = gjson.Parse(setMember(idx.Raw, block, itoa(calls)))
			chunk = head + `[{"index":0,"delta":{"tool_calls":[{"index":` + itoa(calls) + `,"id":` + sdk.Quote(tu.Get("toolUseId").Str) +
				`,"type":"function","function":{"name":` + sdk.Quote(tu.Get("name").Str) + `,"arguments":""}}]},"finish_reason":null}]}`
			calls++
		}
	case "contentBlockDelta":
		d := body.Get("delta")
		switch {
		case d.Get("text").Exists():
			chunk = head + `[{"index":0,"delta":{"content":` + sdk.Quote(d.Get("text").Str) + `},"finish_reason":null}]}`
		case d.Get("toolUse").Exists():
			n := idx.Get(body.Get("contentBlockIndex").Raw).Int()
			chunk = head + `[{"index":0,"delta":{"tool_calls":[{"index":` + itoa(n) + `,"function":{"arguments":` + sdk.Quote(d.Get("toolUse.input").Str) + `}}]},"finish_reason":null}]}`
		case d.Get("reasoningContent.text").Exists():
			chunk = head + `[{"index":0,"delta":{"reasoning":` + sdk.Quote(d.Get("reasoningContent.text").Str) + `},"finish_reason":null}]}`
		}
	case "messageStop":
		stop = body.Get("stopReason").Str
		if stop == "" {
			stop = "end_turn"
		}
		chunk = head + `[{"index":0,"delta":{},"finish_reason":` + sdk.Quote(finishReason(stop)) + `,"native_finish_reason":` + sdk.Quote(stop) + `}]}`
	case "metadata":
		if u := body.Get("usage"); u.Exists() {
			chunk = head + `[],"usage":` + usage(u) + `}`
		}
	case "contentBlockStop", "":
	default:
		// An exception inside the stream (throttlingException,
		// modelStreamErrorException, validationException, …): the
		// gateway's in-stream error.
		chunk = `{"error":{"message":` + sdk.Quote(exceptionMessage(member, body)) + `}}`
	}
	state := `{"calls":` + itoa(calls)
	if idx.Raw != "" {
		state += `,"idx":` + idx.Raw
	}
	if stop != "" {
		state += `,"stop":` + sdk.Quote(stop)
	}
	out.FieldString(state + "}")
	if chunk != "" {
		out.FieldString(chunk)
	}
	return nil
}

func exceptionMessage(member string, body gjson.Result) string {
	msg := body.Get("message").Str
	if msg == "" {
		msg = body.Get("Message").Str
	}
	name := strings.ToUpper(member[:1]) + member[1:]
	return name + ": " + msg
}

// setMember returns the JSON object obj with key set to the raw value.
func setMember(obj, key, raw string) string {
	k := sdk.Quote(strings.Trim(key, `"`))
	if obj == "" || obj == "{}" {
		return "{" + k + ":" + raw + "}"
	}
	return obj[:len(obj)-1] + "," + k + ":" + raw + "}"
}

// MapError is the error hook. Bedrock's statuses mostly mean the
// gateway's already (ThrottlingException 429, ValidationException 400,
// ServiceUnavailableException 503, InternalServerException 500); the
// exceptions whose status does not are recognised by the type AWS puts in
// the body (__type) or their documented message: ModelNotReadyException
// (429 from AWS: the model is being loaded, not a rate limit) is a 503 the
// router fails over on; ModelTimeoutException (408) a 524;
// AccessDeniedException (403: the gateway's IAM identity lacks access to
// this model) the credentials 502; ResourceNotFoundException (404) a 502
// naming the model; ServiceQuotaExceededException (400: the account's
// quota, the operator's money, not the caller's) a 429.
func MapError(in *sdk.In, out *sdk.Out) error {
	status, _ := strconv.Atoi(in.String(1))
	body := in.Field(2)
	msg := sdk.ErrorMessage(body)
	if msg == "" {
		msg = sdk.Get(body, "Message").Str
	}
	typ := sdk.Get(body, "__type").Str
	if i := strings.LastIndexAny(typ, "#"); i >= 0 {
		typ = typ[i+1:]
	}
	if i := strings.IndexByte(typ, ':'); i >= 0 {
		typ = typ[:i]
	}
	lower := strings.ToLower(msg)
	switch {
	case typ == "ModelNotReadyException" || (status == 429 && strings.Contains(lower, "not ready")):
		status = 503
	case typ == "ServiceQuotaExceededException" || (status == 400 && strings.Contains(lower, "quota")):
		status = 429
	case typ == "ModelTimeoutException":
		status = 408
	case typ == "ModelErrorException" || status == 424:
		status = 502
	}
	sdk.UpstreamError(out, status, msg)
	return nil
}
