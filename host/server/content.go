package server

import (
	"bufio"

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

// flushWriter flushes every write to the client: a pushed stream's
// writes are events to deliver at once.
type flushWriter struct{ w *bufio.Writer }

func (f flushWriter) Write(p []byte) (int, error) {
	if _, err := f.w.Write(p); err != nil {
		return 0, err
	}
	return len(p), f.w.Flush()
}
