// Package messages is the Anthropic Messages front door's translation: a
// Messages request body becomes the equivalent OpenAI chat request (which
// the gateway's one request core, host/flow, runs like any other), and
// the chat answer — a completion, or its stream of chunks — becomes
// Anthropic's shapes. It does no I/O; host/server is the glue.
//
// Reference: https://docs.claude.com/en/api/messages (request and
// response), https://docs.claude.com/en/docs/build-with-claude/streaming
// (events) and https://docs.claude.com/en/api/errors (errors).
package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Request is a Messages body translated.
type Request struct {
	// Chat is the equivalent chat request body (OpenAI chat JSON plus the
	// gateway's own fields the client gave).
	Chat []byte
	// Model is the model as the client named it, echoed in the answer.
	Model  string
	Stream bool
}

// passThrough are the gateway's own request fields (docs/api.md): a
// Messages request may carry them as extra body fields and they mean
// what they mean on chat.
var passThrough = map[string]bool{
	"models": true, "provider": true, "plugins": true, "session_id": true, "route": true,
	"transforms": true, "usage": true, "debug": true, "trace": true, "max_tool_calls": true,
	"stop_server_tools_when": true, "reasoning": true,
}

// Native is body as an Anthropic-format provider takes it (the gateway's
// native mode, docs/front-doors.md): the client's request byte for byte,
// without the gateway's own fields (passThrough). Call it on a body
// ToChat accepted.
func Native(body []byte) []byte {
	var drop []string
	gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool {
		if passThrough[k.Str] {
			drop = append(drop, k.Str)
		}
		return true
	})
	if len(drop) == 0 {
		return body
	}
	out := bytes.Clone(body)
	for _, k := range drop {
		out, _ = sjson.DeleteBytes(out, k) // plain names: no path syntax in them
	}
	return out
}

// ignored are Anthropic fields accepted and dropped: nothing in a chat
// request carries them (prompt caching is the provider's business,
// context management and the service tier are Anthropic's).
var ignored = map[string]bool{
	"context_management": true, "cache_control": true, "service_tier": true, "container": true,
	"mcp_servers": true,
}

// chatBody is the chat request built; absent members are omitted.
type chatBody struct {
	Model             string                  `json:"model,omitempty"` // absent: models names them
	Messages          []chatMessage           `json:"messages"`
	MaxTokens         *int64                  `json:"max_tokens,omitempty"`
	Stream            bool                    `json:"stream,omitempty"`
	StreamOptions     json.RawMessage         `json:"stream_options,omitempty"`
	Stop              []string                `json:"stop,omitempty"`
	Temperature       json.RawMessage         `json:"temperature,omitempty"`
	TopP              json.RawMessage         `json:"top_p,omitempty"`
	TopK              json.RawMessage         `json:"top_k,omitempty"`
	User              string                  `json:"user,omitempty"`
	Tools             []chatTool              `json:"tools,omitempty"`
	ToolChoice        json.RawMessage         `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool                   `json:"parallel_tool_calls,omitempty"`
	Reasoning         map[string]any          `json:"reasoning,omitempty"`
	ResponseFormat    json.RawMessage         `json:"response_format,omitempty"`
	Extra             map[string]gjson.Result `json:"-"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Arguments   *string         `json:"arguments,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type part struct {
	Type     string    `json:"type"`
	Text     *string   `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
	File     *file     `json:"file,omitempty"`
}

type file struct {
	Filename string `json:"filename"`
	FileData string `json:"file_data"`
}

type imageURL struct {
	URL string `json:"url"`
}

// bad is an invalid_request_error about field.
func bad(field, format string, args ...any) *apierr.Error {
	return apierr.BadRequest(field, format, args...)
}

// ToChat translates a Messages request body. Anything it cannot carry
// faithfully is an error (400), except what ignored lists and the
// thinking blocks of earlier turns (dropped: a chat request has no place
// for their signatures).
func ToChat(body []byte) (*Request, *apierr.Error) { return toChat(body, false) }

// ToChatCount translates a count_tokens body: a Messages request without
// max_tokens (and stream), which counting does not need.
func ToChatCount(body []byte) (*Request, *apierr.Error) { return toChat(body, true) }

func toChat(body []byte, count bool) (*Request, *apierr.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apierr.New(http.StatusBadRequest, "request body is empty; send a JSON Messages request")
	}
	if !gjson.ValidBytes(body) {
		return nil, apierr.New(http.StatusBadRequest, "request body is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, apierr.New(http.StatusBadRequest, "request body must be a JSON object")
	}
	t := translation{cb: chatBody{Extra: map[string]gjson.Result{}}}
	var aerr *apierr.Error
	root.ForEach(func(k, v gjson.Result) bool {
		aerr = t.field(k.String(), v)
		return aerr == nil
	})
	if aerr != nil {
		return nil, aerr
	}
	return t.finish(count)
}

// translation is one Messages request being read into a chat body.
type translation struct {
	cb                         chatBody
	system                     []chatMessage
	disableParallel, hasChoice bool
}

// field reads one member of the request.
func (t *translation) field(key string, v gjson.Result) *apierr.Error {
	cb := &t.cb
	var err *apierr.Error
	switch key {
	case "model":
		if v.Type != gjson.String || v.Str == "" {
			return bad("model", "must be a non-empty string")
		}
		cb.Model = v.Str
	case "messages":
		cb.Messages, err = messages(v)
	case "system":
		t.system, err = systemPrompt(v)
	case "max_tokens":
		if v.Type != gjson.Number || v.Int() < 1 || float64(v.Int()) != v.Num {
			return bad("max_tokens", "must be a positive integer")
		}
		n := v.Int()
		cb.MaxTokens = &n
	case "stream":
		if v.Type != gjson.True && v.Type != gjson.False {
			return bad("stream", "must be a boolean")
		}
		cb.Stream = v.Type == gjson.True
	case "stop_sequences":
		cb.Stop, err = stopSequences(v)
	case "temperature", "top_p", "top_k":
		if v.Type != gjson.Number {
			return bad(key, "must be a number")
		}
		raw := json.RawMessage(v.Raw)
		switch key {
		case "temperature":
			cb.Temperature = raw
		case "top_p":
			cb.TopP = raw
		default:
			cb.TopK = raw
		}
	case "metadata":
		cb.User, err = metadataUser(v)
	case "tools":
		cb.Tools, err = tools(v)
	case "tool_choice":
		t.hasChoice = true
		cb.ToolChoice, t.disableParallel, err = toolChoice(v)
	case "thinking":
		err = thinking(cb, v)
	case "output_config":
		err = outputConfig(cb, v)
	default:
		switch {
		case passThrough[key]:
			cb.Extra[key] = v
		case ignored[key]:
		default:
			return bad(key, "unknown field of a Messages request")
		}
	}
	return err
}

// finish checks what the request must have and writes the chat body.
func (t *translation) finish(count bool) (*Request, *apierr.Error) {
	cb := &t.cb
	switch {
	case cb.Model == "" && !cb.Extra["models"].IsArray():
		return nil, bad("model", "is required")
	case cb.MaxTokens == nil && !count:
		return nil, bad("max_tokens", "is required")
	case len(cb.Messages) == 0:
		return nil, bad("messages", "is required and must hold at least one message")
	}
	if t.hasChoice && t.disableParallel && len(cb.Tools) > 0 {
		f := false
		cb.ParallelToolCalls = &f
	}
	if cb.Reasoning != nil && cb.Extra["reasoning"].Exists() {
		return nil, bad("reasoning", "give either thinking (and output_config.effort) or reasoning, not both")
	}
	if count {
		cb.Stream, cb.MaxTokens = false, nil
	}
	if cb.Stream {
		// The usage the answer's final events carry.
		cb.StreamOptions = json.RawMessage(`{"include_usage":true}`)
	}
	cb.Messages = append(t.system, cb.Messages...)
	out, err := json.Marshal(cb)
	if err != nil {
		return nil, apierr.Wrap(http.StatusInternalServerError, err, "translating the Messages request")
	}
	// The gateway's own fields go in as the client wrote them, in a
	// fixed order (the same request, the same body).
	if len(cb.Extra) > 0 {
		out = out[:len(out)-1]
		for _, k := range slices.Sorted(maps.Keys(cb.Extra)) {
			kb, _ := json.Marshal(k)
			out = append(append(append(append(out, ','), kb...), ':'), cb.Extra[k].Raw...)
		}
		out = append(out, '}')
	}
	return &Request{Chat: out, Model: cb.Model, Stream: cb.Stream}, nil
}

// stopSequences reads stop_sequences, an array of strings.
func stopSequences(v gjson.Result) ([]string, *apierr.Error) {
	if !v.IsArray() {
		return nil, bad("stop_sequences", "must be an array of strings")
	}
	var out []string
	var aerr *apierr.Error
	v.ForEach(func(_, s gjson.Result) bool {
		if s.Type != gjson.String {
			aerr = bad("stop_sequences", "must be an array of strings")
			return false
		}
		out = append(out, s.Str)
		return true
	})
	return out, aerr
}

// metadataUser reads metadata, an object whose user_id (a string) is the
// chat request's user.
func metadataUser(v gjson.Result) (string, *apierr.Error) {
	if !v.IsObject() {
		return "", bad("metadata", "must be an object")
	}
	u := v.Get("user_id")
	if !u.Exists() || u.Type == gjson.Null {
		return "", nil
	}
	if u.Type != gjson.String {
		return "", bad("metadata.user_id", "must be a string")
	}
	return u.Str, nil
}

// systemPrompt is system as one system message: a string, or text blocks
// (joined by blank lines, as their separate paragraphs).
func systemPrompt(v gjson.Result) ([]chatMessage, *apierr.Error) {
	switch {
	case v.Type == gjson.String:
		if v.Str == "" {
			return nil, nil
		}
		return []chatMessage{{Role: "system", Content: jsonString(v.Str)}}, nil
	case v.IsArray():
		var texts []string
		var aerr *apierr.Error
		v.ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str != "text" || b.Get("text").Type != gjson.String {
				aerr = bad("system", "must be a string or an array of text blocks")
				return false
			}
			texts = append(texts, b.Get("text").Str)
			return true
		})
		if aerr != nil || len(texts) == 0 {
			return nil, aerr
		}
		return []chatMessage{{Role: "system", Content: jsonString(strings.Join(texts, "\n\n"))}}, nil
	case v.Type == gjson.Null:
		return nil, nil
	}
	return nil, bad("system", "must be a string or an array of text blocks")
}

// messages translates the conversation. A user turn's tool_result blocks
// become tool messages, in order, before the rest of the turn; an
// assistant turn's tool_use blocks its tool_calls, ids kept byte for byte.
func messages(v gjson.Result) ([]chatMessage, *apierr.Error) {
	if !v.IsArray() {
		return nil, bad("messages", "must be an array")
	}
	var out []chatMessage
	var aerr *apierr.Error
	i := 0
	v.ForEach(func(_, m gjson.Result) bool {
		at := fmt.Sprintf("messages[%d]", i)
		i++
		role := m.Get("role")
		if role.Str == "system" {
			// A system message inside the conversation (Claude Code sends
			// its environment so): a chat system message where it stands.
			var ms []chatMessage
			ms, aerr = systemPrompt(m.Get("content"))
			if aerr != nil {
				aerr = bad(at+".content", "a system message holds a string or text blocks")
			}
			out = append(out, ms...)
			return aerr == nil
		}
		if role.Str != "user" && role.Str != "assistant" {
			aerr = bad(at+".role", `must be "user", "assistant" or "system"`)
			return false
		}
		var ms []chatMessage
		ms, aerr = turn(at, role.Str, m.Get("content"))
		out = append(out, ms...)
		return aerr == nil
	})
	return out, aerr
}

// turn is one Messages message as chat messages.
func turn(at, role string, c gjson.Result) ([]chatMessage, *apierr.Error) {
	if c.Type == gjson.String {
		return []chatMessage{{Role: role, Content: jsonString(c.Str)}}, nil
	}
	if !c.IsArray() {
		return nil, bad(at+".content", "must be a string or an array of content blocks")
	}
	var parts []part
	var calls []chatToolCall
	var results []chatMessage
	var aerr *apierr.Error
	j := 0
	c.ForEach(func(_, b gjson.Result) bool {
		bat := fmt.Sprintf("%s.content[%d]", at, j)
		j++
		switch typ := b.Get("type").Str; typ {
		case "text":
			t := b.Get("text")
			if t.Type != gjson.String {
				aerr = bad(bat+".text", "must be a string")
				return false
			}
			s := t.Str
			parts = append(parts, part{Type: "text", Text: &s})
		case "image":
			if role != "user" {
				aerr = bad(bat, "image blocks are only allowed in user messages")
				return false
			}
			var p part
			p, aerr = image(bat, b.Get("source"))
			parts = append(parts, p)
		case "document":
			if role != "user" {
				aerr = bad(bat, "document blocks are only allowed in user messages")
				return false
			}
			var p part
			p, aerr = document(bat, b)
			parts = append(parts, p)
		case "tool_use":
			if role != "assistant" {
				aerr = bad(bat, "tool_use blocks are only allowed in assistant messages")
				return false
			}
			id, name, input := b.Get("id"), b.Get("name"), b.Get("input")
			if id.Type != gjson.String || id.Str == "" || name.Type != gjson.String || name.Str == "" {
				aerr = bad(bat, "a tool_use block needs a string id and name")
				return false
			}
			args := "{}"
			if input.Exists() {
				if !input.IsObject() {
					aerr = bad(bat+".input", "must be an object")
					return false
				}
				args = input.Raw
			}
			calls = append(calls, chatToolCall{ID: id.Str, Type: "function", Function: chatFunction{Name: name.Str, Arguments: &args}})
		case "tool_result":
			if role != "user" {
				aerr = bad(bat, "tool_result blocks are only allowed in user messages")
				return false
			}
			var m chatMessage
			m, aerr = toolResult(bat, b)
			results = append(results, m)
		case "thinking", "redacted_thinking":
			// Dropped: a chat request has nowhere faithful to carry the
			// signature, and no upstream of this gateway could check it.
		default:
			aerr = bad(bat+".type", "unsupported content block type %q", typ)
		}
		return aerr == nil
	})
	if aerr != nil {
		return nil, aerr
	}
	out := results
	switch {
	case len(calls) > 0:
		m := chatMessage{Role: role, ToolCalls: calls}
		if len(parts) > 0 {
			m.Content = textContent(parts)
		}
		out = append(out, m)
	case len(parts) > 0:
		out = append(out, chatMessage{Role: role, Content: content(parts)})
	case len(results) == 0 && role == "assistant":
		// Only thinking blocks: nothing to say for this turn.
	case len(results) == 0:
		out = append(out, chatMessage{Role: role, Content: jsonString("")})
	}
	return out, nil
}

// content is parts as a chat content: a lone text is a string.
func content(parts []part) json.RawMessage {
	if len(parts) == 1 && parts[0].Type == "text" {
		return jsonString(*parts[0].Text)
	}
	b, _ := json.Marshal(parts)
	return b
}

// textContent is an assistant message's text beside its tool calls, a
// string (what every provider takes there).
func textContent(parts []part) json.RawMessage {
	var b strings.Builder
	for _, p := range parts {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return jsonString(b.String())
}

// image is an image block as an image_url part: base64 data as a data
// URL, a url source as it is.
func image(at string, src gjson.Result) (part, *apierr.Error) {
	switch src.Get("type").Str {
	case "base64":
		mt, data := src.Get("media_type"), src.Get("data")
		if mt.Type != gjson.String || data.Type != gjson.String || mt.Str == "" || data.Str == "" {
			return part{}, bad(at+".source", "a base64 image needs media_type and data")
		}
		return part{Type: "image_url", ImageURL: &imageURL{URL: "data:" + mt.Str + ";base64," + data.Str}}, nil
	case "url":
		u := src.Get("url")
		if u.Type != gjson.String || u.Str == "" {
			return part{}, bad(at+".source.url", "must be a non-empty string")
		}
		return part{Type: "image_url", ImageURL: &imageURL{URL: u.Str}}, nil
	}
	return part{}, bad(at+".source.type", `must be "base64" or "url"`)
}

// document is a document block as a chat part: a base64 PDF is a file
// part with a data URL (which the file-parser plugin, or a provider that
// reads PDFs, takes), a plain-text document its text. Other sources (url,
// content, a Files API id) are refused: the gateway does not fetch them.
func document(at string, b gjson.Result) (part, *apierr.Error) {
	src := b.Get("source")
	name := b.Get("title").Str
	switch src.Get("type").Str {
	case "base64":
		mt, data := src.Get("media_type").Str, src.Get("data").Str
		if mt != "application/pdf" || data == "" {
			return part{}, bad(at+".source", `a base64 document is a PDF: media_type "application/pdf" and data`)
		}
		if name == "" {
			name = "document.pdf"
		}
		return part{Type: "file", File: &file{Filename: name, FileData: "data:application/pdf;base64," + data}}, nil
	case "text":
		data := src.Get("data")
		if data.Type != gjson.String {
			return part{}, bad(at+".source.data", "must be a string")
		}
		t := data.Str
		if name != "" {
			t = name + "\n\n" + t
		}
		return part{Type: "text", Text: &t}, nil
	}
	return part{}, bad(at+".source.type", `must be "base64" (a PDF) or "text"`)
}

// toolResult is a tool_result block as a tool message. Its content is a
// string or text (and image) blocks; an error result says so in the text,
// since a chat tool message has no error flag.
func toolResult(at string, b gjson.Result) (chatMessage, *apierr.Error) {
	id := b.Get("tool_use_id")
	if id.Type != gjson.String || id.Str == "" {
		return chatMessage{}, bad(at+".tool_use_id", "must be a non-empty string")
	}
	var text string
	var parts []part
	c := b.Get("content")
	switch {
	case !c.Exists() || c.Type == gjson.Null:
	case c.Type == gjson.String:
		text = c.Str
	case c.IsArray():
		var aerr *apierr.Error
		k := 0
		c.ForEach(func(_, x gjson.Result) bool {
			xat := fmt.Sprintf("%s.content[%d]", at, k)
			k++
			switch x.Get("type").Str {
			case "text":
				s := x.Get("text").Str
				parts = append(parts, part{Type: "text", Text: &s})
			case "image":
				var p part
				p, aerr = image(xat, x.Get("source"))
				parts = append(parts, p)
			case "document":
				var p part
				p, aerr = document(xat, x)
				parts = append(parts, p)
			default:
				aerr = bad(xat+".type", "a tool result holds text, image and document blocks")
			}
			return aerr == nil
		})
		if aerr != nil {
			return chatMessage{}, aerr
		}
	default:
		return chatMessage{}, bad(at+".content", "must be a string or an array of blocks")
	}
	isErr := b.Get("is_error").Type == gjson.True
	if parts == nil {
		if isErr {
			text = "Error: " + text
		}
		return chatMessage{Role: "tool", ToolCallID: id.Str, Content: jsonString(text)}, nil
	}
	if isErr {
		s := "Error:"
		parts = append([]part{{Type: "text", Text: &s}}, parts...)
	}
	return chatMessage{Role: "tool", ToolCallID: id.Str, Content: content(parts)}, nil
}

// tools are client tools ({name, description, input_schema}) as function
// tools. Anthropic's own server tools (a "type" such as web_search_…)
// have no chat equivalent here and are refused.
func tools(v gjson.Result) ([]chatTool, *apierr.Error) {
	if !v.IsArray() {
		return nil, bad("tools", "must be an array")
	}
	var out []chatTool
	var aerr *apierr.Error
	i := 0
	v.ForEach(func(_, t gjson.Result) bool {
		at := fmt.Sprintf("tools[%d]", i)
		i++
		if typ := t.Get("type"); typ.Exists() && typ.Str != "custom" {
			aerr = bad(at+".type", "tool type %q is not supported here: give client tools (name, description, input_schema)", typ.Str)
			return false
		}
		name, schema := t.Get("name"), t.Get("input_schema")
		if name.Type != gjson.String || name.Str == "" {
			aerr = bad(at+".name", "must be a non-empty string")
			return false
		}
		if !schema.IsObject() {
			aerr = bad(at+".input_schema", "must be a JSON Schema object")
			return false
		}
		out = append(out, chatTool{Type: "function", Function: chatFunction{Name: name.Str,
			Description: t.Get("description").Str, Parameters: json.RawMessage(schema.Raw)}})
		return true
	})
	return out, aerr
}

// toolChoice maps auto/any/tool/none; disable_parallel_tool_use is
// reported for parallel_tool_calls.
func toolChoice(v gjson.Result) (json.RawMessage, bool, *apierr.Error) {
	if !v.IsObject() {
		return nil, false, bad("tool_choice", "must be an object")
	}
	disable := v.Get("disable_parallel_tool_use").Type == gjson.True
	switch v.Get("type").Str {
	case "auto":
		return json.RawMessage(`"auto"`), disable, nil
	case "any":
		return json.RawMessage(`"required"`), disable, nil
	case "none":
		return json.RawMessage(`"none"`), disable, nil
	case "tool":
		name := v.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return nil, false, bad("tool_choice.name", "must name a tool")
		}
		b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": name.Str}})
		return b, disable, nil
	}
	return nil, false, bad("tool_choice.type", `must be "auto", "any", "tool" or "none"`)
}

// thinking maps extended thinking onto the gateway's reasoning: a budget
// is reasoning.max_tokens, adaptive lets the model decide (enabled, no
// budget), disabled turns it off.
func thinking(cb *chatBody, v gjson.Result) *apierr.Error {
	if !v.IsObject() {
		return bad("thinking", "must be an object")
	}
	switch v.Get("type").Str {
	case "enabled":
		b := v.Get("budget_tokens")
		if b.Type != gjson.Number || b.Int() < 1 {
			return bad("thinking.budget_tokens", "must be a positive integer")
		}
		cb.reasoning()["max_tokens"] = b.Int()
	case "adaptive":
		cb.reasoning()["enabled"] = true
	case "disabled":
	default:
		return bad("thinking.type", `must be "enabled", "adaptive" or "disabled"`)
	}
	return nil
}

// efforts are the effort levels output_config.effort may name, those the
// gateway's reasoning.effort takes.
var efforts = map[string]bool{"minimal": true, "low": true, "medium": true, "high": true, "xhigh": true, "max": true}

// outputConfig maps output_config: effort is reasoning.effort, a
// json_schema format is the chat response_format.
func outputConfig(cb *chatBody, v gjson.Result) *apierr.Error {
	if !v.IsObject() {
		return bad("output_config", "must be an object")
	}
	var aerr *apierr.Error
	v.ForEach(func(k, x gjson.Result) bool {
		switch k.Str {
		case "effort":
			if x.Type == gjson.Null {
				break
			}
			if !efforts[x.Str] {
				aerr = bad("output_config.effort", `must be "low", "medium", "high" or "max"`)
				break
			}
			cb.reasoning()["effort"] = x.Str
		case "format":
			if x.Type == gjson.Null {
				break
			}
			schema := x.Get("schema")
			if x.Get("type").Str != "json_schema" || !schema.IsObject() {
				aerr = bad("output_config.format", `must be {"type":"json_schema","schema":{…}}`)
				break
			}
			cb.ResponseFormat, _ = json.Marshal(map[string]any{"type": "json_schema",
				"json_schema": map[string]any{"name": "output", "strict": true, "schema": json.RawMessage(schema.Raw)}})
		default:
			aerr = bad("output_config."+k.Str, "unknown field")
		}
		return aerr == nil
	})
	return aerr
}

// reasoning is the chat request's reasoning object, made on first use.
func (cb *chatBody) reasoning() map[string]any {
	if cb.Reasoning == nil {
		cb.Reasoning = map[string]any{}
	}
	return cb.Reasoning
}

// jsonString is s as a JSON string. json.Marshal of the chat body
// escapes '<', '>' and '&' in it as it escapes them everywhere.
func jsonString(s string) json.RawMessage { return jsonstr.Append(nil, s) }
