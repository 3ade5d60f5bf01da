package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/sse"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/switchyard/switchyard/host/wire"
)

// done is the data of the event that ends every stream.
var done = []byte("[DONE]")

// keepAliveText is the SSE comment sent while the upstream is quiet.
const keepAliveText = "SWITCHYARD PROCESSING"

// keepAliveLine is the keep-alive as written: a comment line without the
// blank line that would end an event. Spec parsers ignore both forms, but
// the official Go SDK (openai-go) dispatches the empty event a blank line
// ends and fails the stream decoding it (examples/clients tests this).
var keepAliveLine = []byte(": " + keepAliveText + "\n")

// checkpointEvery is how often a long stream records its usage so far, which
// is what crash recovery charges for it (docs/billing.md).
const checkpointEvery = 5 * time.Second

// firstCheckpoint is when a stream starting at now counts as last
// checkpointed: up to half an interval earlier, at random, so its first
// checkpoint comes 2.5–5 s in. Streams opened together (a burst, a client
// retrying in a loop) would otherwise checkpoint together every 5 s — one
// store transaction holding a hold record for every one of them, and a
// spike of garbage the size of the burst. Never later: a crash still
// loses at most checkpointEvery of a stream's usage.
func firstCheckpoint(now time.Time) time.Time {
	return now.Add(-time.Duration(rand.Int64N(int64(checkpointEvery / 2))))
}

// errClientGone ends a stream whose client went away: nothing more is
// written; the generation is settled as cancelled.
var errClientGone = errors.New("client gone")

func setStreamHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
}

// pump relays one upstream SSE response to the client. Each upstream event
// is read, translated by the adapter, accounted (billing, health) and
// emitted through the post_chunk plugins; finish ends the stream, once.
type pump struct {
	s       *Server
	r       *dispatch.Result
	req     *chatRequest
	pl      *pipeline.Pipeline
	ctx     context.Context
	release func() // the pipeline and the request context
	id      wire.Identity
	meta    *wire.Metadata

	rd    *sse.Reader // the upstream's events; made by the first advance
	out   []byte      // what goes to the client next, framed
	sent  int         // of out, what Read returned already
	ended bool        // finished and released (end)

	// mu orders the keep-alive timer and the pump's waits for the upstream:
	// the timer writes only while the pump waits (waiting), when nothing
	// else writes to the client.
	mu           sync.Mutex
	keepAlive    func(every time.Duration) error // writes one keep-alive
	keep         *time.Timer                     // the keep-alive; under mu
	waiting      bool                            // in an upstream read; under mu
	headersOut   bool                            // fasthttp flushed the headers; under mu
	closed       bool                            // no more keep-alives; under mu
	gone         atomic.Bool                     // a keep-alive found the client gone
	state        []byte                          // the adapter's stream state
	held         []byte                          // the chunk carrying usage, held for the final chunk
	text         strings.Builder                 // completion so far, for counting when usage is missing
	contentSent  bool
	finished     bool   // the upstream said the generation is complete
	finishReason string // of the last choice that finished
	completion   int    // estimated output tokens, for health statistics
	ttft         time.Duration
	checkpointed time.Time
	counted      int64 // completion tokens of text[:countedTo], for checkpoints
	countedTo    int
	repairLogged bool
	chunks       *wire.ChunkStream // made on the first chunk
}

// The pump is the response body: fasthttp reads it (Read) on the
// connection's own goroutine and writes each read to the client as an HTTP
// chunk, flushed. fasthttp's push-style body writer costs a goroutine, a
// pipe and a 4 KiB buffer per open stream, and a copy and two wake-ups per
// chunk; pulled, an open stream is the connection's goroutine waiting on
// the upstream. Read handles the next upstream event, waiting for it, and
// then every event already buffered, so events the upstream sent together
// go out together. The request's deadline ends the upstream read (the
// upstream request carries ctx). Close, which fasthttp always calls, ends
// the stream if Read did not finish it (the client went away).

// serve makes the pump the body of c's response.
func (p *pump) serve(c *fiber.Ctx) {
	fc := c.Context()
	conn := fc.Conn()
	// Whenever Read waits for the upstream, fasthttp has written and
	// flushed what Read returned, and a keep-alive may go straight to the
	// connection, once the headers are out too. They go out at once when
	// the upstream's first event is not here yet (a model thinking), and
	// with the first event otherwise (one write instead of two).
	p.headersOut = p.upstreamBuffered() == 0
	fc.Response.ImmediateHeaderFlush = p.headersOut
	p.keepAlive = func(every time.Duration) error {
		_ = conn.SetWriteDeadline(time.Now().Add(every))
		_, err := conn.Write(keepAliveChunk)
		_ = conn.SetWriteDeadline(time.Time{})
		return err
	}
	fc.Response.SetBodyStream(p, -1)
}

// keepAliveChunk is keepAliveLine as one chunk of a chunked HTTP body, the
// framing fasthttp gives what Read returns.
var keepAliveChunk = fmt.Appendf(nil, "%x\r\n%s\r\n", len(keepAliveLine), keepAliveLine)

// Read returns what goes to the client next; io.EOF after the last event.
func (p *pump) Read(b []byte) (int, error) {
	for p.sent == len(p.out) {
		if p.ended {
			return 0, io.EOF
		}
		p.out, p.sent = p.out[:0], 0
		p.advance()
	}
	n := copy(b, p.out[p.sent:])
	p.sent += n
	if !p.headersOut {
		p.mu.Lock()
		p.headersOut = true // with what fasthttp writes now
		p.mu.Unlock()
	}
	return n, nil
}

// upstreamBuffered is how much of the upstream's response is read and not
// yet taken (0 when the transport cannot tell).
func (p *pump) upstreamBuffered() int {
	if b, ok := p.r.Call.Resp.Body.(interface{ Buffered() int }); ok {
		return b.Buffered()
	}
	return 0
}

// Close ends the stream where it is, if Read did not end it: fasthttp
// closes the body when the client went away, or when the connection ends
// before the body was written.
func (p *pump) Close() error {
	if !p.ended {
		p.finish(errClientGone)
		p.end()
	}
	return nil
}

// run relays the stream to w, for a stream that is already open (a plugin
// continued the request after its reserved sub-requests, prestream.go): the
// same pump, pushed instead of pulled.
func (p *pump) run(w *bufio.Writer) {
	var wmu sync.Mutex  // the keep-alive and the relay both write to w
	p.headersOut = true // the stream is open: a keep-alive may go any time
	p.keepAlive = func(time.Duration) error {
		wmu.Lock()
		defer wmu.Unlock()
		if _, err := w.Write(keepAliveLine); err != nil {
			return err
		}
		return w.Flush()
	}
	for !p.ended {
		p.out, p.sent = p.out[:0], 0
		p.advance()
		wmu.Lock()
		_, err := w.Write(p.out)
		if err == nil {
			err = w.Flush()
		}
		wmu.Unlock()
		if err != nil {
			_ = p.Close()
			return
		}
	}
}

// advance handles the next upstream event, waiting for it, then every
// event the reader has without waiting; what goes to the client is added to
// p.out. The first call starts the stream, the last ends it.
func (p *pump) advance() {
	if p.rd == nil {
		p.checkpointed = firstCheckpoint(time.Now())
		p.rd = sse.NewReader(upstreamReader{p}, 16<<20)
		if p.req.EchoUpstream {
			p.emit(p.id.DebugChunk(p.r.Call.SentBody))
		}
		p.startKeepAlive()
	}
	ev, err := p.rd.Next()
	for {
		if end, err := p.step(ev.Data, err); end {
			p.finish(err)
			p.end()
			return
		}
		var ok bool
		if ev, ok, err = p.rd.TryNext(); !ok {
			// What the upstream sent together goes to the client in one
			// write: while the upstream connection holds more of the
			// response, reading it does not wait for the network.
			if p.upstreamBuffered() == 0 {
				return
			}
			ev, err = p.rd.Next()
		}
	}
}

// end settles what is not settled and releases what the stream held; once.
func (p *pump) end() {
	if p.ended {
		return
	}
	p.ended = true
	p.stopKeepAlive()
	// Whatever way the stream ends, what was generated is charged once. A
	// client that went away pays for what was produced until then.
	if !p.r.Settled() {
		u := p.r.Counted(p.text.String())
		p.req.adm.record(u)
		p.r.Cancel(u)
	}
	p.r.Call.Close()
	p.release()
	// Last of all (after settlement): the request's metrics, span and log line.
	telemetry.From(p.ctx).EndStream(p.text.String())
}

// upstreamReader is the upstream body as the pump reads it. While a read
// waits, the pump is idle: the keep-alive may write then, and only then.
type upstreamReader struct{ p *pump }

func (u upstreamReader) Read(b []byte) (int, error) {
	p := u.p
	p.mu.Lock()
	p.waiting = true
	p.mu.Unlock()
	n, err := p.r.Call.Resp.Body.Read(b)
	p.mu.Lock() // a keep-alive being written is done when this returns
	p.waiting = false
	p.mu.Unlock()
	return n, err
}

// startKeepAlive sends the keep-alive comment every KeepAlive while the
// stream waits for the upstream. A keep-alive the client does not take
// means it went away: the upstream read is ended (closing the body is how
// a read in progress is aborted), and the pump sees gone.
func (p *pump) startKeepAlive() {
	every := time.Duration(p.s.Config.KeepAlive)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keep = time.AfterFunc(every, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.closed {
			return
		}
		if p.waiting && p.headersOut {
			if err := p.keepAlive(every); err != nil {
				p.closed = true
				p.gone.Store(true)
				_ = p.r.Call.Resp.Body.Close()
				return
			}
		}
		p.keep.Reset(every)
	})
}

// stopKeepAlive ends the keep-alives: after it nothing but the pump writes.
func (p *pump) stopKeepAlive() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.keep != nil {
		p.keep.Stop()
	}
}

// step handles one upstream event. end reports the stream is over, with
// err nil when it completed, errClientGone, or the failure to report.
//
// data is the event's data, or the read's error in rerr; data aliases the
// reader's buffer and is valid until the next read.
func (p *pump) step(data []byte, rerr error) (end bool, err error) {
	call := p.r.Call
	switch {
	case rerr != nil && p.gone.Load(): // a keep-alive found the client gone
		return true, errClientGone
	case errors.Is(rerr, io.EOF) && p.finished:
		return true, nil
	case errors.Is(rerr, io.EOF):
		return true, apierr.New(http.StatusBadGateway, "provider %s ended the stream before it was complete", call.Endpoint.Provider.Slug)
	case rerr != nil && p.ctx.Err() != nil:
		// The request's deadline ended the upstream read.
		return true, apierr.New(http.StatusRequestTimeout, "request exceeded the gateway's time limit of %s", p.s.Dispatcher.RequestTimeout)
	case rerr != nil:
		if e := call.TransportError(p.ctx, rerr); e.Status != 499 {
			return true, e
		}
		return true, errClientGone
	case string(data) == "[DONE]":
		p.finished = true
		return true, nil
	}
	chunks, aerr := p.translate(data)
	if aerr != nil {
		return true, aerr
	}
	for _, ch := range chunks {
		ch, facts, ok := p.repair(ch)
		if !ok {
			continue
		}
		if msg := facts.Error; msg.Exists() {
			// A provider error inside the stream, OpenAI style.
			return true, apierr.New(http.StatusBadGateway, "%s", call.Scrub("provider "+call.Endpoint.Provider.Slug+": "+msg.Get("message").Str))
		}
		p.account(facts)
		for _, c := range facts.Choices {
			if c.Finished { // OpenRouter's native_finish_reason beside it (wire.NativeFinishReasons)
				ch = wire.NativeFinishReasons(ch)
				break
			}
		}
		p.flushHeld()
		if facts.Usage {
			p.held = append([]byte(nil), ch...) // ch may alias the reader's buffer
			continue
		}
		if err := p.emitThroughPlugins(ch); err != nil {
			return true, err
		}
	}
	return false, nil
}

// repair checks an upstream chunk before anything reads it and makes it the
// gateway's (wire.ChunkStream: wire.RepairChunk, then wire.Chunk, in one
// walk over the chunk): a wrong-typed field or invalid UTF-8 never reaches
// the client. The first repair of a stream is logged with its reasons; one
// line per stream is enough to find the upstream, and a broken upstream
// cannot flood the log.
func (p *pump) repair(ch []byte) ([]byte, *wire.ChunkFacts, bool) {
	if p.chunks == nil {
		p.chunks = wire.NewChunkStream(p.id)
	}
	out, facts, fixes, ok := p.chunks.Next(ch)
	if len(fixes) > 0 && !p.repairLogged {
		p.repairLogged = true
		what := "upstream chunk repaired"
		if !ok {
			what = "upstream chunk dropped"
		}
		p.s.Log.Warn(what+" (later repairs in this stream are not logged)", "generation", p.id.GenID,
			"provider", p.r.Call.Endpoint.Provider.Slug, "reasons", fixes, "chunk", clip(ch, 200))
	}
	return out, facts, ok
}

// translate runs the adapter's stream hook on one event. Adapters keep
// per-stream state (a message id, token counts) in a field the host hands
// back with the next event: any pooled instance can take the next call.
func (p *pump) translate(data []byte) ([][]byte, *apierr.Error) {
	call := p.r.Call
	if call.Module.Manifest.IsPassthrough(abi.HookChatStreamEvent) {
		return [][]byte{data}, nil
	}
	out, err := call.Hook(p.ctx, abi.HookChatStreamEvent, data, p.state)
	if err != nil {
		return nil, apierr.From(err)
	}
	p.state = out.Field(0)
	return out.Fields[min(1, len(out.Fields)):], nil
}

// account counts what the upstream generated, before plugins edit it:
// billing and health see the provider's output.
func (p *pump) account(facts *wire.ChunkFacts) {
	for _, c := range facts.Choices {
		if t := c.Content; t != "" {
			if !p.contentSent {
				p.ttft = time.Since(p.r.Call.Started)
				p.r.FirstToken()
			}
			p.contentSent = true
			p.completion += validate.EstimateTokens(len(t))
			p.text.WriteString(t)
			if time.Since(p.checkpointed) > checkpointEvery {
				// A crash now charges at least what this says. Only the
				// text since the last checkpoint is counted: a token split
				// across two checkpoints counts as two.
				p.checkpointed = time.Now()
				all := p.text.String()
				p.counted += p.r.CountText(all[p.countedTo:])
				p.countedTo = len(all)
				u := p.r.Counted("") // the prompt, counted once per run
				u.CompletionTokens = p.counted
				p.r.Checkpoint(u)
			}
		}
		if c.Finished {
			p.finished, p.finishReason = true, c.FinishReason
		}
	}
}

// emitThroughPlugins sends a chunk through the post_chunk plugins to the
// client. What a plugin hands back must be a chunk (wire.IsChunk): anything
// else is dropped and logged, so a faulty plugin cannot put a non-chunk on
// a client's stream, and one bad chunk does not cost the whole generation.
// Without post_chunk plugins ch goes out as it is: wire.ChunkStream made it
// a chunk.
func (p *pump) emitThroughPlugins(ch []byte) error {
	if !p.pl.HasChunkHooks() {
		p.emit(ch)
		return nil
	}
	out, err := p.pl.Chunk(p.ctx, bytes.Clone(ch)) // ch may alias the reader's buffer
	if err != nil {
		return err
	}
	for _, o := range out {
		if !wire.IsChunk(o) {
			p.s.Log.Warn("post_chunk plugin output dropped: not a chat completion chunk (a JSON object with a choices array of objects)",
				"generation", p.id.GenID, "chunk", clip(o, 200))
			continue
		}
		p.emit(o)
	}
	return nil
}

// finish ends the stream: on success the final chunk (usage, cost,
// metadata), otherwise an error chunk; then [DONE]. It is the only place
// either is written.
func (p *pump) finish(err error) {
	p.stopKeepAlive()
	if errors.Is(err, errClientGone) {
		return
	}
	if err == nil {
		final := p.held
		if final == nil {
			final = p.id.UsageChunk()
		}
		usage := p.r.Usage(final, p.text.String)
		p.req.adm.record(usage)
		var aerr *apierr.Error
		if final, aerr = p.r.Settle(final, usage, p.finishReason); aerr == nil {
			p.held = nil
			final = p.req.spend.includeSubs(final) // chat sub-requests its plugins made
			p.emit(p.meta.WithStages(p.req.spend.withStages(p.pl.Stages)).Set(final))
			p.emit(done)
			p.r.Succeeded(p.ttft, int(usage.CompletionTokens))
			return
		}
		err = aerr
	}
	e := apierr.From(err)
	p.s.logCause("/chat/completions (stream "+p.id.GenID+")", e)
	p.flushHeld()
	p.emit(p.id.ErrorChunk(e))
	// The client received what was generated before the failure, and pays
	// for that; a failure before any content costs nothing.
	var u billing.Usage
	if p.contentSent {
		u = p.r.Counted(p.text.String())
	}
	p.req.adm.record(u)
	p.r.Fail(e, u)
	p.emit(done)
}

// flushHeld emits the held usage chunk, if any.
func (p *pump) flushHeld() {
	if p.held != nil {
		h := p.held
		p.held = nil
		p.emit(h)
	}
}

// emit adds one SSE event to what goes to the client; every event of a
// stream is framed here. It cannot fail: the client's leaving is found
// where the pump's output is written (Read's caller, or run).
func (p *pump) emit(data []byte) {
	p.out = sse.AppendEvent(p.out, data)
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
