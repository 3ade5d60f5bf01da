package responses

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/tidwall/gjson"
)

// Stream translates the gateway's chat event stream (`data: <chunk>`
// events, `: comment` keep-alives, `data: [DONE]`) into the Responses
// API's events, as it arrives: Feed takes any split of the chat bytes and
// returns what goes to the client for the complete lines among them.
// Comments pass through (the SDKs ignore them). The state is the response
// being built — its text and arguments, which response.completed repeats
// whole, as OpenAI's does — so the work and memory are linear in the
// stream's size.
//
// Events, in order: response.created, response.in_progress; for each
// output item output_item.added, then reasoning_summary_part.added,
// reasoning_summary_text.delta…, reasoning_summary_text.done,
// reasoning_summary_part.done (the model's reasoning), content_part.added,
// output_text.delta…, output_text.done, content_part.done (a message) or
// function_call_arguments.delta…, function_call_arguments.done (a call),
// then output_item.done; finally response.completed (response.incomplete
// when the token limit cut it), or error and response.failed when the
// chat stream ended in its error chunk.
type Stream struct {
	// Done, when set, is called with the response of response.completed
	// (or response.incomplete) before that event is returned: where a
	// stored response is kept.
	Done func(response []byte)

	a        answer
	seq      int
	started  bool
	ended    bool
	open     *output         // the item receiving deltas, nil none
	calls    map[int]*output // chat tool call index → its item
	line     []byte          // an incomplete line carried to the next Feed
	data     []byte          // the data lines of the event being read
	hasData  bool            // the event being read has a data line
	answered bool            // a message or a function call was output
	out      []byte
}

// NewStream starts a translation.
func NewStream(echo Echo) *Stream {
	// out starts at the size of a short answer's events, not grown to it.
	return &Stream{a: answer{echo: echo}, out: make([]byte, 0, 4<<10)}
}

// Feed translates chat SSE bytes; the result is valid until the next call.
func (s *Stream) Feed(p []byte) []byte {
	s.out = s.out[:0]
	if len(s.line) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.line = append(s.line, p...)
			return s.out
		}
		s.line = append(s.line, p[:i+1]...)
		s.handleLine(s.line)
		s.line = s.line[:0]
		p = p[i+1:]
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.line = append(s.line, p...)
			break
		}
		s.handleLine(p[:i+1])
		p = p[i+1:]
	}
	return s.out
}

// End translates the end of the chat stream: one that stopped without its
// end ([DONE] or an error chunk), which the gateway's own streams do not
// do, still ends as the SDK expects, failed. The result is valid until
// the next call.
func (s *Stream) End() []byte {
	s.out = s.out[:0]
	if len(s.line) > 0 {
		s.handleLine(append(s.line, '\n'))
		s.line = s.line[:0]
	}
	if s.hasData {
		s.event(s.data)
		s.data, s.hasData = s.data[:0], false
	}
	if !s.ended {
		if !s.started {
			s.started = true
			s.emit("response.created", `"response":`+string(s.a.response("in_progress", "", "", false)))
		}
		s.fail(gjson.Parse(`{"code":502,"message":"the stream ended before the answer did"}`))
	}
	return s.out
}

// handleLine handles one line, its "\n" included.
func (s *Stream) handleLine(l []byte) {
	body := bytes.TrimRight(l, "\r\n")
	switch {
	case len(body) == 0:
		if s.hasData {
			s.event(s.data)
			s.data, s.hasData = s.data[:0], false
		}
	case body[0] == ':':
		s.out = append(s.out, body...)
		s.out = append(s.out, '\n')
	case bytes.HasPrefix(body, []byte("data:")):
		d := bytes.TrimPrefix(body[5:], []byte(" "))
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data, s.hasData = append(s.data, d...), true
	}
}

// event translates one chat event.
func (s *Stream) event(data []byte) {
	if s.ended {
		return
	}
	if bytes.Equal(data, []byte("[DONE]")) {
		s.complete()
		return
	}
	c := gjson.ParseBytes(data)
	if !c.IsObject() {
		return
	}
	s.a.identify(c)
	if !s.started {
		s.started = true
		r := string(s.a.response("in_progress", "", "", false))
		s.emit("response.created", `"response":`+r)
		s.emit("response.in_progress", `"response":`+r)
	}
	if m := c.Get("service_metadata"); m.IsObject() {
		s.a.meta = m.Raw
	}
	if u := c.Get("usage"); u.IsObject() {
		s.a.usage = u
	}
	choice := c.Get("choices.0")
	if !choice.Exists() {
		return
	}
	if fr := choice.Get("finish_reason").Str; fr != "" {
		s.a.finish = fr
	}
	if s.a.finish == "error" || c.Get("error").IsObject() {
		s.fail(c.Get("error"))
		return
	}
	d := choice.Get("delta")
	if !d.Exists() {
		d = choice.Get("message") // a whole completion (a plugin's answer)
	}
	if r := reasoningText(d); r != "" {
		s.reasoning(r)
	}
	if t := d.Get("content").Str; t != "" {
		s.text(t)
	}
	if r := d.Get("refusal").Str; r != "" {
		s.text("") // opens the message
		s.open.refuse += r
	}
	d.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		s.toolCall(tc)
		return true
	})
}

// reasoning adds reasoning text to the open reasoning item (its one
// summary part), opening one first.
func (s *Stream) reasoning(t string) {
	o := s.open
	if o == nil || o.kind != "reasoning" {
		s.closeOpen()
		o = s.a.item("reasoning")
		s.open = o
		s.emit("response.output_item.added", s.at(o)+`,"item":{"type":"reasoning","id":`+str(o.id)+`,"summary":[]}`)
		s.emit("response.reasoning_summary_part.added", s.summary(o)+`,"part":{"type":"summary_text","text":""}`)
	}
	o.text.WriteString(t)
	s.begin("response.reasoning_summary_text.delta")
	s.appendItem(o, `,"summary_index":0,"delta":`)
	s.out = jsonstr.Append(s.out, t)
	s.out = append(s.out, "}\n\n"...)
}

// text adds text to the open message, opening one first.
func (s *Stream) text(t string) {
	s.answered = true
	o := s.open
	if o == nil || o.kind != "message" {
		s.closeOpen()
		o = s.a.item("message")
		s.open = o
		// Empty: the SDKs build the item from the events that follow.
		s.emit("response.output_item.added", s.at(o)+`,"item":{"type":"message","id":`+str(o.id)+`,"status":"in_progress","role":"assistant","content":[]}`)
		s.emit("response.content_part.added", s.part(o)+`,"part":{"type":"output_text","text":"","annotations":[]}`)
	}
	if t == "" {
		return
	}
	o.text.WriteString(t)
	s.begin("response.output_text.delta")
	s.appendItem(o, `,"content_index":0,"delta":`)
	s.out = jsonstr.Append(s.out, t)
	s.out = append(s.out, `,"logprobs":[]}`+"\n\n"...)
}

// toolCall adds one chat tool call delta: its first opens a function_call
// item, its argument fragments are that item's deltas.
func (s *Stream) toolCall(tc gjson.Result) {
	s.answered = true
	idx := int(tc.Get("index").Int())
	if s.calls == nil {
		s.calls = map[int]*output{}
	}
	o := s.calls[idx]
	if o == nil {
		s.closeOpen()
		o = s.a.item("function_call")
		o.callID, o.name = tc.Get("id").Str, tc.Get("function.name").Str
		s.calls[idx] = o
		s.open = o
		s.emit("response.output_item.added", s.at(o)+`,"item":`+o.json("in_progress"))
	}
	if args := tc.Get("function.arguments").Str; args != "" {
		o.text.WriteString(args)
		s.begin("response.function_call_arguments.delta")
		s.appendItem(o, `,"delta":`)
		s.out = jsonstr.Append(s.out, args)
		s.out = append(s.out, "}\n\n"...)
	}
}

// closeOpen ends the open item with its done events.
func (s *Stream) closeOpen() {
	o := s.open
	if o == nil {
		return
	}
	s.open = nil
	switch o.kind {
	case "reasoning":
		s.emit("response.reasoning_summary_text.done", s.summary(o)+`,"text":`+str(o.text.String()))
		s.emit("response.reasoning_summary_part.done", s.summary(o)+`,"part":`+o.summaryPart())
	case "message":
		s.emit("response.output_text.done", s.part(o)+`,"text":`+str(o.text.String())+`,"logprobs":[]`)
		s.emit("response.content_part.done", s.part(o)+`,"part":`+o.textPart())
	default:
		s.emit("response.function_call_arguments.done", `"item_id":`+str(o.id)+`,"output_index":`+s.index(o)+
			`,"name":`+str(o.name)+`,"arguments":`+str(o.text.String()))
	}
	s.emit("response.output_item.done", s.at(o)+`,"item":`+o.json("completed"))
}

// complete ends a stream the chat stream completed.
func (s *Stream) complete() {
	if !s.started {
		return // nothing was answered: nothing to complete
	}
	if !s.answered {
		s.text("") // an answer without text or calls has an empty message, as in FromChat
	}
	s.closeOpen()
	s.ended = true
	status, incomplete := s.a.status()
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	resp := s.a.response(status, incomplete, "", true)
	if s.Done != nil {
		s.Done(resp)
	}
	s.emit(typ, `"response":`+string(resp))
}

// fail ends a stream whose chat stream ended in an error chunk: OpenAI's
// error event, then response.failed with the error in the response.
func (s *Stream) fail(e gjson.Result) {
	s.ended = true
	msg := e.Get("message").Str
	if msg == "" {
		msg = "the generation failed"
	}
	status := int(e.Get("code").Int())
	code := ErrorCode(status, status == http.StatusBadRequest && e.Get("metadata.context_length").Exists())
	if code == "" {
		code = "invalid_prompt" // response.error.code is never null
	}
	s.emit("error", `"code":`+str(code)+`,"message":`+str(msg)+`,"param":null`)
	s.emit("response.failed", `"response":`+string(s.a.response("failed", "", `{"code":`+str(code)+`,"message":`+str(msg)+`}`, true)))
}

func (s *Stream) index(o *output) string { return strconv.Itoa(o.index) }

func (s *Stream) at(o *output) string { return `"output_index":` + s.index(o) }

func (s *Stream) summary(o *output) string {
	return `"item_id":` + str(o.id) + `,"output_index":` + s.index(o) + `,"summary_index":0`
}

func (s *Stream) part(o *output) string {
	return `"item_id":` + str(o.id) + `,"output_index":` + s.index(o) + `,"content_index":0`
}

// emit frames one Responses event: `event:` names it, data carries its
// type and sequence number with fields.
func (s *Stream) emit(typ, fields string) {
	s.begin(typ)
	if fields != "" {
		s.out = append(s.out, ',')
		s.out = append(s.out, fields...)
	}
	s.out = append(s.out, "}\n\n"...)
}

// begin appends an event up to its sequence number: the caller appends
// the rest of its fields (each after a comma) and "}\n\n". The delta
// events, one per chunk, are built so, with no string made in between.
func (s *Stream) begin(typ string) {
	s.out = append(s.out, "event: "...)
	s.out = append(s.out, typ...)
	s.out = append(s.out, "\ndata: {\"type\":"...)
	s.out = jsonstr.Append(s.out, typ)
	s.out = append(s.out, `,"sequence_number":`...)
	s.out = strconv.AppendInt(s.out, int64(s.seq), 10)
	s.seq++
}

// appendItem appends o's item_id and output_index fields, then more.
func (s *Stream) appendItem(o *output, more string) {
	s.out = append(s.out, `,"item_id":`...)
	s.out = jsonstr.Append(s.out, o.id)
	s.out = append(s.out, `,"output_index":`...)
	s.out = strconv.AppendInt(s.out, int64(o.index), 10)
	s.out = append(s.out, more...)
}
