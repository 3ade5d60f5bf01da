package responses

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// output is one item of a response's output being built.
type output struct {
	kind   string // "message" or "function_call"
	id     string
	text   strings.Builder // the message's text, or the call's arguments
	refuse string          // a message's refusal
	callID string
	name   string
	index  int // its place in the output
}

// json is the item as the Responses API shows it.
func (o *output) json(status string) string {
	switch o.kind {
	case "reasoning":
		// The model's reasoning text, as a summary: what the SDKs and Codex
		// show of reasoning. No encrypted_content: nothing to send back.
		return `{"type":"reasoning","id":` + str(o.id) + `,"summary":[` + o.summaryPart() + `]}`
	case "function_call":
		return `{"type":"function_call","id":` + str(o.id) + `,"call_id":` + str(o.callID) + `,"name":` + str(o.name) +
			`,"arguments":` + str(o.text.String()) + `,"status":` + str(status) + `}`
	}
	return `{"type":"message","id":` + str(o.id) + `,"status":` + str(status) + `,"role":"assistant","content":` + o.content() + `}`
}

func (o *output) content() string {
	if o.refuse != "" && o.text.Len() == 0 {
		return `[{"type":"refusal","refusal":` + str(o.refuse) + `}]`
	}
	return `[` + o.textPart() + `]`
}

func (o *output) summaryPart() string {
	return `{"type":"summary_text","text":` + str(o.text.String()) + `}`
}

func (o *output) textPart() string {
	return `{"type":"output_text","text":` + str(o.text.String()) + `,"annotations":[]}`
}

// answer is a response being built from a chat answer.
type answer struct {
	echo    Echo
	base    string // the generation id without "gen-": the response's ids build on it
	created int64
	model   string
	items   []*output
	finish  string
	usage   gjson.Result // the chat usage
	meta    string       // service_metadata, raw
}

func (a *answer) identify(chunk gjson.Result) {
	if a.base != "" {
		return
	}
	a.base = strings.TrimPrefix(chunk.Get("id").Str, "gen-")
	a.created = chunk.Get("created").Int()
	a.model = chunk.Get("model").Str
}

// item is a new output item of kind.
func (a *answer) item(kind string) *output {
	prefix := "msg_"
	switch kind {
	case "function_call":
		prefix = "fc_"
	case "reasoning":
		prefix = "rs_"
	}
	o := &output{kind: kind, id: prefix + a.base + "_" + strconv.Itoa(len(a.items)), index: len(a.items)}
	a.items = append(a.items, o)
	return o
}

// status is the response's status and incomplete_details by the chat
// finish reason: a completion cut by its token limit or a content filter is
// "incomplete", as OpenAI reports it.
func (a *answer) status() (string, string) {
	switch a.finish {
	case "length":
		return "incomplete", `{"reason":"max_output_tokens"}`
	case "content_filter":
		return "incomplete", `{"reason":"content_filter"}`
	}
	return "completed", "null"
}

// response is the Responses object: status "in_progress" while streaming
// (no usage yet), the finish reason's status at the end, or "failed" with
// errObj.
func (a *answer) response(status, incomplete, errObj string, final bool) []byte {
	var b chatBody
	b.buf.Grow(512)
	b.buf.WriteByte('{')
	b.raw("id", str("resp_"+a.base))
	b.raw("object", `"response"`)
	b.raw("created_at", strconv.FormatInt(a.created, 10))
	b.raw("status", str(status))
	b.raw("error", or(errObj, "null"))
	b.raw("incomplete_details", or(incomplete, "null"))
	b.raw("model", str(a.model))
	var out strings.Builder
	out.WriteByte('[')
	if final {
		for i, o := range a.items {
			if i > 0 {
				out.WriteByte(',')
			}
			out.WriteString(o.json("completed"))
		}
	}
	out.WriteByte(']')
	b.raw("output", out.String())
	e := a.echo
	b.raw("instructions", or(e.Instructions, "null"))
	b.raw("max_output_tokens", or(e.MaxOutputTokens, "null"))
	b.raw("parallel_tool_calls", or(e.ParallelToolCalls, "true"))
	b.raw("previous_response_id", or(e.PreviousResponseID, "null"))
	b.raw("reasoning", or(e.Reasoning, `{"effort":null,"summary":null}`))
	b.raw("store", strconv.FormatBool(e.Store))
	b.raw("temperature", or(e.Temperature, "null"))
	b.raw("text", or(e.Text, `{"format":{"type":"text"}}`))
	b.raw("tool_choice", or(e.ToolChoice, `"auto"`))
	b.raw("tools", or(e.Tools, "[]"))
	b.raw("top_p", or(e.TopP, "null"))
	b.raw("truncation", or(e.Truncation, `"disabled"`))
	b.raw("metadata", or(e.Metadata, "{}"))
	b.raw("user", or(e.User, "null"))
	if final && a.usage.IsObject() {
		b.raw("usage", usage(a.usage))
	} else {
		b.raw("usage", "null")
	}
	if a.meta != "" {
		b.raw("service_metadata", a.meta)
	}
	b.buf.WriteByte('}')
	return b.buf.Bytes()
}

func or(raw, dflt string) string {
	if raw == "" || raw == "null" {
		return dflt
	}
	return raw
}

// usage is chat usage in the Responses API's names; the gateway's cost
// (and its details) stay beside them, as on chat.
func usage(u gjson.Result) string {
	in, out := u.Get("prompt_tokens").Int(), u.Get("completion_tokens").Int()
	total := u.Get("total_tokens").Int()
	if total == 0 {
		total = in + out
	}
	var b chatBody
	b.buf.WriteByte('{')
	b.raw("input_tokens", strconv.FormatInt(in, 10))
	b.raw("input_tokens_details", `{"cached_tokens":`+strconv.FormatInt(u.Get("prompt_tokens_details.cached_tokens").Int(), 10)+`}`)
	b.raw("output_tokens", strconv.FormatInt(out, 10))
	b.raw("output_tokens_details", `{"reasoning_tokens":`+strconv.FormatInt(u.Get("completion_tokens_details.reasoning_tokens").Int(), 10)+`}`)
	b.raw("total_tokens", strconv.FormatInt(total, 10))
	for _, k := range []string{"cost", "is_byok", "cost_details", "server_tool_use_details", "server_tool_use"} {
		if v := u.Get(k); v.Exists() {
			b.raw(k, v.Raw)
		}
	}
	b.buf.WriteByte('}')
	return b.buf.String()
}

// reasoningText is a chat message's or delta's reasoning (OpenRouter's
// name, or reasoning_content).
func reasoningText(m gjson.Result) string {
	if r := m.Get("reasoning").Str; r != "" {
		return r
	}
	return m.Get("reasoning_content").Str
}

// addMessage adds a chat choice's message to the output: its reasoning as
// a reasoning item, its text as a message item, each tool call as a
// function_call item.
func (a *answer) addMessage(m gjson.Result) {
	if r := reasoningText(m); r != "" {
		a.item("reasoning").text.WriteString(r)
	}
	text, refusal := m.Get("content").Str, m.Get("refusal").Str
	calls := m.Get("tool_calls").Array()
	if text != "" || refusal != "" || len(calls) == 0 {
		o := a.item("message")
		o.text.WriteString(text)
		o.refuse = refusal
	}
	for _, c := range calls {
		o := a.item("function_call")
		o.callID, o.name = c.Get("id").Str, c.Get("function.name").Str
		o.text.WriteString(c.Get("function.arguments").Str)
	}
}

// FromChat is the Responses object of a chat completion (the JSON answer
// of a request that did not stream).
func FromChat(chat []byte, echo Echo) []byte {
	c := gjson.ParseBytes(chat)
	a := &answer{echo: echo}
	a.identify(c)
	choice := c.Get("choices.0")
	a.addMessage(choice.Get("message"))
	a.finish = choice.Get("finish_reason").Str
	a.usage = c.Get("usage")
	if m := c.Get("service_metadata"); m.IsObject() {
		a.meta = m.Raw
	}
	status, incomplete := a.status()
	return a.response(status, incomplete, "", true)
}
