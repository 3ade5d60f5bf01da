// Package responses is the OpenAI Responses API front door's translation:
// a Responses request body becomes the equivalent chat completion body,
// which the request core (host/flow) runs like any chat request, and the
// chat answer — a JSON completion or its chunk stream — becomes a Responses
// object or event stream. Nothing here runs a request: host/server is the
// glue that parses, admits and runs (docs/front-doors.md).
//
// Stored responses are host/responses/stored's; ToChat takes the items of
// the conversation before (previous_response_id) from there.
// conversation, prompt and item_reference are refused with a 400 that
// says so.
package responses

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/tidwall/gjson"
)

// Request is a Responses request translated.
type Request struct {
	// Chat is the equivalent chat completion body (OpenAI chat JSON with
	// the gateway's extra fields passed through).
	Chat []byte
	// Stream is stream:true.
	Stream bool
	// Echo is what the response object repeats of the request.
	Echo Echo
	// Store: the response is to be kept (store absent or true, OpenAI's
	// default). Input are the request's input items to keep with it (a
	// string input as its user message item).
	Store bool
	Input []json.RawMessage
}

// Echo holds the request fields every Responses object repeats, raw JSON
// ("" when absent: the object then shows the API's default).
type Echo struct {
	Instructions, MaxOutputTokens, Temperature, TopP, Tools, ToolChoice,
	ParallelToolCalls, Reasoning, Text, Truncation, Metadata, User,
	PreviousResponseID string
	Store bool
}

// consumed are the Responses fields the translation reads or accepts
// without passing on: everything else at the top level (model, models,
// provider, plugins, session_id, route, temperature, top_p, user,
// metadata, parallel_tool_calls, top_logprobs, max_tool_calls, service_tier
// and the gateway's other chat fields) goes to the chat body as it is, so
// it is validated and behaves exactly as for chat.
var consumed = map[string]bool{
	"input": true, "instructions": true, "tools": true, "tool_choice": true,
	"text": true, "reasoning": true, "max_output_tokens": true, "stream": true,
	"stream_options": true, "previous_response_id": true, "conversation": true,
	"background": true, "prompt": true,
	// Accepted and not passed on: OpenAI's storage, caching hints and the
	// client's own bookkeeping mean nothing to a chat upstream.
	"store": true, "include": true, "prompt_cache_key": true, "client_metadata": true,
	"truncation": true, "safety_identifier": true, "prompt_cache_retention": true,
}

// ToChat translates a Responses request body; history are the input and
// output items of the stored conversation it continues
// (previous_response_id), oldest first, nil for none.
func ToChat(body []byte, history []json.RawMessage) (*Request, *apierr.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apierr.BadRequest("", "request body is empty; send a JSON Responses request")
	}
	if !gjson.ValidBytes(body) {
		return nil, apierr.BadRequest("", "request body is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, apierr.BadRequest("", "request body must be a JSON object")
	}
	if err := refuseStateful(root); err != nil {
		return nil, err
	}
	b := &chatBody{}
	b.buf.WriteByte('{')
	root.ForEach(func(k, v gjson.Result) bool {
		if !consumed[k.Str] {
			b.raw(k.Str, v.Raw)
		}
		return true
	})

	msgs, err := messages(root.Get("instructions"), history, root.Get("input"))
	if err != nil {
		return nil, err
	}
	b.raw("messages", msgs)

	r := &Request{Stream: root.Get("stream").Bool(), Store: root.Get("store").Type != gjson.False}
	if in := root.Get("input"); in.Type == gjson.String {
		r.Input = []json.RawMessage{json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":` + in.Raw + `}]}`)}
	} else {
		in.ForEach(func(_, it gjson.Result) bool {
			r.Input = append(r.Input, json.RawMessage(it.Raw))
			return true
		})
	}
	if r.Stream {
		b.raw("stream", "true")
	}
	if v := root.Get("max_output_tokens"); v.Exists() && v.Type != gjson.Null {
		b.raw("max_tokens", v.Raw)
	}
	if v := root.Get("tools"); v.Exists() && v.Type != gjson.Null {
		tools, err := chatTools(v)
		if err != nil {
			return nil, err
		}
		if tools != "" {
			b.raw("tools", tools)
		}
	}
	if v := root.Get("tool_choice"); v.Exists() && v.Type != gjson.Null {
		tc, err := chatToolChoice(v)
		if err != nil {
			return nil, err
		}
		b.raw("tool_choice", tc)
	}
	if v := root.Get("text.format"); v.Exists() && v.Type != gjson.Null {
		rf, err := responseFormat(v)
		if err != nil {
			return nil, err
		}
		b.raw("response_format", rf)
	}
	if v := root.Get("reasoning"); v.Exists() && v.Type != gjson.Null {
		rs, err := reasoning(v)
		if err != nil {
			return nil, err
		}
		if rs != "" {
			b.raw("reasoning", rs)
		}
	}
	b.buf.WriteByte('}')
	r.Chat = b.buf.Bytes()
	r.Echo = Echo{
		Instructions: root.Get("instructions").Raw, MaxOutputTokens: root.Get("max_output_tokens").Raw,
		Temperature: root.Get("temperature").Raw, TopP: root.Get("top_p").Raw,
		Tools: root.Get("tools").Raw, ToolChoice: root.Get("tool_choice").Raw,
		ParallelToolCalls: root.Get("parallel_tool_calls").Raw, Reasoning: root.Get("reasoning").Raw,
		Text: root.Get("text").Raw, Truncation: root.Get("truncation").Raw,
		Metadata: root.Get("metadata").Raw, User: root.Get("user").Raw,
		PreviousResponseID: root.Get("previous_response_id").Raw, Store: r.Store,
	}
	return r, nil
}

// refuseStateful answers the fields that need stored responses or
// conversations, which this gateway does not keep.
func refuseStateful(root gjson.Result) *apierr.Error {
	for _, f := range []string{"conversation", "prompt"} {
		if v := root.Get(f); v.Exists() && v.Type != gjson.Null && v.Raw != `""` {
			return apierr.BadRequest(f, "not supported: this gateway keeps no conversations or prompts; continue a conversation with previous_response_id, or send it whole in input")
		}
	}
	if root.Get("background").Bool() {
		return apierr.BadRequest("background", "not supported: responses are answered in the request (stream:true for long ones)")
	}
	return nil
}

// chatBody writes a JSON object member by member; a key written twice keeps
// the first (a Responses field never shadows the gateway's own).
type chatBody struct {
	buf  bytes.Buffer
	keys []string
}

func (b *chatBody) raw(k, v string) {
	for _, have := range b.keys {
		if have == k {
			return
		}
	}
	if len(b.keys) > 0 {
		b.buf.WriteByte(',')
	}
	b.keys = append(b.keys, k)
	b.buf.Write(jsonstr.Append(b.buf.AvailableBuffer(), k)) // no copy of k made on the way
	b.buf.WriteByte(':')
	b.buf.WriteString(v)
}

// str is s as a JSON string.
func str(s string) string { return jsonstr.Quote(s) }

func bad(field, format string, args ...any) *apierr.Error {
	return apierr.BadRequest(field, format, args...)
}

// unsupported is the 400 of a Responses feature the gateway cannot serve.
func unsupported(field, what string) *apierr.Error {
	return &apierr.Error{Status: http.StatusBadRequest, Message: field + ": " + what + " is not supported by this gateway's Responses API", Param: field}
}

// oneOf reports whether v is among types.
func oneOf(v string, types ...string) bool {
	for _, t := range types {
		if v == t {
			return true
		}
	}
	return false
}

// itemPath names input item i's member for error messages.
func itemPath(i int, rest string) string {
	p := "input[" + strconv.Itoa(i) + "]"
	if rest != "" {
		p += "." + rest
	}
	return p
}
