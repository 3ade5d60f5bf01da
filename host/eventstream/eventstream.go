// Package eventstream decodes AWS's binary event-stream framing
// (application/vnd.amazon.eventstream), the way Bedrock's ConverseStream
// and InvokeModelWithResponseStream send a stream, into the server-sent
// events the gateway's one upstream stream loop reads.
//
// The frames are decoded in the host, not in the adapter module: the ABI
// hands a module one event at a time through its stream hook, and the host
// already owns the transport framing of every other stream (SSE lines).
// Each frame becomes one event whose data is the JSON union member AWS's
// SDKs build from it — {"<event-type>": <payload>} for an event,
// {"<exception-type>": <payload>} for an exception — so the adapter
// translates the ConverseStream output shapes of the API reference and
// never sees bytes, lengths or checksums.
//
// A frame (https://docs.aws.amazon.com/transcribe/latest/dg/event-stream.html,
// the same encoding for every service): total length (4 bytes, big
// endian), headers length (4), CRC-32 of those 8 bytes (4), headers,
// payload, CRC-32 of everything before it (4). A header is a name length
// (1), the name, a value type (1) and the value; only strings (type 7)
// are read, others skipped by their size.
package eventstream

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// ContentType is the media type of an event-stream response.
const ContentType = "application/vnd.amazon.eventstream"

const (
	preludeLen = 12
	minFrame   = preludeLen + 4
)

// Frame is one decoded message. Its slices alias the decoder's buffer
// until the next call to Next.
type Frame struct {
	MessageType   string // "event", "exception" or "error"
	EventType     string // :event-type of an event
	ExceptionType string // :exception-type of an exception
	ErrorCode     string // :error-code of an error
	ErrorMessage  string // :error-message of an error
	Payload       []byte
}

// Decoder reads frames from a stream.
type Decoder struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewDecoder reads frames of at most maxFrame bytes from r.
func NewDecoder(r io.Reader, maxFrame int) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 32<<10), max: maxFrame}
}

// ErrCorrupt is a frame whose lengths or checksums are wrong.
var ErrCorrupt = errors.New("eventstream: corrupt frame")

// Next returns the next frame; io.EOF at a clean end between frames,
// io.ErrUnexpectedEOF inside one.
func (d *Decoder) Next() (Frame, error) {
	var prelude [preludeLen]byte
	if _, err := io.ReadFull(d.r, prelude[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Frame{}, err
		}
		return Frame{}, err // io.EOF: the stream ended between frames
	}
	total := int(binary.BigEndian.Uint32(prelude[0:4]))
	hlen := int(binary.BigEndian.Uint32(prelude[4:8]))
	if crc32.ChecksumIEEE(prelude[:8]) != binary.BigEndian.Uint32(prelude[8:12]) {
		return Frame{}, fmt.Errorf("%w: prelude checksum", ErrCorrupt)
	}
	if total < minFrame || total > d.max || hlen > total-minFrame {
		return Frame{}, fmt.Errorf("%w: length %d (headers %d, limit %d)", ErrCorrupt, total, hlen, d.max)
	}
	if cap(d.buf) < total {
		d.buf = make([]byte, total)
	}
	msg := d.buf[:total]
	copy(msg, prelude[:])
	if _, err := io.ReadFull(d.r, msg[preludeLen:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	if crc32.ChecksumIEEE(msg[:total-4]) != binary.BigEndian.Uint32(msg[total-4:]) {
		return Frame{}, fmt.Errorf("%w: message checksum", ErrCorrupt)
	}
	f := Frame{Payload: msg[preludeLen+hlen : total-4]}
	if err := headers(msg[preludeLen:preludeLen+hlen], &f); err != nil {
		return Frame{}, err
	}
	return f, nil
}

// headers reads the string headers the gateway needs; a header of another
// type is skipped by its size.
func headers(h []byte, f *Frame) error {
	for len(h) > 0 {
		n := int(h[0])
		if len(h) < 1+n+1 {
			return fmt.Errorf("%w: header name", ErrCorrupt)
		}
		name := h[1 : 1+n]
		typ := h[1+n]
		h = h[2+n:]
		var size int
		switch typ {
		case 0, 1: // bool true, false
		case 2: // byte
			size = 1
		case 3: // int16
			size = 2
		case 4: // int32
			size = 4
		case 5, 8: // int64, timestamp
			size = 8
		case 6, 7: // bytes, string: 2-byte length
			if len(h) < 2 {
				return fmt.Errorf("%w: header %q", ErrCorrupt, name)
			}
			size = 2 + int(binary.BigEndian.Uint16(h))
		case 9: // uuid
			size = 16
		default:
			return fmt.Errorf("%w: header %q has type %d", ErrCorrupt, name, typ)
		}
		if len(h) < size {
			return fmt.Errorf("%w: header %q", ErrCorrupt, name)
		}
		if typ == 7 {
			v := interned(h[2:size])
			switch string(name) { // no allocation: compared, not kept
			case ":message-type":
				f.MessageType = v
			case ":event-type":
				f.EventType = v
			case ":exception-type":
				f.ExceptionType = v
			case ":error-code":
				f.ErrorCode = v
			case ":error-message":
				f.ErrorMessage = v
			}
		}
		h = h[size:]
	}
	return nil
}

// Encode appends the frame of a message with string headers (name,
// value pairs) and payload to dst: for fakes and tests.
func Encode(dst []byte, payload []byte, headers ...string) []byte {
	var h []byte
	for i := 0; i+1 < len(headers); i += 2 {
		h = append(h, byte(len(headers[i])))
		h = append(h, headers[i]...)
		h = append(h, 7)
		h = binary.BigEndian.AppendUint16(h, uint16(len(headers[i+1])))
		h = append(h, headers[i+1]...)
	}
	start := len(dst)
	total := preludeLen + len(h) + len(payload) + 4
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(h)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:start+8]))
	dst = append(dst, h...)
	dst = append(dst, payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:]))
}

// known are the header values of every ConverseStream frame, returned
// without allocating a string per frame.
var known = []string{"event", "exception", "error", "application/json",
	"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata", "chunk"}

func interned(b []byte) string {
	for _, k := range known {
		if string(b) == k {
			return k
		}
	}
	return string(b)
}
