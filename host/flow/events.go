package flow

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/eventstream"
	"github.com/switchyard/switchyard/host/sse"
	"github.com/switchyard/switchyard/host/toolcheck"
	"github.com/switchyard/switchyard/host/wire"
	"github.com/tidwall/gjson"
)

// Events reads one upstream streaming response as the gateway's chunks.
// It is the only upstream SSE loop: the pump and the server-tool loop's
// streamed turns read through it, so every stream gets the same handling —
// the adapter's stream hook (its per-stream state handed back with each
// event), the repair of every chunk before anything reads it, a provider
// error inside the stream, the accounting of what was generated (text,
// first token, the checkpoints crash recovery charges) and the way the
// stream ended.
type Events struct {
	r    *dispatch.Result
	ctx  context.Context
	log  *slog.Logger
	rd   *sse.Reader
	id   wire.Identity
	slug string
	// timeout is the request's time limit, named when it ends the stream.
	timeout time.Duration
	// gone reports that the client went away (a keep-alive failed): the
	// read it ended is not the upstream's fault. Nil: never.
	gone *atomic.Bool

	// raw, when set, is given every upstream event as it was read, before
	// its translation (a native stream's pump relays them so).
	raw func(sse.Event)

	state   []byte            // the adapter's stream state
	chunks  *wire.ChunkStream // the repair and identity of each chunk
	pending [][]byte          // the current event's chunks not yet returned
	logged  bool              // a repair was logged (one line per stream)

	// Text is the completion so far, for counting when usage is missing.
	Text         strings.Builder
	contentSent  bool
	finished     bool   // the upstream said the generation is complete
	finishReason string // of the last choice that finished
	ttft         time.Duration
	checkpointed time.Time
	counted      int64 // completion tokens of Text[:countedTo], for checkpoints
	countedTo    int

	// judge: the request offered tools, so the answer's tool calls are
	// collected into calls and judged when it ends (toolVerdict).
	judge bool
	calls toolcheck.Calls
}

var toolCallsKey = []byte(`"tool_calls"`)

// errWouldWait is Next's answer, when it may not wait, to a call for which
// no event is buffered.
var errWouldWait = errors.New("no event buffered")

// newEvents reads res's upstream body through body (the pump's lets
// keep-alives know when it waits) as the stream named id, within ctx (the
// request's, or a stream's that ends when its client leaves).
func (r *Request) newEvents(ctx context.Context, res *dispatch.Result, body io.Reader, id wire.Identity, gone *atomic.Bool) *Events {
	if resp := res.Call.Resp; resp != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), eventstream.ContentType) {
		// AWS's binary framing (Bedrock's ConverseStream): its frames are
		// read as one event each, so the loop below and the adapter's
		// stream hook are the same as for SSE (host/eventstream).
		body = eventstream.NewSSE(body, 16<<20)
	}
	return &Events{r: res, ctx: ctx, log: r.core.Log, rd: sse.NewReader(body, 16<<20), id: id,
		slug: res.Call.Endpoint.Provider.Slug, timeout: r.core.Dispatcher.RequestTimeout, gone: gone,
		checkpointed: firstCheckpoint(time.Now()), judge: slices.Contains(r.Params, "tools")}
}

// Next returns the next chunk (which may alias the reader's buffer until
// the next call) and the facts read from it. At the end it returns
// io.EOF when the stream completed, errClientGone, or the failure to
// report. With wait false it returns errWouldWait rather than wait for
// the upstream.
func (e *Events) Next(wait bool) ([]byte, *wire.ChunkFacts, error) {
	for {
		for len(e.pending) > 0 {
			ch := e.pending[0]
			e.pending = e.pending[1:]
			out, facts, ok := e.repair(ch)
			if !ok {
				continue
			}
			if msg := facts.Error; msg.Exists() {
				// A provider error inside the stream, OpenAI style.
				return nil, nil, apierr.New(http.StatusBadGateway, "%s", e.r.Call.Scrub("provider "+e.slug+": "+msg.Get("message").Str))
			}
			e.account(facts)
			if e.judge && bytes.Contains(out, toolCallsKey) {
				gjson.GetBytes(out, "choices").ForEach(func(_, c gjson.Result) bool {
					if tc := c.Get("delta.tool_calls"); tc.IsArray() {
						e.calls.Delta(c.Get("index").Int(), tc)
					}
					return true
				})
			}
			for _, c := range facts.Choices {
				if c.Finished { // OpenRouter's native_finish_reason beside it
					out = wire.NativeFinishReasons(out)
					break
				}
			}
			return out, facts, nil
		}
		var ev sse.Event
		var err error
		if wait {
			ev, err = e.rd.Next()
		} else {
			var ok bool
			if ev, ok, err = e.rd.TryNext(); !ok && err == nil {
				return nil, nil, errWouldWait
			}
		}
		if err != nil {
			return nil, nil, e.ended(err)
		}
		if e.raw != nil {
			e.raw(ev)
		}
		if string(ev.Data) == "[DONE]" {
			e.finished = true
			return nil, nil, io.EOF
		}
		if e.pending, err = e.translate(ev.Data); err != nil {
			return nil, nil, err
		}
	}
}

// ended is what a failed read of the upstream means.
func (e *Events) ended(rerr error) error {
	switch {
	case e.gone != nil && e.gone.Load(): // a keep-alive found the client gone
		return errClientGone
	case errors.Is(rerr, io.EOF) && e.finished:
		return io.EOF
	case errors.Is(rerr, io.EOF):
		return apierr.New(http.StatusBadGateway, "provider %s ended the stream before it was complete", e.slug)
	case errors.Is(e.ctx.Err(), context.DeadlineExceeded):
		// The request's deadline ended the upstream read.
		return dispatch.DeadlineError(e.ctx, e.timeout)
	}
	if te := e.r.Call.TransportError(e.ctx, rerr); te.Status != 499 {
		return te
	}
	return errClientGone
}

// translate runs the adapter's stream hook on one event. Adapters keep
// per-stream state (a message id, token counts) in a field the host hands
// back with the next event: any pooled instance can take the next call.
func (e *Events) translate(data []byte) ([][]byte, error) {
	call := e.r.Call
	if call.Module.Manifest.PassthroughFor(abi.HookChatStreamEvent, call.Ctx.API) {
		return [][]byte{data}, nil
	}
	out, err := call.Hook(e.ctx, abi.HookChatStreamEvent, data, e.state)
	if err != nil {
		return nil, apierr.From(err)
	}
	e.state = out.Field(0)
	return out.Fields[min(1, len(out.Fields)):], nil
}

// repair checks an upstream chunk before anything reads it and makes it the
// gateway's (wire.ChunkStream: wire.RepairChunk, then wire.Chunk, in one
// walk over the chunk): a wrong-typed field or invalid UTF-8 never reaches
// the client. The first repair of a stream is logged with its reasons; one
// line per stream is enough to find the upstream, and a broken upstream
// cannot flood the log.
func (e *Events) repair(ch []byte) ([]byte, *wire.ChunkFacts, bool) {
	if e.chunks == nil {
		e.chunks = wire.NewChunkStream(e.id)
	}
	out, facts, fixes, ok := e.chunks.Next(ch)
	if len(fixes) > 0 && !e.logged {
		e.logged = true
		what := "upstream chunk repaired"
		if !ok {
			what = "upstream chunk dropped"
		}
		e.log.Warn(what+" (later repairs in this stream are not logged)", "generation", e.id.GenID,
			"provider", e.slug, "reasons", fixes, "chunk", clip(ch, 200))
	}
	return out, facts, ok
}

// account counts what the upstream generated, before plugins edit it:
// billing and health see the provider's output.
func (e *Events) account(facts *wire.ChunkFacts) {
	for _, c := range facts.Choices {
		if t := c.Content; t != "" {
			if !e.contentSent {
				e.ttft = time.Since(e.r.Call.Started)
				e.r.FirstToken()
			}
			e.contentSent = true
			e.Text.WriteString(t)
			if time.Since(e.checkpointed) > checkpointEvery {
				// A crash now charges at least what this says. Only the
				// text since the last checkpoint is counted: a token split
				// across two checkpoints counts as two.
				e.checkpointed = time.Now()
				all := e.Text.String()
				e.counted += e.r.CountText(all[e.countedTo:])
				e.countedTo = len(all)
				u := e.r.Counted("") // the prompt, counted once per run
				u.CompletionTokens = e.counted
				e.r.Checkpoint(u)
			}
		}
		if c.Finished {
			// Cloned: the facts alias the reader's buffer, and the reason
			// is read when the stream ends.
			e.finished, e.finishReason = true, strings.Clone(c.FinishReason)
		}
	}
}
