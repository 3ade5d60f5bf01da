package server

import (
	"bufio"
	"io"
	"slices"
)

// translatedReader is a chat event stream (src, the pump) read as its
// translation: the body of a response the transport pulls. Close closes
// src, so a client that left ends the stream as it would on chat.
type translatedReader struct {
	src  io.ReadCloser
	t    streamTranslator
	buf  []byte
	out  []byte
	sent int
	eof  bool
}

// Read returns the translation of what src has next. It reads src again
// only once everything translated before was returned, and src ends its
// reads on whole events: the keep-alives the pump writes straight to the
// connection while it waits for the upstream fall between whole events.
func (r *translatedReader) Read(b []byte) (int, error) {
	for r.sent == len(r.out) {
		if r.eof {
			return 0, io.EOF
		}
		if r.buf == nil {
			r.buf = make([]byte, 2<<10)
		}
		n, err := r.src.Read(r.buf)
		r.out, r.sent = r.t.Feed(r.buf[:n]), 0
		if err == io.EOF {
			r.eof = true
			// Feed's result is valid until the next call: kept first.
			fed := slices.Clone(r.out)
			r.out = append(fed, r.t.End()...)
		} else if err != nil {
			return 0, err
		}
	}
	n := copy(b, r.out[r.sent:])
	r.sent += n
	return n, nil
}

// Close closes src; fasthttp always calls it.
func (r *translatedReader) Close() error { return r.src.Close() }

// translatedWriter is what a pushed chat stream (the server-tool loop, a
// stream opened while a plugin works) writes to: the translation goes to
// w, flushed, and w's failure is how the stream learns the client left.
type translatedWriter struct {
	w *bufio.Writer
	t streamTranslator
}

func (tw *translatedWriter) Write(p []byte) (int, error) {
	if err := tw.emit(tw.t.Feed(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// End writes the translation's ending once the pushed stream is over.
func (tw *translatedWriter) End() error { return tw.emit(tw.t.End()) }

func (tw *translatedWriter) emit(out []byte) error {
	if len(out) == 0 {
		return nil
	}
	if _, err := tw.w.Write(out); err != nil {
		return err
	}
	return tw.w.Flush()
}
