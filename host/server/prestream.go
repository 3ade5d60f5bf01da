package server

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/hangup"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/sse"
	"github.com/switchyard/switchyard/host/wire"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// A streaming request whose plugin answers it through a group of chat
// sub-requests it reserved (a fusion: a panel of models, a judge, a final
// answer) may take minutes before the plugin returns. Such a request's
// stream opens when the first of those sub-requests starts — after the
// reservation, so a request the account cannot cover is still an HTTP 402
// — and carries keep-alive comments until the plugin is done; then the
// answer is sent as chunks (the complete text the plugin returned, cut into
// pieces of about pieceBytes: the host does not stream a sub-request
// through) or, if the
// plugin continued instead, the request is routed and streamed as usual.
// Without a reservation the pre_request hooks run before the response
// starts, as always.

// preOutcome is what the pre_request hooks decided.
type preOutcome struct {
	edited *chatRequest
	answer []byte
	aerr   *apierr.Error
}

// streamPre runs the pre_request hooks of a streaming request. It returns
// the outcome when the hooks finished before a reserved sub-request group
// started (the caller goes on as usual), or opened=true when it opened the
// stream and owns release from then on.
func (s *Server) streamPre(c *fiber.Ctx, ctx context.Context, req *chatRequest, pl *pipeline.Pipeline, genID string, release func()) (preOutcome, bool) {
	// After the handler returns nothing watches the connection: a failed
	// write is how the client's leaving is noticed, and it cancels the work
	// as a hang-up does (no fallbacks, the records settled as cancelled).
	pctx, cancelCause := context.WithCancelCause(ctx)
	gone := func() { cancelCause(hangup.ErrClientGone) }
	pcancel := func() { cancelCause(nil) } // the work is over
	outcome := make(chan preOutcome, 1)
	go func() {
		e, a, err := s.preRequest(pctx, req, pl)
		outcome <- preOutcome{e, a, err}
	}()
	started := req.group.startedChan()
	select {
	case o := <-outcome:
		select {
		case <-started:
			// The hooks finished, but a reserved group ran: answered the
			// same way as when the stream opened earlier.
			outcome <- o
		default:
			pcancel()
			return o, false
		}
	case <-started:
	}
	exit := s.keepShedSlot(c)
	setStreamHeaders(c)
	c.Set("X-Generation-Id", genID)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		tw := &turnWriter{w: w, alive: true, cancel: gone, pl: pl}
		tw.write(keepAliveLine) // at once: the client knows the request is taken
		stop := make(chan struct{})
		var ticking sync.WaitGroup
		ticking.Add(1)
		go tw.keepAlive(time.Duration(s.Config.KeepAlive), stop, &ticking)
		o := <-outcome
		close(stop)
		ticking.Wait()
		if o.edited != nil && o.answer == nil && o.aerr == nil {
			// Released by the pump, or below when no pump starts.
			s.streamContinued(pctx, w, tw, o.edited, pl, genID, func() { pcancel(); release(); exit() })
			return
		}
		defer exit()
		defer release()
		defer pcancel()
		id := wire.Identity{GenID: genID, Model: req.Model()}
		if o.aerr != nil {
			s.logCause("/chat/completions (stream "+genID+")", o.aerr)
			e := *o.aerr
			if m := s.pluginMeta(req, pl); m != nil {
				e.Metadata = withMeta(e.Metadata, m)
			}
			_ = tw.emit(pctx, id.ErrorChunk(&e))
			tw.write(sse.AppendEvent(nil, done))
			return
		}
		result := s.pluginMeta(req, pl).Set(req.spend.answered(wire.PluginResult(o.answer, id), req.adm))
		for _, ch := range pieces(wire.ResultChunks(result, id)) {
			if e := tw.emit(pctx, ch); e != nil {
				return
			}
		}
		tw.write(sse.AppendEvent(nil, done))
	})
	return preOutcome{}, true
}

// pieceBytes is about how much text one chunk of an answer cut from its
// complete text carries: a client shows it coming in as a model's would.
const pieceBytes = 64

// pieces cuts each content delta of chunks into deltas of about
// pieceBytes, at spaces; the role stays on the first.
func pieces(chunks [][]byte) [][]byte {
	var out [][]byte
	for _, ch := range chunks {
		content := gjson.GetBytes(ch, "choices.0.delta.content")
		if content.Type != gjson.String || len(content.Str) <= pieceBytes || len(gjson.GetBytes(ch, "choices").Array()) != 1 {
			out = append(out, ch)
			continue
		}
		text := content.Str
		first := true
		for text != "" {
			n := len(text)
			if n > pieceBytes {
				n = pieceBytes
				if i := strings.IndexByte(text[n:], ' '); i >= 0 {
					n += i + 1
				} else {
					n = len(text)
				}
			}
			c := ch
			if !first {
				c, _ = sjson.DeleteBytes(c, "choices.0.delta.role")
			}
			c, _ = sjson.SetBytes(c, "choices.0.delta.content", text[:n])
			out = append(out, c)
			text, first = text[n:], false
		}
	}
	return out
}

// withMeta adds service_metadata to an error's metadata (a stream's error
// chunk carries no other place for it).
func withMeta(md map[string]any, m *wire.Metadata) map[string]any {
	out := map[string]any{}
	for k, v := range md {
		out[k] = v
	}
	out["service_metadata"] = m
	return out
}

// streamContinued routes and streams a request a plugin continued after
// its reserved sub-requests, on a stream that is already open: what fails
// before the upstream answers is an error chunk. release is called once,
// by the pump or here.
func (s *Server) streamContinued(ctx context.Context, w *bufio.Writer, tw *turnWriter, req *chatRequest, pl *pipeline.Pipeline, genID string, release func()) {
	id := wire.Identity{GenID: genID, Model: req.Model()}
	fail := func(e *apierr.Error) {
		defer release()
		_ = tw.emit(ctx, id.ErrorChunk(e))
		tw.write(sse.AppendEvent(nil, done))
	}
	if req.ServerTools {
		fail(apierr.New(http.StatusNotImplemented, "a plugin that reserved sub-requests cannot continue a streamed request with server tools"))
		return
	}
	job := req.job(s.Keys, genID)
	job.PluginTime = pl.Time
	r, aerr := s.Dispatcher.Run(ctx, job)
	if aerr != nil {
		fail(aerr)
		return
	}
	r.AddFees(s.pluginFees(pl)...)
	p := &pump{s: s, r: r, req: req, pl: pl, ctx: ctx, release: release, id: r.Identity(), meta: req.metadata(r)}
	p.run(w)
}
