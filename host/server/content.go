package server

import (
	"bufio"
	"io"

	"github.com/switchyard/switchyard/host/content"
	"github.com/switchyard/switchyard/host/flow"
)

// collector is the content collector of a request's answer (host/content,
// GET /generation/content), nil when the account's content is not stored
// or the answer is not chat's: a generation that was not charged has no
// record to read it by, and a native answer (the provider's own API,
// passed through) is not in chat's shape.
func (s *Server) collector(req *flow.Request, o flow.Outcome, chatBody []byte, tr translator) *content.Collector {
	if !o.Charged || o.Native {
		return nil
	}
	_, prompt := tr.(completionsTranslator)
	return s.content.Collector(req.Key.AccountID, req.ID, chatBody, prompt)
}

// teeReader is src, its bytes also written to col as they are read (src
// when col is nil). Close, which fasthttp always calls, stores what a
// stream that ended without [DONE] gathered, then closes src. (Not the
// Request's Close: a pump may end it before its last bytes are read.)
func teeReader(src io.ReadCloser, col *content.Collector) io.ReadCloser {
	if col == nil {
		return src
	}
	return &tee{Reader: io.TeeReader(src, col), src: src, col: col}
}

type tee struct {
	io.Reader
	src io.Closer
	col *content.Collector
}

func (t *tee) Close() error {
	_ = t.col.Close()
	return t.src.Close()
}

// teeWriter writes to col, then to w (col never fails).
func teeWriter(w io.Writer, col *content.Collector) io.Writer {
	if col == nil {
		return w
	}
	return io.MultiWriter(col, w)
}

// flushWriter flushes every write to the client: a pushed stream's
// writes are events to deliver at once.
type flushWriter struct{ w *bufio.Writer }

func (f flushWriter) Write(p []byte) (int, error) {
	if _, err := f.w.Write(p); err != nil {
		return 0, err
	}
	return len(p), f.w.Flush()
}
