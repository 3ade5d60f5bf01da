// Package sse reads and writes server-sent events. The reader parses
// upstream streams by the WHATWG EventSource rules
// (https://html.spec.whatwg.org/multipage/server-sent-events.html); the
// writer helpers produce the gateway's own `data:` events.
package sse

import (
	"bytes"
	"errors"
	"io"
)

// ErrEventTooLarge is returned when an event's data, or one line, exceeds
// the reader's limit.
var ErrEventTooLarge = errors.New("sse: event exceeds the size limit")

// Event is one dispatched event.
type Event struct {
	// Name is the event type (the `event:` field); empty means the default
	// type, "message".
	Name string
	// Data joins the event's data lines with "\n". It aliases the reader's
	// buffer and is overwritten by the next call to Next: copy what you keep.
	Data []byte
	// ID is the stream's last event ID as of this event: as the standard
	// says, an `id:` field sets it for this and every later event until
	// another `id:` changes it.
	ID string
}

// Reader parses an event stream.
type Reader struct {
	src   io.Reader
	buf   []byte // unread input is buf[start:end]
	start int
	end   int
	scan  int // buf[start:scan] holds no line terminator
	max   int
	err   error // from src; returned once the buffer is drained
	fatal error // sticky: ErrEventTooLarge or a read error

	skipLF  bool // the last line ended in \r: a \n right after it belongs to it
	started bool // the first line (and its BOM) has been read

	data      []byte
	hasData   bool   // the event being read has a data line
	partial   bool   // an event is begun: TryNext found it incomplete
	name      string // event type buffer
	lastID    string // last event ID buffer
	nameCache string // the previous event type, to reuse its string
	comments  int
}

const (
	// initialBuffer holds a few chat chunks (a few hundred bytes each); a
	// longer event grows it. It is held per open stream, for as long as
	// the stream is open, so it is small: what the reader reads comes out
	// of the upstream connection's own 4 KiB buffer, and a smaller buffer
	// here costs a copy, not a system call.
	initialBuffer = 1 << 10
	// lineAllowance lets a line carry its field name on top of a value of
	// maxEventBytes.
	lineAllowance = 64
	// maxEmptyReads is how many (0, nil) reads in a row are tolerated, as
	// bufio does, before reporting io.ErrNoProgress.
	maxEmptyReads = 100
)

// NewReader reads events from r. An event whose data exceeds maxEventBytes,
// or a line longer than maxEventBytes plus a small allowance for the field
// name, is an error: it protects the gateway from an upstream that never
// ends a line or an event.
func NewReader(r io.Reader, maxEventBytes int) *Reader {
	if maxEventBytes < 1 {
		maxEventBytes = 1
	}
	size := initialBuffer
	if limit := maxEventBytes + lineAllowance; size > limit {
		size = limit
	}
	return &Reader{src: r, buf: make([]byte, size), max: maxEventBytes}
}

// Comments is the number of comment lines (": keep-alive") seen so far;
// they are not events, but show that the upstream is alive.
func (r *Reader) Comments() int { return r.comments }

// Next returns the next event, or io.EOF at the end of the stream.
//
// Parsing follows the standard: lines end in \r\n, \n or \r; a leading
// UTF-8 BOM is dropped; a line starting with ':' is a comment; a line
// without a colon is a field with an empty value; one space after the colon
// is dropped; the fields are data, event, id (ignored when it contains NUL)
// and retry (ignored here: the gateway does not reconnect); other fields
// are ignored; a blank line dispatches the event, unless it has no data
// line, in which case it is dropped.
//
// One deliberate difference: an event cut off by the end of the stream,
// without its blank line, is still dispatched. Browsers drop it, but an
// upstream that closes right after its last event has said what it had to
// say, and dropping a final usage chunk would lose billing data.
func (r *Reader) Next() (Event, error) {
	ev, _, err := r.next(true)
	return ev, err
}

// TryNext is Next without waiting for the source: when what is buffered
// holds no complete event it returns ok false (and no error), and the next
// call, Next or TryNext, goes on with the event it had begun. A relay uses
// it to send what it already has before it waits for more.
func (r *Reader) TryNext() (ev Event, ok bool, err error) {
	return r.next(false)
}

// errWouldBlock is readLine's answer, when it may not wait, to a line that
// is not complete in the buffer.
var errWouldBlock = errors.New("sse: would block")

func (r *Reader) next(wait bool) (Event, bool, error) {
	if r.fatal != nil {
		return Event{}, true, r.fatal
	}
	if !r.partial {
		r.data = r.data[:0]
		r.hasData = false
		r.partial = true
	}
	for {
		line, err := r.readLine(wait)
		if err == errWouldBlock {
			return Event{}, false, nil
		}
		if err != nil {
			r.partial = false
			if err == io.EOF && r.hasData {
				return r.dispatch(), true, nil
			}
			if err != io.EOF {
				r.fatal = err
			}
			r.name = ""
			return Event{}, true, err
		}
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, bom)
		}
		if len(line) == 0 {
			if r.hasData {
				r.partial = false
				return r.dispatch(), true, nil
			}
			r.name = "" // an event without data is not dispatched
			continue
		}
		if line[0] == ':' {
			r.comments++
			continue
		}
		field, value := line, line[len(line):]
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if r.hasData {
				r.data = append(r.data, '\n')
			}
			if len(r.data)+len(value) > r.max {
				r.partial = false
				r.fatal = ErrEventTooLarge
				return Event{}, true, r.fatal
			}
			r.data = append(r.data, value...)
			r.hasData = true
		case "event":
			if string(value) != r.nameCache {
				r.nameCache = string(value)
			}
			r.name = r.nameCache
		case "id":
			if bytes.IndexByte(value, 0) < 0 && string(value) != r.lastID {
				r.lastID = string(value)
			}
		}
	}
}

var bom = []byte("\xEF\xBB\xBF")

func (r *Reader) dispatch() Event {
	ev := Event{Name: r.name, Data: r.data, ID: r.lastID}
	r.name = ""
	return ev
}

// readLine returns the next line without its terminator. The line aliases
// the buffer and is valid until the next call. At the end of input a final
// unterminated line is returned, then the source's error (io.EOF).
func (r *Reader) readLine(wait bool) ([]byte, error) {
	empty := 0
	for {
		if r.skipLF && r.start < r.end {
			if r.buf[r.start] == '\n' {
				r.start++
				if r.scan < r.start {
					r.scan = r.start
				}
			}
			r.skipLF = false
		}
		if i := indexEOL(r.buf[r.scan:r.end]); i >= 0 {
			eol := r.scan + i
			line := r.buf[r.start:eol]
			next := eol + 1
			if r.buf[eol] == '\r' {
				if next < r.end {
					if r.buf[next] == '\n' {
						next++
					}
				} else {
					r.skipLF = true // the \n, if any, is not read yet
				}
			}
			r.start, r.scan = next, next
			return line, nil
		}
		r.scan = r.end
		if r.end-r.start > r.max+lineAllowance {
			r.fatal = ErrEventTooLarge
			return nil, r.fatal
		}
		if r.err != nil {
			if r.start < r.end {
				line := r.buf[r.start:r.end]
				r.start, r.scan = r.end, r.end
				return line, nil
			}
			return nil, r.err
		}
		if !wait {
			return nil, errWouldBlock
		}
		if n := r.fill(); n > 0 || r.err != nil {
			empty = 0
		} else if empty++; empty >= maxEmptyReads {
			r.err = io.ErrNoProgress
		}
	}
}

// fill reads more input, first making room by dropping consumed bytes or
// growing the buffer.
func (r *Reader) fill() int {
	if r.start > 0 && (r.end == len(r.buf) || r.start >= len(r.buf)/2) {
		n := copy(r.buf, r.buf[r.start:r.end])
		r.scan -= r.start
		r.end = n
		r.start = 0
	}
	if r.end == len(r.buf) {
		size := 2 * len(r.buf)
		if limit := r.max + lineAllowance + 1; size > limit {
			size = limit
		}
		if size <= len(r.buf) { // cannot happen: the line limit stops first
			size = len(r.buf) + 1
		}
		grown := make([]byte, size)
		copy(grown, r.buf[:r.end])
		r.buf = grown
	}
	n, err := r.src.Read(r.buf[r.end:])
	if n < 0 || n > len(r.buf)-r.end {
		n, err = 0, errors.New("sse: invalid read count from the source")
	}
	r.end += n
	if err != nil {
		r.err = err
	}
	return n
}

// indexEOL is the index of the first \n or \r in b, or -1.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	limit := b
	if i >= 0 {
		limit = b[:i]
	}
	if j := bytes.IndexByte(limit, '\r'); j >= 0 {
		return j
	}
	return i
}

// AppendEvent appends a `data:` event carrying data. The gateway's data is
// single-line JSON, giving one `data: <data>` line; data with line breaks
// (\n, \r\n or \r) becomes one data line per line, which a reader joins back
// with "\n". A bare \r therefore cannot end the line early and inject a
// field.
func AppendEvent(dst, data []byte) []byte {
	for {
		i := indexEOL(data)
		if i < 0 {
			break
		}
		dst = append(dst, "data: "...)
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}

// AppendComment appends a comment, the SSE keep-alive: ": text\n\n". Text
// with line breaks becomes several comment lines.
func AppendComment(dst []byte, text string) []byte {
	for {
		i := indexEOLString(text)
		if i < 0 {
			break
		}
		dst = append(dst, ": "...)
		dst = append(dst, text[:i]...)
		dst = append(dst, '\n')
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
	dst = append(dst, ": "...)
	dst = append(dst, text...)
	return append(dst, '\n', '\n')
}

func indexEOLString(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			return i
		}
	}
	return -1
}
