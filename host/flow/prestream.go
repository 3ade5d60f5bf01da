package flow

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/hangup"
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

// streamPre runs the pre_request hooks of a streaming request. When they
// finish before a reserved sub-request group started, it returns what
// they decided (the caller goes on as usual); otherwise it returns the
// opened stream, which carries keep-alives until they are done and then
// the answer, an error chunk, or the routed request's stream.
func (r *Request) streamPre() (answer []byte, aerr *apierr.Error, o Outcome, opened bool) {
	// After the entry point returns nothing watches the connection: a
	// failed write is how the client's leaving is noticed, and it cancels
	// the work as a hang-up does (no fallbacks, the records settled as
	// cancelled).
	ctx, cancel := r.ctx, r.cancel
	pctx, cancelCause := context.WithCancelCause(ctx)
	r.ctx = pctx
	outcome := make(chan preOutcome, 1)
	go func() {
		a, err := r.preRequest(r.pl)
		outcome <- preOutcome{a, err}
	}()
	started := r.group.startedChan()
	select {
	case po := <-outcome:
		select {
		case <-started:
			// The hooks finished, but a reserved group ran: answered the
			// same way as when the stream opened earlier.
			outcome <- po
		default:
			cancelCause(nil)
			r.ctx = ctx
			return po.answer, po.aerr, Outcome{}, false
		}
	case <-started:
	}
	r.cancel = func() { // the work is over
		cancelCause(nil)
		if cancel != nil {
			cancel()
		}
	}
	r.Keep() // the stream's
	return nil, nil, Outcome{Stream: &preStream{r: r, outcome: outcome, gone: func() { cancelCause(hangup.ErrClientGone) }}, Charged: true}, true
}

// preOutcome is what the pre_request hooks decided.
type preOutcome struct {
	answer []byte
	aerr   *apierr.Error
}

// preStream is a streaming request's stream opened while its plugin
// works through reserved sub-requests.
type preStream struct {
	r       *Request
	outcome chan preOutcome
	gone    func() // the client left: cancels the work
}

func (*preStream) sse() {}

// Push writes the stream: keep-alives until the hooks are done, then the
// plugin's answer as chunks, its error, or the continued request's
// stream.
func (ps *preStream) Push(w *bufio.Writer) {
	r := ps.r
	defer r.Close()
	tw := &pushWriter{w: w, alive: true, cancel: ps.gone, pl: r.pl}
	tw.startKeepAlive(time.Duration(r.core.Config.KeepAlive))
	o := <-ps.outcome
	tw.stopKeepAlive()
	id := wire.Identity{GenID: r.ID, Model: r.Model()}
	switch {
	case o.aerr != nil:
		r.core.LogCause("/chat/completions (stream "+r.ID+")", o.aerr)
		e := *o.aerr
		if m := r.pluginMeta(); m != nil {
			e.Metadata = withMeta(e.Metadata, m)
		}
		_ = tw.emit(r.ctx, id.ErrorChunk(&e))
		tw.write(sse.AppendEvent(nil, done))
	case o.answer != nil:
		result, aerr := r.answerResult(o.answer, id)
		if aerr != nil {
			r.core.LogCause("/chat/completions (stream "+r.ID+")", aerr)
			_ = tw.emit(r.ctx, id.ErrorChunk(aerr))
			tw.write(sse.AppendEvent(nil, done))
			return
		}
		for _, ch := range pieces(wire.ResultChunks(result, id)) {
			if e := tw.emit(r.ctx, ch); e != nil {
				return
			}
		}
		tw.write(sse.AppendEvent(nil, done))
	default:
		r.streamContinued(tw)
	}
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
// before the upstream answers is an error chunk.
func (r *Request) streamContinued(tw *pushWriter) {
	id := wire.Identity{GenID: r.ID, Model: r.Model()}
	aerr := (*apierr.Error)(nil)
	if r.ServerTools {
		aerr = apierr.New(http.StatusNotImplemented, "a plugin that reserved sub-requests cannot continue a streamed request with server tools")
	}
	var res *dispatch.Result
	if aerr == nil {
		res, aerr = r.dispatch(r.ID)
	}
	if aerr != nil {
		_ = tw.emit(r.ctx, id.ErrorChunk(aerr))
		tw.write(sse.AppendEvent(nil, done))
		return
	}
	r.chargePluginFees(res)
	r.newPump(res).push(tw)
}
