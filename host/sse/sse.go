// Package sse reads and writes server-sent events. The reader parses
// upstream streams by the WHATWG EventSource rules; the writer helpers
// produce the gateway's own `data:` events.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrEventTooLarge is returned when an event exceeds the reader's limit.
var ErrEventTooLarge = errors.New("sse: event exceeds the size limit")

// Event is one dispatched event. Data joins multiple data lines with "\n".
type Event struct {
	Name string
	Data []byte
	ID   string
}

// Reader parses an event stream. Data slices are reused by the next call
// to Next: copy what you keep.
type Reader struct {
	br       *bufio.Reader
	max      int
	data     []byte
	line     []byte
	comments int
	started  bool
}

// NewReader reads events from r; an event larger than maxEventBytes is an
// error (it protects the gateway from an upstream that never ends a line).
func NewReader(r io.Reader, maxEventBytes int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 32<<10), max: maxEventBytes}
}

// Comments is the number of comment lines seen (upstream keep-alives).
func (r *Reader) Comments() int { return r.comments }

// readLine returns the next line without its terminator (\n, \r\n or \r).
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		b, err := r.br.ReadByte()
		if err != nil {
			if len(r.line) > 0 && errors.Is(err, io.EOF) {
				return r.line, nil
			}
			return nil, err
		}
		switch b {
		case '\n':
			return r.line, nil
		case '\r':
			if nb, err := r.br.Peek(1); err == nil && nb[0] == '\n' {
				_, _ = r.br.ReadByte()
			}
			return r.line, nil
		}
		if len(r.line) >= r.max {
			return nil, ErrEventTooLarge
		}
		r.line = append(r.line, b)
	}
}

// Next returns the next event with a non-empty data buffer or name. At the
// end of the stream it returns io.EOF; an event cut off by EOF without its
// blank line is still dispatched (browsers drop it, but an upstream that
// closes right after its last event has said what it had to say).
func (r *Reader) Next() (Event, error) {
	var ev Event
	r.data = r.data[:0]
	hasData := false
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && (hasData || ev.Name != "") {
				ev.Data = r.data
				return ev, nil
			}
			return Event{}, err
		}
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 {
			if hasData || ev.Name != "" {
				ev.Data = r.data
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			r.comments++
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			if len(r.data)+len(value) > r.max {
				return Event{}, ErrEventTooLarge
			}
			r.data = append(r.data, value...)
			hasData = true
		case "event":
			ev.Name = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID = string(value)
			}
		}
		// "retry" and unknown fields are ignored, as the standard says.
	}
}

// AppendEvent appends a `data:` event. Data with newlines becomes several
// data lines, which a reader joins back.
func AppendEvent(dst, data []byte) []byte {
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		dst = append(dst, "data: "...)
		dst = append(dst, bytes.TrimSuffix(data[:i], []byte("\r"))...)
		dst = append(dst, '\n')
		data = data[i+1:]
	}
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}

// AppendComment appends a comment line, the SSE keep-alive.
func AppendComment(dst []byte, text string) []byte {
	dst = append(dst, ": "...)
	dst = append(dst, text...)
	return append(dst, '\n', '\n')
}
