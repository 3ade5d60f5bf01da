package flow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/sse"
	"github.com/switchyard/switchyard/host/telemetry"
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

// Pump relays one upstream SSE response to the client. Each upstream event
// is read, translated by the adapter, accounted (billing, health) and
// emitted through the post_chunk plugins; finish ends the stream, once.
type Pump struct {
	r    *dispatch.Result
	req  *Request // a reference of the pump's own, closed by end
	id   wire.Identity
	meta *wire.Metadata

	// native: the upstream's events go to the client as they came (the
	// provider speaks the client's API, Request.Native); its chunks are
	// only accounted.
	native bool

	ev    *Events // the upstream's events; made by the first advance
	out   []byte  // what goes to the client next, framed
	sent  int     // of out, what Read returned already
	ended bool    // finished and released (end)

	// mu orders the keep-alive timer and the pump's waits for the upstream:
	// the timer writes only while the pump waits (waiting), when nothing
	// else writes to the client.
	mu         sync.Mutex
	keepAlive  func(every time.Duration) error // writes one keep-alive
	keep       *time.Timer                     // the keep-alive; under mu
	waiting    bool                            // in an upstream read; under mu
	headersOut bool                            // fasthttp flushed the headers; under mu
	closed     bool                            // no more keep-alives; under mu
	gone       atomic.Bool                     // a keep-alive found the client gone
	held       []byte                          // the chunk carrying usage, held for the final chunk
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

// newPump is the Pump of res for r, holding a reference to r.
func (r *Request) newPump(res *dispatch.Result) *Pump {
	r.Keep()
	return &Pump{r: res, req: r, id: res.Identity(), meta: r.metadata(res), native: res.Call.Native()}
}

func (*Pump) sse() {}

// Attach readies the pump to be the body of a response on conn, which
// keep-alives are written to directly. It reports whether the response's
// headers should be flushed at once: when the upstream's first event is
// not here yet (a model thinking); otherwise they go with the first event
// (one write instead of two).
func (p *Pump) Attach(conn net.Conn) (flushHeaders bool) {
	// Whenever Read waits for the upstream, the transport has written and
	// flushed what Read returned, and a keep-alive may go straight to the
	// connection, once the headers are out too.
	p.headersOut = p.upstreamBuffered() == 0
	p.keepAlive = func(every time.Duration) error {
		_ = conn.SetWriteDeadline(time.Now().Add(every))
		_, err := conn.Write(keepAliveChunk)
		_ = conn.SetWriteDeadline(time.Time{})
		return err
	}
	return p.headersOut
}

// keepAliveChunk is keepAliveLine as one chunk of a chunked HTTP body, the
// framing fasthttp gives what Read returns.
var keepAliveChunk = fmt.Appendf(nil, "%x\r\n%s\r\n", len(keepAliveLine), keepAliveLine)

// Read returns what goes to the client next; io.EOF after the last event.
func (p *Pump) Read(b []byte) (int, error) {
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
func (p *Pump) upstreamBuffered() int {
	if b, ok := p.r.Call.Resp.Body.(interface{ Buffered() int }); ok {
		return b.Buffered()
	}
	return 0
}

// Close ends the stream where it is, if Read did not end it: fasthttp
// closes the body when the client went away, or when the connection ends
// before the body was written.
func (p *Pump) Close() error {
	if !p.ended {
		p.finish(errClientGone)
		p.end()
	}
	return nil
}

// push relays the stream through w, for a stream that is already open (a
// plugin continued the request after its reserved sub-requests,
// prestream.go): the same pump, pushed instead of pulled, its keep-alives
// written by w like every pushed stream's.
func (p *Pump) push(w *pushWriter) {
	p.headersOut = true // the stream is open: a keep-alive may go any time
	p.keepAlive = func(time.Duration) error {
		if !w.write(keepAliveLine) {
			return errClientGone
		}
		return nil
	}
	for !p.ended {
		p.out, p.sent = p.out[:0], 0
		p.advance()
		if !w.write(p.out) {
			_ = p.Close()
			return
		}
	}
}

// advance handles the next upstream event, waiting for it, then every
// event the reader has without waiting; what goes to the client is added to
// p.out. The first call starts the stream, the last ends it.
func (p *Pump) advance() {
	if p.ev == nil {
		p.ev = p.req.newEvents(p.req.ctx, p.r, upstreamReader{p}, p.id, &p.gone)
		if p.native {
			p.ev.raw = p.relayRaw
		} else if p.req.EchoUpstream {
			p.emit(p.id.DebugChunk(p.r.Call.SentBody))
		}
		p.startKeepAlive()
	}
	ch, facts, err := p.ev.Next(true)
	for {
		if err == nil {
			err = p.relay(ch, facts)
		}
		if err != nil {
			p.finish(err)
			p.end()
			return
		}
		if ch, facts, err = p.ev.Next(false); err == errWouldWait {
			// What the upstream sent together goes to the client in one
			// write: while the upstream connection holds more of the
			// response, reading it does not wait for the network.
			if p.upstreamBuffered() == 0 {
				return
			}
			ch, facts, err = p.ev.Next(true)
		}
	}
}

// relay passes one chunk on to the client; the chunk carrying the usage
// is held for the final chunk.
func (p *Pump) relay(ch []byte, facts *wire.ChunkFacts) error {
	if p.native { // the upstream's own event went out already (relayRaw)
		if facts.Usage {
			p.held = append(p.held[:0], ch...)
		}
		return nil
	}
	p.flushHeld()
	if facts.Usage {
		p.held = append(p.held[:0], ch...) // ch may alias the reader's buffer
		return nil
	}
	return p.emitThroughPlugins(ch)
}

// relayRaw passes one upstream event of a native stream on as it came,
// framed again. An error event is not: the stream's failure is written by
// finish, once, from the error the adapter read in it.
func (p *Pump) relayRaw(ev sse.Event) {
	if ev.Name == "error" {
		return
	}
	if ev.Name != "" {
		p.out = append(append(append(p.out, "event: "...), ev.Name...), '\n')
	}
	for line := range bytes.SplitSeq(ev.Data, []byte{'\n'}) {
		p.out = append(append(append(p.out, "data: "...), line...), '\n')
	}
	p.out = append(p.out, '\n')
}

// text is the completion streamed so far.
func (p *Pump) text() string {
	if p.ev == nil {
		return ""
	}
	return p.ev.Text.String()
}

// end settles what is not settled and releases what the stream held; once.
func (p *Pump) end() {
	if p.ended {
		return
	}
	p.ended = true
	p.stopKeepAlive()
	// Whatever way the stream ends, what was generated is charged once. A
	// client that went away pays for what was produced until then.
	if !p.r.Settled() {
		u := p.r.Counted(p.text())
		p.req.adm.Record(u)
		p.r.Cancel(u)
	}
	p.r.Call.Close()
	p.req.Close()
	// Last of all (after settlement): the request's metrics, span and log line.
	telemetry.From(p.req.ctx).EndStream(p.text())
}

// upstreamReader is the upstream body as the pump reads it. While a read
// waits, the pump is idle: the keep-alive may write then, and only then.
type upstreamReader struct{ p *Pump }

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
func (p *Pump) startKeepAlive() {
	every := time.Duration(p.req.core.Config.KeepAlive)
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
func (p *Pump) stopKeepAlive() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.keep != nil {
		p.keep.Stop()
	}
}

// emitThroughPlugins sends a chunk through the post_chunk plugins to the
// client. What a plugin hands back must be a chunk (wire.IsChunk): anything
// else is dropped and logged, so a faulty plugin cannot put a non-chunk on
// a client's stream, and one bad chunk does not cost the whole generation.
// Without post_chunk plugins ch goes out as it is: wire.ChunkStream made it
// a chunk.
func (p *Pump) emitThroughPlugins(ch []byte) error {
	if !p.req.pl.HasChunkHooks() {
		p.emit(ch)
		return nil
	}
	out, err := p.req.pl.Chunk(p.req.ctx, bytes.Clone(ch)) // ch may alias the reader's buffer
	if err != nil {
		return err
	}
	for _, o := range out {
		if !wire.IsChunk(o) {
			p.req.core.Log.Warn("post_chunk plugin output dropped: not a chat completion chunk (a JSON object with a choices array of objects)",
				"generation", p.id.GenID, "chunk", clip(o, 200))
			continue
		}
		p.emit(o)
	}
	return nil
}

// finish ends the stream (err io.EOF: completed): on success the final chunk (usage, cost,
// metadata), otherwise an error chunk; then [DONE]. It is the only place
// either is written.
func (p *Pump) finish(err error) {
	p.stopKeepAlive()
	if errors.Is(err, errClientGone) {
		return
	}
	if err == io.EOF { // the upstream completed the generation
		final := p.held
		if final == nil {
			final = p.id.UsageChunk()
		}
		usage := p.r.Usage(final, p.text)
		p.req.adm.Record(usage)
		var aerr *apierr.Error
		if final, aerr = p.r.Settle(final, usage, p.ev.finishReason); aerr == nil {
			p.held = nil
			if p.ev.judge {
				p.r.ToolCalls = p.req.toolVerdict(&p.ev.calls)
			}
			if p.native { // the upstream's own end (message_stop) went out
				p.r.Succeeded(p.ev.ttft, int(usage.CompletionTokens))
				return
			}
			final = p.req.spend.includeSubs(final) // chat sub-requests its plugins made
			p.emit(p.meta.WithStages(p.req.spend.withStages(p.req.pl.Stages)).Set(final))
			p.emit(done)
			p.r.Succeeded(p.ev.ttft, int(usage.CompletionTokens))
			return
		}
		err = aerr
	}
	e := apierr.From(err)
	p.req.core.LogCause("/chat/completions (stream "+p.id.GenID+")", e)
	if p.native {
		p.held = nil
		p.out = p.req.NativeError(p.out, e)
	} else {
		p.flushHeld()
		p.emit(p.id.ErrorChunk(e))
	}
	// The client received what was generated before the failure, and pays
	// for that; a failure before any content costs nothing.
	var u billing.Usage
	if p.ev.contentSent {
		u = p.r.Counted(p.text())
	}
	p.req.adm.Record(u)
	p.r.Fail(e, u)
	if !p.native {
		p.emit(done)
	}
}

// flushHeld emits the held usage chunk, if any.
func (p *Pump) flushHeld() {
	if p.held != nil {
		h := p.held
		p.held = nil
		p.emit(h)
	}
}

// emit adds one SSE event to what goes to the client; every event of a
// stream is framed here. It cannot fail: the client's leaving is found
// where the pump's output is written (Read's caller, or run).
func (p *Pump) emit(data []byte) {
	p.out = sse.AppendEvent(p.out, data)
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
