package eventstream

import (
	"bytes"
	"io"
)

// SSE reads an event stream from r as server-sent events, one event per
// frame (see the package comment for the data each carries). A corrupt
// frame or a stream cut inside one is the reader's error.
type SSE struct {
	d   *Decoder
	buf []byte // the current event, reused
	out []byte // what of buf is not yet read
	err error
}

// NewSSE reads frames of at most maxFrame bytes from r.
func NewSSE(r io.Reader, maxFrame int) *SSE { return &SSE{d: NewDecoder(r, maxFrame)} }

func (s *SSE) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		f, err := s.d.Next()
		if err != nil {
			s.err = err
			continue
		}
		s.buf = AppendSSE(s.buf[:0], f)
		s.out = s.buf
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// AppendSSE appends frame f as one server-sent event to dst.
func AppendSSE(dst []byte, f Frame) []byte {
	var name string
	payload := f.Payload
	switch f.MessageType {
	case "exception":
		name = f.ExceptionType
	case "error":
		name = f.ErrorCode
		payload = append(quote([]byte(`{"message":`), f.ErrorMessage), '}')
	default:
		name = f.EventType
	}
	if len(bytes.TrimSpace(payload)) == 0 {
		payload = []byte("{}")
	}
	dst = append(dst, "data: {"...)
	i := len(dst) + 1 // the name's first byte, after the quote
	dst = quote(dst, name)
	if len(name) > 0 && dst[i] >= 'A' && dst[i] <= 'Z' {
		// An exception's type (ThrottlingException) as the union member
		// the SDKs name for it (throttlingException); event types are
		// already so (contentBlockDelta).
		dst[i] += 'a' - 'A'
	}
	dst = append(dst, ':')
	// JSON may be split over lines; each line is a data line, which the
	// SSE reader joins with the newlines back.
	for {
		i := bytes.IndexByte(payload, '\n')
		if i < 0 {
			break
		}
		dst = append(dst, bytes.TrimSuffix(payload[:i], []byte("\r"))...)
		dst = append(dst, "\ndata: "...)
		payload = payload[i+1:]
	}
	dst = append(dst, bytes.TrimSuffix(payload, []byte("\r"))...)
	return append(dst, "}\n\n"...)
}

// quote appends s as a JSON string to b.
func quote(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
