// Package translate is the Cohere adapter's translation, for Cohere's v2
// Chat API (POST /v2/chat) and Embed API (POST /v2/embed): it turns the
// unified (OpenAI-shaped) requests into Cohere's, and Cohere's answers,
// stream events and errors back into chat completions, chunks, embedding
// lists and the gateway's statuses. The key goes as a bearer token through
// the host's ${API_KEY} placeholder.
//
// It is a plain package so it builds for the host too: the module's main
// only registers these handlers, and the tests run them natively against
// payloads from Cohere's v2 API reference (testdata/SOURCES.md).
package translate

import (
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

func (a *Adapter) headers() string {
	return "Authorization: Bearer " + abi.APIKeyPlaceholder + "\nContent-Type: application/json\nAccept: application/json\nX-Switchyard-Adapter: " + a.Build + "\n"
}

// ChatRequest is the chat_request hook: a chat request as a v2 Chat
// request (https://docs.cohere.com/reference/chat). Cohere's messages and
// tools are OpenAI's shape (roles system, user, assistant, tool; function
// tools; tool_calls with id, type and function), so what changes is the
// parameters' names and the content parts Cohere takes.
func (a *Adapter) ChatRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	var p sdk.Params
	req := p.Load(ctx, body)
	var b strings.Builder
	b.WriteString(`{"model":` + sdk.Quote(sdk.Get(ctx, "model").Str))
	msgs, err := messages(req.Get("messages"))
	if err != nil {
		return err
	}
	b.WriteString(`,"messages":` + msgs)

	tools, choice := req.Get("tools"), p.Get("tool_choice")
	if named := choice.Get("function.name"); named.Exists() {
		// Cohere's tool_choice is REQUIRED or NONE, with no way to name one
		// tool: a named choice is REQUIRED with only that tool offered.
		tools = onlyTool(tools, named.Str)
	}
	if t := functionTools(tools); t != "" {
		b.WriteString(`,"tools":` + t)
		switch {
		case choice.Str == "required" || choice.IsObject():
			b.WriteString(`,"tool_choice":"REQUIRED"`)
		case choice.Str == "none":
			b.WriteString(`,"tool_choice":"NONE"`)
		}
	}
	if v := p.Get("max_completion_tokens"); v.Exists() {
		b.WriteString(`,"max_tokens":` + v.Raw)
	} else if v := p.Get("max_tokens"); v.Exists() {
		b.WriteString(`,"max_tokens":` + v.Raw)
	}
	if v := p.Get("stop"); v.Type == gjson.String {
		b.WriteString(`,"stop_sequences":[` + v.Raw + `]`)
	} else if v.IsArray() {
		b.WriteString(`,"stop_sequences":` + v.Raw)
	}
	for _, m := range [...]struct{ from, to string }{
		{"temperature", "temperature"}, {"seed", "seed"}, {"frequency_penalty", "frequency_penalty"},
		{"presence_penalty", "presence_penalty"}, {"top_p", "p"}, {"top_k", "k"},
	} {
		if v := p.Get(m.from); v.Exists() {
			b.WriteString(`,"` + m.to + `":` + v.Raw)
		}
	}
	if rf := p.Get("response_format"); rf.Exists() {
		switch rf.Get("type").Str {
		case "json_object":
			b.WriteString(`,"response_format":{"type":"json_object"}`)
		case "json_schema":
			// Cohere's JSON mode takes the schema itself beside the type.
			b.WriteString(`,"response_format":{"type":"json_object","json_schema":` + rf.Get("json_schema.schema").Raw + `}`)
		}
	}
	if t := thinking(&p); t != "" {
		b.WriteString(`,"thinking":` + t)
	}
	if req.Get("stream").Bool() {
		b.WriteString(`,"stream":true`)
	}
	b.WriteString("}")
	out.FieldString("POST")
	out.FieldString("/v2/chat")
	out.FieldString(a.headers())
	out.FieldString(b.String())
	return nil
}

// thinking is Cohere's thinking parameter for the request's reasoning
// (reasoning models, https://docs.cohere.com/docs/reasoning): a token
// budget when one is given, disabled for effort none, enabled for another
// effort; "" when the request asks nothing.
func thinking(p *sdk.Params) string {
	r := p.Get("reasoning")
	effort := r.Get("effort").Str
	if e := p.Get("reasoning_effort"); e.Type == gjson.String {
		effort = e.Str
	}
	switch {
	case r.Get("max_tokens").Type == gjson.Number:
		return `{"type":"enabled","token_budget":` + r.Get("max_tokens").Raw + `}`
	case effort == "none":
		return `{"type":"disabled"}`
	case effort != "":
		return `{"type":"enabled"}`
	}
	return ""
}

// messages writes the conversation in Cohere's roles: a developer message
// is a system message; content parts are text and image_url, the parts
// Cohere's messages take.
func messages(ms gjson.Result) (string, error) {
	var b strings.Builder
	b.WriteByte('[')
	var err error
	ms.ForEach(func(_, m gjson.Result) bool {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		role := m.Get("role").Str
		if role == "developer" {
			role = "system"
		}
		b.WriteString(`{"role":` + sdk.Quote(role))
		switch role {
		case "tool":
			b.WriteString(`,"tool_call_id":` + sdk.Quote(m.Get("tool_call_id").Str) + `,"content":` + sdk.Quote(sdk.ContentText(m.Get("content"))))
		case "assistant":
			if c := m.Get("content"); c.Type == gjson.String && c.Str != "" || c.IsArray() {
				b.WriteString(`,"content":` + sdk.Quote(sdk.ContentText(c)))
			}
			if tc := m.Get("tool_calls"); tc.IsArray() && len(tc.Array()) > 0 {
				b.WriteString(`,"tool_calls":` + tc.Raw)
			}
		default:
			var c string
			if c, err = content(m.Get("content")); err != nil {
				return false
			}
			b.WriteString(`,"content":` + c)
		}
		b.WriteByte('}')
		return true
	})
	b.WriteByte(']')
	return b.String(), err
}

// content is a system or user message's content: a string as it is, parts
// as Cohere's text and image_url parts.
func content(c gjson.Result) (string, error) {
	if !c.IsArray() {
		return sdk.Quote(c.Str), nil
	}
	parts := make([]string, 0, 2)
	var err error
	c.ForEach(func(_, part gjson.Result) bool {
		switch t := part.Get("type").Str; t {
		case "text":
			parts = append(parts, `{"type":"text","text":`+sdk.Quote(part.Get("text").Str)+`}`)
		case "image_url":
			parts = append(parts, `{"type":"image_url","image_url":{"url":`+sdk.Quote(part.Get("image_url.url").Str)+`}}`)
		default:
			// A file or audio part has no Cohere form: refused, not dropped,
			// so the model never answers without what it was sent.
			err = sdk.Error("cohere takes text and image_url content parts, not " + strconv.Quote(t))
			return false
		}
		return true
	})
	return "[" + strings.Join(parts, ",") + "]", err
}

// functionTools is the request's function tools (Cohere's v2 tools are
// OpenAI's function tools); "" when there are none.
func functionTools(tools gjson.Result) string {
	var keep []string
	tools.ForEach(func(_, t gjson.Result) bool {
		if t.Get("type").Str == "function" {
			keep = append(keep, `{"type":"function","function":`+t.Get("function").Raw+`}`)
		}
		return true
	})
	if len(keep) == 0 {
		return ""
	}
	return "[" + strings.Join(keep, ",") + "]"
}

// onlyTool is tools with only the function tool named name.
func onlyTool(tools gjson.Result, name string) gjson.Result {
	var keep []string
	tools.ForEach(func(_, t gjson.Result) bool {
		if t.Get("function.name").Str == name {
			keep = append(keep, t.Raw)
		}
		return true
	})
	return gjson.Parse("[" + strings.Join(keep, ",") + "]")
}

// finishReason is Cohere's finish_reason as OpenAI's.
func finishReason(s string) string {
	switch s {
	case "MAX_TOKENS":
		return "length"
	case "TOOL_CALL":
		return "tool_calls"
	case "ERROR", "TIMEOUT":
		return "error"
	}
	return "stop" // COMPLETE, STOP_SEQUENCE
}

// usage is OpenAI usage from Cohere's: the billed units, which are what
// Cohere charges and its prices count, else the tokens the model saw.
func usage(u gjson.Result) string {
	in, outTok := u.Get("billed_units.input_tokens"), u.Get("billed_units.output_tokens")
	if !in.Exists() && !outTok.Exists() {
		in, outTok = u.Get("tokens.input_tokens"), u.Get("tokens.output_tokens")
	}
	i, o := in.Int(), outTok.Int()
	return `{"prompt_tokens":` + itoa(i) + `,"completion_tokens":` + itoa(o) + `,"total_tokens":` + itoa(i+o) + `}`
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// ChatResponse is the chat_response hook: a v2 Chat response as a chat
// completion.
func ChatResponse(in *sdk.In, out *sdk.Out) error {
	ctx, r := in.Field(0), gjson.ParseBytes(in.Field(1))
	m := r.Get("message")
	if !m.Exists() || !r.Get("finish_reason").Exists() {
		return sdk.Error("upstream response is not a Cohere chat response")
	}
	var text, reasoning strings.Builder
	m.Get("content").ForEach(func(_, c gjson.Result) bool {
		switch c.Get("type").Str {
		case "text":
			text.WriteString(c.Get("text").Str)
		case "thinking":
			reasoning.WriteString(c.Get("thinking").Str)
		}
		return true
	})
	calls := toolCalls(m.Get("tool_calls"))
	var b strings.Builder
	b.WriteString(`{"id":` + sdk.Quote(r.Get("id").Str) + `,"object":"chat.completion","model":` + sdk.Quote(sdk.Get(ctx, "model").Str))
	b.WriteString(`,"choices":[{"index":0,"message":{"role":"assistant","content":`)
	if text.Len() == 0 && calls != "" {
		b.WriteString("null")
	} else {
		b.WriteString(sdk.Quote(text.String()))
	}
	if reasoning.Len() > 0 {
		b.WriteString(`,"reasoning":` + sdk.Quote(reasoning.String()))
	}
	if calls != "" {
		b.WriteString(`,"tool_calls":` + calls)
	}
	var anns []string
	m.Get("citations").ForEach(func(_, c gjson.Result) bool {
		anns = citation(anns, c)
		return true
	})
	if len(anns) > 0 {
		b.WriteString(`,"annotations":[` + strings.Join(anns, ",") + `]`)
	}
	fr := r.Get("finish_reason").Str
	b.WriteString(`},"finish_reason":` + sdk.Quote(finishReason(fr)) + `,"native_finish_reason":` + sdk.Quote(fr) + `}]`)
	b.WriteString(`,"usage":` + usage(r.Get("usage")) + `,"system_fingerprint":null}`)
	out.FieldString(b.String())
	return nil
}

// toolCalls is Cohere's tool_calls as OpenAI's: the same fields, each
// written out so that nothing else of Cohere's reaches the client; "" when
// there are none.
func toolCalls(tc gjson.Result) string {
	var calls []string
	tc.ForEach(func(_, c gjson.Result) bool {
		calls = append(calls, `{"id":`+sdk.Quote(c.Get("id").Str)+`,"type":"function","function":{"name":`+
			sdk.Quote(c.Get("function.name").Str)+`,"arguments":`+sdk.Quote(c.Get("function.arguments").Str)+`}}`)
		return true
	})
	if len(calls) == 0 {
		return ""
	}
	return "[" + strings.Join(calls, ",") + "]"
}

// citation appends the url_citation annotations of one Cohere citation
// (https://docs.cohere.com/reference/chat, message.citations; a
// citation-start event's delta.message.citations): one per source it
// cites, spanning start to end of the answer's text (Cohere counts
// characters, as the gateway's indices count code points), with the cited
// text as content. The url is the source's own (a document's or a tool
// result's url member) or else its id (a tool call's id and result index,
// "get_weather_1byjy32y4hvq:0", or a document's id), so no citation is
// dropped and a client can match it to the tool result it cites; the
// title is the source's title when it has one.
func citation(anns []string, c gjson.Result) []string {
	c.Get("sources").ForEach(func(_, src gjson.Result) bool {
		data := src.Get("document")
		if !data.Exists() {
			data = src.Get("tool_output")
		}
		url := data.Get("url").Str
		if url == "" {
			url = src.Get("id").Str
		}
		a := `{"type":"url_citation","url_citation":{"url":` + sdk.Quote(url) + `,"title":` + sdk.Quote(data.Get("title").Str)
		if t := c.Get("text"); t.Type == gjson.String {
			a += `,"content":` + sdk.Quote(t.Str)
		}
		anns = append(anns, a+`,"start_index":`+itoa(c.Get("start").Int())+`,"end_index":`+itoa(c.Get("end").Int())+`}}`)
		return true
	})
	return anns
}

// StreamEvent is the chat_stream_event hook: one v2 chat stream event
// (https://docs.cohere.com/reference/chat-stream) as zero or one chunks.
// The state is the message id of message-start; tool calls carry their
// own index in each event.
func StreamEvent(in *sdk.In, out *sdk.Out) error {
	ctx, ev, state := in.Field(0), gjson.ParseBytes(in.Field(1)), in.Field(2)
	id := string(state)
	if ev.Get("type").Str == "message-start" {
		id = ev.Get("id").Str
	}
	chunk := func(choice string, extra string) string {
		return `{"id":` + sdk.Quote(id) + `,"object":"chat.completion.chunk","model":` + sdk.Quote(sdk.Get(ctx, "model").Str) +
			`,"choices":[` + choice + `]` + extra + `}`
	}
	delta := func(d string) string { return chunk(`{"index":0,"delta":`+d+`,"finish_reason":null}`, "") }
	out.FieldString(id)
	dm := ev.Get("delta.message")
	switch ev.Get("type").Str {
	case "message-start":
		out.FieldString(delta(`{"role":"assistant","content":""}`))
	case "content-delta":
		c := dm.Get("content")
		if t := c.Get("thinking"); t.Exists() {
			out.FieldString(delta(`{"reasoning":` + sdk.Quote(t.Str) + `}`))
		} else if t := c.Get("text"); t.Exists() {
			out.FieldString(delta(`{"content":` + sdk.Quote(t.Str) + `}`))
		}
	case "tool-call-start":
		c := dm.Get("tool_calls")
		out.FieldString(delta(`{"tool_calls":[{"index":` + itoa(ev.Get("index").Int()) + `,"id":` + sdk.Quote(c.Get("id").Str) +
			`,"type":"function","function":{"name":` + sdk.Quote(c.Get("function.name").Str) + `,"arguments":` + sdk.Quote(c.Get("function.arguments").Str) + `}}]}`))
	case "tool-call-delta":
		out.FieldString(delta(`{"tool_calls":[{"index":` + itoa(ev.Get("index").Int()) + `,"function":{"arguments":` +
			sdk.Quote(dm.Get("tool_calls.function.arguments").Str) + `}}]}`))
	case "citation-start":
		if anns := citation(nil, dm.Get("citations")); len(anns) > 0 {
			out.FieldString(delta(`{"annotations":[` + strings.Join(anns, ",") + `]}`))
		}
	case "message-end":
		d := ev.Get("delta")
		if e := d.Get("error"); e.Exists() {
			return sdk.Error("cohere stream ended with an error: " + e.String())
		}
		fr := d.Get("finish_reason").Str
		out.FieldString(chunk(`{"index":0,"delta":{},"finish_reason":`+sdk.Quote(finishReason(fr))+`,"native_finish_reason":`+sdk.Quote(fr)+`}`,
			`,"usage":`+usage(d.Get("usage"))))
	}
	// content-start, content-end, tool-plan-delta (the model's plan before
	// its calls, not an answer), tool-call-end, citation-end: no chunk.
	return nil
}

// EmbedRequest is the embed_request hook: an embeddings request as a v2
// Embed request (https://docs.cohere.com/reference/embed) for float
// vectors. input_type, which Cohere's v3 and later models require, is the
// request's own or search_document, the form for stored text.
func (a *Adapter) EmbedRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	req := gjson.ParseBytes(body)
	var b strings.Builder
	b.WriteString(`{"model":` + sdk.Quote(sdk.Get(ctx, "model").Str))
	input := req.Get("input")
	if input.Type == gjson.String {
		b.WriteString(`,"texts":[` + input.Raw + `]`)
	} else if items, images := embedInputs(input); images {
		b.WriteString(`,"inputs":` + items)
	} else {
		b.WriteString(`,"texts":` + items)
	}
	inputType := "search_document"
	if t := req.Get("input_type"); t.Type == gjson.String {
		inputType = t.Str
	}
	b.WriteString(`,"input_type":` + sdk.Quote(inputType) + `,"embedding_types":["float"]`)
	if d := req.Get("dimensions"); d.Type == gjson.Number {
		b.WriteString(`,"output_dimension":` + d.Raw)
	}
	b.WriteString("}")
	out.FieldString("POST")
	out.FieldString("/v2/embed")
	out.FieldString(a.headers())
	out.FieldString(b.String())
	return nil
}

// embedInputs is an input list as Cohere's texts (strings; a text-only
// item's parts joined by newlines) or, when an item holds an image, as
// Cohere's inputs (content lists of text and image_url, embed-v4).
func embedInputs(input gjson.Result) (string, bool) {
	images := false
	input.ForEach(func(_, item gjson.Result) bool {
		item.Get("content").ForEach(func(_, p gjson.Result) bool {
			images = images || p.Get("type").Str == "image_url"
			return !images
		})
		return !images
	})
	var items []string
	input.ForEach(func(_, item gjson.Result) bool {
		switch {
		case !images && item.Type == gjson.String:
			items = append(items, item.Raw)
		case !images:
			items = append(items, sdk.Quote(sdk.ContentText(item.Get("content"))))
		case item.Type == gjson.String:
			items = append(items, `{"content":[{"type":"text","text":`+item.Raw+`}]}`)
		default:
			c, _ := content(item.Get("content"))
			items = append(items, `{"content":`+c+`}`)
		}
		return true
	})
	return "[" + strings.Join(items, ",") + "]", images
}

// EmbedResponse is the embed_response hook: Cohere's float embeddings as
// an OpenAI embeddings list.
func EmbedResponse(in *sdk.In, out *sdk.Out) error {
	ctx, r := in.Field(0), gjson.ParseBytes(in.Field(1))
	vecs := r.Get("embeddings.float")
	if !vecs.IsArray() {
		return sdk.Error("upstream response holds no float embeddings")
	}
	var b strings.Builder
	b.WriteString(`{"object":"list","data":[`)
	vecs.ForEach(func(i, v gjson.Result) bool {
		if i.Int() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"object":"embedding","index":` + itoa(i.Int()) + `,"embedding":` + v.Raw + `}`)
		return true
	})
	n := r.Get("meta.billed_units.input_tokens").Int()
	b.WriteString(`],"model":` + sdk.Quote(sdk.Get(ctx, "model").Str) + `,"usage":{"prompt_tokens":` + itoa(n) + `,"total_tokens":` + itoa(n) + `}}`)
	out.FieldString(b.String())
	return nil
}

// MapError is the error hook. Cohere's statuses mean what the gateway's do
// (https://docs.cohere.com/reference/errors), except its own 498 (invalid
// token: the gateway's key) and 499 (the request was cancelled upstream).
func MapError(in *sdk.In, out *sdk.Out) error {
	status, _ := strconv.Atoi(in.String(1))
	msg := sdk.ErrorMessage(in.Field(2))
	switch status {
	case 498:
		status = 401
	case 499:
		out.FieldString("502")
		out.FieldString("cohere cancelled the request: " + msg)
		return nil
	}
	sdk.UpstreamError(out, status, msg)
	return nil
}
