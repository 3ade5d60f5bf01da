package messages

import (
	"bytes"
	"strconv"
	"unsafe"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/tidwall/gjson"
)

// Stream translates the gateway's chat SSE stream (data: chunk events, the
// final usage chunk, an error chunk, [DONE]; comment keep-alives) into
// Anthropic's Messages events, event by event as the bytes come: Feed
// takes the chat stream's bytes in any pieces and returns the Anthropic
// events of the chat events they complete. Work and memory are linear in
// the stream's size; only an incomplete event is held.
//
// The events, as the SDKs parse them: message_start (the message with no
// content), then per block content_block_start, content_block_delta
// (text_delta, or input_json_delta for a tool call's arguments; one block
// per tool call index) and content_block_stop, then message_delta
// (stop_reason, usage) and message_stop. A failure is an error event, and
// ends the stream. Reasoning deltas are dropped, as in FromChat.
type Stream struct {
	model string
	in    []byte // the chat stream's bytes not yet a complete line
	data  []byte // the data of the event being read
	has   bool   // the event has a data line

	started bool          // message_start sent
	ended   bool          // message_stop or error sent: nothing more
	index   int           // the open block's index; -1 when none is open
	next    int           // the next block's index
	kind    string        // the open block's type
	tools   map[int64]int // tool call index → its block's index; made by the first call
	stop    string
	usage   Usage
}

// NewStream translates a chat stream for the model the client asked for.
func NewStream(model string) *Stream {
	return &Stream{model: model, index: -1}
}

// Feed appends to out the Anthropic events of the chat events p
// completes. A comment line (the gateway's keep-alive) becomes a ping.
func (s *Stream) Feed(out, p []byte) []byte {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.in = append(s.in, p...)
			return out
		}
		line := p[:i]
		if len(s.in) > 0 {
			s.in = append(s.in, line...)
			line = s.in
		}
		out = s.line(out, bytes.TrimSuffix(line, []byte("\r")))
		s.in = s.in[:0]
		p = p[i+1:]
	}
	return out
}

// Close ends the translation at the end of the chat stream: an event cut
// off without its blank line is still handled, and a stream that never
// ended ([DONE] or an error) ends with an error event.
func (s *Stream) Close(out []byte) []byte {
	if len(s.in) > 0 {
		out = s.line(out, s.in)
		s.in = s.in[:0]
	}
	out = s.line(out, nil)
	if !s.ended {
		out = s.fail(out, apierr.New(502, "the stream ended before the answer was complete"))
	}
	return out
}

func (s *Stream) line(out, line []byte) []byte {
	switch {
	case len(line) == 0:
		if s.has {
			out = s.event(out, s.data)
			s.data, s.has = s.data[:0], false
		}
	case line[0] == ':':
		if !s.ended {
			out = appendEvent(out, "ping", []byte(`{"type":"ping"}`))
		}
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(line[5:], []byte(" "))
		if s.has {
			s.data = append(s.data, '\n')
		}
		s.data, s.has = append(s.data, v...), true
	}
	return out
}

// event translates one chat event. The events are built by appending to
// out, not marshalled: this runs once per chunk of every translated
// stream, and its cost is what the front door adds to chat's
// (docs/performance.md).
func (s *Stream) event(out, data []byte) []byte {
	if s.ended {
		return out
	}
	if string(data) == "[DONE]" {
		return s.finish(out)
	}
	// data is read in place (gjson.ParseBytes would copy it): no string
	// taken from it outlives this call; what is kept (usage, the stop
	// reason) is numbers and constants.
	c := gjson.Parse(unsafe.String(unsafe.SliceData(data), len(data)))
	if e := c.Get("error"); e.Exists() {
		status := int(e.Get("code").Int())
		if status == 0 {
			status = 502
		}
		return s.fail(out, &apierr.Error{Status: status, Message: e.Get("message").Str})
	}
	out = s.start(out, c.Get("id").Str, c.Get("model").Str)
	if u := c.Get("usage"); u.IsObject() {
		s.usage = usageOf(u)
	}
	c.Get("choices").ForEach(func(_, ch gjson.Result) bool {
		if ch.Get("index").Int() != 0 {
			return true // Messages has one answer
		}
		d := ch.Get("delta")
		if t := d.Get("content"); t.Type == gjson.String && t.Str != "" {
			out = s.text(out, t.Str)
		}
		d.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
			out = s.toolCall(out, tc)
			return true
		})
		if f := ch.Get("finish_reason"); f.Type == gjson.String && f.Str != "" {
			s.stop = StopReason(f.Str)
		}
		return true
	})
	return out
}

// start sends message_start before anything else.
// model is the model that answers, as the chunk names it (a fallback's
// when one answered), or the one asked for.
func (s *Stream) start(out []byte, id, model string) []byte {
	if s.started {
		return out
	}
	s.started = true
	if model == "" {
		model = s.model
	}
	out = eventHead(out, "message_start")
	out = append(out, `{"type":"message_start","message":{"id":`...)
	out = jsonstr.Append(out, MessageID(id))
	out = append(out, `,"type":"message","role":"assistant","model":`...)
	out = jsonstr.Append(out, model)
	out = append(out, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	out = appendUsage(out, Usage{})
	return append(out, "}}\n\n"...)
}

// appendUsage appends u as Usage marshals.
func appendUsage(out []byte, u Usage) []byte {
	out = append(out, `{"input_tokens":`...)
	out = strconv.AppendInt(out, u.InputTokens, 10)
	out = append(out, `,"output_tokens":`...)
	out = strconv.AppendInt(out, u.OutputTokens, 10)
	out = append(out, `,"cache_creation_input_tokens":`...)
	out = strconv.AppendInt(out, u.CacheCreationInputTokens, 10)
	out = append(out, `,"cache_read_input_tokens":`...)
	out = strconv.AppendInt(out, u.CacheReadInputTokens, 10)
	return append(out, '}')
}

func (s *Stream) text(out []byte, t string) []byte {
	if s.kind != "text" {
		out = s.stopBlock(out)
		out = s.openBlock(out, "text")
		out = append(out, `{"type":"text","text":""}}`+"\n\n"...)
	}
	out = s.delta(out, s.index, `{"type":"text_delta","text":`)
	out = jsonstr.Append(out, t)
	return append(out, "}}\n\n"...)
}

// toolCall handles one tool call delta: its first opens a tool_use block
// (id and name), each arguments piece is an input_json_delta.
func (s *Stream) toolCall(out []byte, tc gjson.Result) []byte {
	idx := tc.Get("index").Int()
	block, seen := s.tools[idx]
	if !seen {
		out = s.stopBlock(out)
		out = s.openBlock(out, "tool_use")
		out = append(out, `{"type":"tool_use","id":`...)
		out = jsonstr.Append(out, tc.Get("id").Str)
		out = append(out, `,"name":`...)
		out = jsonstr.Append(out, tc.Get("function.name").Str)
		out = append(out, `,"input":{}}}`+"\n\n"...)
		block = s.index
		if s.tools == nil {
			s.tools = map[int64]int{}
		}
		s.tools[idx] = block
	}
	if a := tc.Get("function.arguments").Str; a != "" {
		// a late piece of an earlier call goes to its block
		out = s.delta(out, block, `{"type":"input_json_delta","partial_json":`)
		out = jsonstr.Append(out, a)
		out = append(out, "}}\n\n"...)
	}
	return out
}

// openBlock opens the next block of the given kind: it appends its
// content_block_start event up to the content block, which the caller
// appends, followed by "}\n\n".
func (s *Stream) openBlock(out []byte, kind string) []byte {
	s.index, s.kind = s.next, kind
	s.next++
	out = eventHead(out, "content_block_start")
	out = append(out, `{"type":"content_block_start","index":`...)
	out = strconv.AppendInt(out, int64(s.index), 10)
	return append(out, `,"content_block":`...)
}

func (s *Stream) stopBlock(out []byte) []byte {
	if s.index < 0 {
		return out
	}
	out = eventHead(out, "content_block_stop")
	out = append(out, `{"type":"content_block_stop","index":`...)
	out = strconv.AppendInt(out, int64(s.index), 10)
	s.index, s.kind = -1, ""
	return append(out, "}\n\n"...)
}

// delta appends a content_block_delta event of block up to its delta's
// value: head opens the delta object; the caller appends the value and
// "}}\n\n".
func (s *Stream) delta(out []byte, block int, head string) []byte {
	out = eventHead(out, "content_block_delta")
	out = append(out, `{"type":"content_block_delta","index":`...)
	out = strconv.AppendInt(out, int64(block), 10)
	out = append(out, `,"delta":`...)
	return append(out, head...)
}

// finish ends a completed stream: message_delta (stop reason, usage) and
// message_stop.
func (s *Stream) finish(out []byte) []byte {
	out = s.start(out, "", "")
	out = s.stopBlock(out)
	s.ended = true
	stop := s.stop
	if stop == "" {
		stop = "end_turn"
	}
	out = eventHead(out, "message_delta")
	out = append(out, `{"type":"message_delta","delta":{"stop_reason":`...)
	out = jsonstr.Append(out, stop)
	out = append(out, `,"stop_sequence":null},"usage":`...)
	out = appendUsage(out, s.usage)
	out = append(out, "}\n\n"...)
	return append(out, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

// fail ends the stream with an error event.
func (s *Stream) fail(out []byte, e *apierr.Error) []byte {
	s.ended = true
	return appendEvent(out, "error", Envelope(e))
}

// ErrorEvent appends the error event that ends a stream with e: what a
// native stream (the provider's own events) ends with when it fails.
func ErrorEvent(out []byte, e *apierr.Error) []byte { return appendEvent(out, "error", Envelope(e)) }

// appendEvent appends one named event; data is one line of JSON.
func appendEvent(out []byte, name string, data []byte) []byte {
	out = append(eventHead(out, name), data...)
	return append(out, '\n', '\n')
}

// eventHead appends an event's name line and its data line's prefix.
func eventHead(out []byte, name string) []byte {
	out = append(append(append(out, "event: "...), name...), '\n')
	return append(out, "data: "...)
}
