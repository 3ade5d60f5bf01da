package flow

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/jsonstr"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/sse"
	"github.com/switchyard/switchyard/host/wire"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// pushWriter is the client's stream when the gateway writes it (push): a
// server-tool request's, whose every turn is streamed from the upstream
// (its text passed on as it comes, its tool calls held until the turn
// ends: server calls are run, never shown; client calls end the loop and
// are sent then), and a stream opened while a plugin works (prestream.go).
// It frames the events, writes the keep-alives while tools or plugins
// work, and notices a client that left (a failed write cancels the
// work). Writes come from the stream and from the keep-alive ticker,
// hence the lock. (A pulled stream, the Pump, is written by the
// transport.)
type pushWriter struct {
	mu     sync.Mutex
	w      *bufio.Writer
	alive  bool
	cancel context.CancelFunc // stops the loop when the client is gone
	pl     *pipeline.Pipeline
	frame  []byte
	role   bool // the role delta was sent
	// maxCalls is limits.max_tool_calls_per_turn: a turn with more tool
	// calls fails as it is read.
	maxCalls int
	stop     chan struct{}  // ends the keep-alives (startKeepAlive)
	ticking  sync.WaitGroup // the keep-alive goroutine
}

func (tw *pushWriter) write(b []byte) bool {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if !tw.alive {
		return false
	}
	if _, err := tw.w.Write(b); err != nil || tw.w.Flush() != nil {
		tw.alive = false
		tw.cancel()
	}
	return tw.alive
}

// emit sends one chunk through the post_chunk plugins.
func (tw *pushWriter) emit(ctx context.Context, ch []byte) *apierr.Error {
	out := [][]byte{ch}
	if tw.pl.HasChunkHooks() {
		var err *apierr.Error
		if out, err = tw.pl.Chunk(ctx, ch); err != nil {
			return err
		}
	}
	for _, o := range out {
		if !wire.IsChunk(o) {
			continue // as the pump does: a plugin cannot put a non-chunk on the stream
		}
		tw.mu.Lock()
		tw.frame = sse.AppendEvent(tw.frame[:0], o)
		f := tw.frame
		tw.mu.Unlock()
		if !tw.write(f) {
			return apierr.ClientClosed()
		}
	}
	return nil
}

// startKeepAlive writes a keep-alive comment at once (the client knows the
// request is taken) and then every interval, from a goroutine of its own,
// until stopKeepAlive: while tools run or a plugin works, nothing else
// writes.
func (tw *pushWriter) startKeepAlive(every time.Duration) {
	tw.write(keepAliveLine)
	tw.stop = make(chan struct{})
	tw.ticking.Add(1)
	go func() {
		defer tw.ticking.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-tw.stop:
				return
			case <-t.C:
				if !tw.write(keepAliveLine) {
					return
				}
			}
		}
	}()
}

// stopKeepAlive ends the keep-alives; when it returns, none is being
// written.
func (tw *pushWriter) stopKeepAlive() {
	close(tw.stop)
	tw.ticking.Wait()
}

// heldCall is a tool call assembled from a turn's deltas.
type heldCall struct {
	id, name string
	args     strings.Builder
}

// heldCalls are a turn's tool calls by their index.
type heldCalls map[int64]*heldCall

// add adds a chunk's tool-call deltas; false when they make more than max
// calls (limits.max_tool_calls_per_turn).
func (calls heldCalls) add(deltas gjson.Result, max int) bool {
	ok := true
	deltas.ForEach(func(_, d gjson.Result) bool {
		i := d.Get("index").Int()
		h := calls[i]
		if h == nil {
			if ok = len(calls) < max; !ok {
				return false
			}
			h = &heldCall{}
			calls[i] = h
		}
		if v := d.Get("id").Str; v != "" {
			h.id = v
		}
		if v := d.Get("function.name").Str; v != "" {
			h.name = v
		}
		h.args.WriteString(d.Get("function.arguments").Str)
		return true
	})
	return ok
}

// turn reads one streamed turn of res through Events: text deltas go to
// the client as they come (with the request's generation id), tool-call
// deltas are assembled. It returns the turn as a complete result (what the
// loop reads), its usage and finish reason. The call is closed when it
// returns; on error the turn is settled (failed or cancelled).
func (tw *pushWriter) turn(ctx context.Context, ev *Events, res *dispatch.Result, id wire.Identity) ([]byte, billing.Usage, string, *apierr.Error) {
	defer res.Call.Close()
	calls := heldCalls{}
	var usageChunk []byte
	fail := func(e *apierr.Error) ([]byte, billing.Usage, string, *apierr.Error) {
		u := res.Counted(ev.Text.String())
		if e.Status == 499 {
			res.Cancel(u)
		} else {
			res.Fail(e, u)
		}
		return nil, u, "", e
	}
	for {
		ch, facts, err := ev.Next(true)
		switch {
		case err == io.EOF:
		case errors.Is(err, errClientGone):
			return fail(apierr.ClientClosed())
		case err != nil:
			return fail(apierr.From(err))
		}
		if err != nil {
			break
		}
		if facts.Usage {
			usageChunk = append(usageChunk[:0], ch...)
		}
		c := gjson.GetBytes(ch, "choices.0")
		if !calls.add(c.Get("delta.tool_calls"), tw.maxCalls) {
			return fail(tooManyCalls(res.Call.Endpoint.Provider.Slug, "more than "+strconv.Itoa(tw.maxCalls), tw.maxCalls))
		}
		if t := c.Get("delta.content").Str; t != "" {
			delta := `{"content":` + jsonstr.Quote(t) + `}`
			if !tw.role {
				tw.role = true
				delta = `{"role":"assistant","content":` + jsonstr.Quote(t) + `}`
			}
			if e := tw.emit(ctx, []byte(id.ChunkHead()+`[{"index":0,"delta":`+delta+`,"finish_reason":null}]}`)); e != nil {
				return fail(e)
			}
		}
	}
	text, finish := ev.Text.String(), ev.finishReason
	// The turn as a result.
	raw := []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":null}]}`)
	if text != "" {
		raw, _ = sjson.SetBytes(raw, "choices.0.message.content", text)
	}
	if finish != "" {
		raw, _ = sjson.SetBytes(raw, "choices.0.finish_reason", finish)
	}
	if len(calls) > 0 {
		idx := make([]int64, 0, len(calls))
		for i := range calls {
			idx = append(idx, i)
		}
		sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
		arr := []byte{'['}
		for n, i := range idx {
			h := calls[i]
			if n > 0 {
				arr = append(arr, ',')
			}
			arr = append(arr, `{"id":`...)
			arr = jsonstr.Append(arr, h.id)
			arr = append(arr, `,"type":"function","function":{"name":`...)
			arr = jsonstr.Append(arr, h.name)
			arr = append(arr, `,"arguments":`...)
			arr = jsonstr.Append(arr, h.args.String())
			arr = append(arr, `}}`...)
		}
		raw, _ = sjson.SetRawBytes(raw, "choices.0.message.tool_calls", append(arr, ']'))
	}
	raw = wire.Completion(raw, res.Identity(), "chat.completion")
	if u := gjson.GetBytes(usageChunk, "usage"); u.IsObject() {
		raw, _ = sjson.SetRawBytes(raw, "usage", []byte(u.Raw))
	}
	u := res.Usage(raw, func() string { return text })
	return raw, u, finish, nil
}

// tail is what ends the client's stream once the loop answered: the
// answer's client tool calls (its text went out as it came), the finish,
// and the final chunk with the summed usage and service_metadata.
func tail(result []byte, id wire.Identity) [][]byte {
	head := id.ChunkHead()
	var out [][]byte
	ch := gjson.GetBytes(result, "choices.0")
	if tcs := ch.Get("message.tool_calls"); tcs.IsArray() {
		arr := []byte{'['}
		i := 0
		tcs.ForEach(func(_, tc gjson.Result) bool {
			if i > 0 {
				arr = append(arr, ',')
			}
			item, _ := sjson.SetBytes([]byte(tc.Raw), "index", i)
			arr = append(arr, item...)
			i++
			return true
		})
		out = append(out, []byte(head+`[{"index":0,"delta":{"role":"assistant","tool_calls":`+string(arr)+`]},"finish_reason":null}]}`))
	}
	fr := ch.Get("finish_reason").Raw
	if fr == "" || fr == "null" {
		fr = `"stop"`
	}
	out = append(out, []byte(head+`[{"index":0,"delta":{},"finish_reason":`+fr+`}]}`))
	final := head + `[],"usage":` + gjson.GetBytes(result, "usage").Raw
	if sm := gjson.GetBytes(result, "service_metadata"); sm.Exists() {
		final += `,"service_metadata":` + sm.Raw
	} else if sm := gjson.GetBytes(result, "openrouter_metadata"); sm.Exists() { // asked with OpenRouter's header
		final += `,"openrouter_metadata":` + sm.Raw
	}
	return append(out, []byte(final+"}"))
}
