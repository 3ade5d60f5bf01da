package completions

import (
	"bytes"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Stream translates the gateway's chat event stream into text_completion
// chunks as it arrives. The gateway writes each event as one
// `data: <json>` line, so a line is translated alone: a chunk's choices
// become text choices (the delta's content as text, the echoed prompt
// before a choice's first text), an error chunk, `data: [DONE]` and
// `: keep-alive` comments pass as they are. Linear in the stream's size;
// the state is the line carried between two Feeds and which choices have
// had their echo.
type Stream struct {
	r      *Request
	line   []byte
	echoed map[int64]bool
	out    []byte
}

// NewStream starts a translation of the stream answering r.
func NewStream(r *Request) *Stream { return &Stream{r: r} }

// Feed translates chat SSE bytes; the result is valid until the next call.
func (s *Stream) Feed(p []byte) []byte {
	s.out = s.out[:0]
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.line = append(s.line, p...)
			break
		}
		if len(s.line) > 0 {
			s.line = append(s.line, p[:i+1]...)
			s.handleLine(s.line)
			s.line = s.line[:0]
		} else {
			s.handleLine(p[:i+1])
		}
		p = p[i+1:]
	}
	return s.out
}

// End translates what follows the last byte: a last line without its
// newline (the gateway's streams always end with one).
func (s *Stream) End() []byte {
	s.out = s.out[:0]
	if len(s.line) > 0 {
		s.handleLine(append(s.line, '\n'))
		s.line = s.line[:0]
	}
	return s.out
}

// handleLine writes line l (its newline included), translated when it
// carries a chunk.
func (s *Stream) handleLine(l []byte) {
	data, ok := bytes.CutPrefix(l, []byte("data: "))
	if !ok || len(data) == 0 || data[0] != '{' {
		s.out = append(s.out, l...)
		return
	}
	c := gjson.ParseBytes(bytes.TrimRight(data, "\r\n"))
	if c.Get("error").Exists() || !c.Get("choices").IsArray() {
		s.out = append(s.out, l...)
		return
	}
	choices := []byte{'['}
	c.Get("choices").ForEach(func(_, ch gjson.Result) bool {
		if len(choices) > 1 {
			choices = append(choices, ',')
		}
		echo := ""
		if idx := ch.Get("index").Int(); s.r.Echo != "" && !s.echoed[idx] {
			if s.echoed == nil {
				s.echoed = map[int64]bool{}
			}
			s.echoed[idx], echo = true, s.r.Echo
		}
		choices = appendChoice(choices, ch, ch.Get("delta"), echo)
		return true
	})
	choices = append(choices, ']')
	chunk, _ := sjson.SetBytes([]byte(c.Raw), "object", "text_completion")
	chunk, _ = sjson.SetRawBytes(chunk, "choices", choices)
	s.out = append(s.out, "data: "...)
	s.out = append(s.out, chunk...)
	s.out = append(s.out, '\n')
}
