package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/sse"
	"github.com/switchyard/switchyard/host/validate"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// routingParams are the optional chat parameters that count for
// provider.require_parameters and are dropped for endpoints that do not
// support them.
var routingParams = map[string]bool{
	"temperature": true, "top_p": true, "top_k": true, "min_p": true, "top_a": true,
	"frequency_penalty": true, "presence_penalty": true, "repetition_penalty": true,
	"logit_bias": true, "logprobs": true, "top_logprobs": true, "max_completion_tokens": true,
	"max_tokens": true, "seed": true, "stop": true, "response_format": true, "tools": true,
	"tool_choice": true, "parallel_tool_calls": true, "reasoning": true, "reasoning_effort": true,
	"modalities": true, "service_tier": true,
}

// chatRequest is what the host reads from a validated body.
type chatRequest struct {
	body      []byte
	models    []string // primary first
	stream    bool
	sessionID string
	echo      bool
	params    []string
	maxOut    int
	prompt    int // estimated prompt tokens
	meta      bool
	key       *keys.Key
	prefs     route.Preferences
}

func parseChat(c *fiber.Ctx, body []byte) (*chatRequest, *apierr.Error) {
	r := &chatRequest{body: body, meta: metadataRequested(c), key: c.Locals(localsKey).(*keys.Key)}
	seen := map[string]bool{}
	add := func(m string) {
		if m != "" && !seen[m] {
			seen[m] = true
			r.models = append(r.models, m)
		}
	}
	var provider, routeField gjson.Result
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		switch key := k.Str; {
		case key == "model":
			add(v.Str)
		case key == "stream":
			r.stream = v.Bool()
		case key == "session_id":
			r.sessionID = v.Str
		case key == "debug":
			r.echo = v.Get("echo_upstream_body").Bool()
		case key == "provider":
			provider = v
		case key == "route":
			routeField = v
		case key == "max_completion_tokens" || key == "max_tokens":
			if n := int(v.Int()); n > r.maxOut {
				r.maxOut = n
			}
			if v.Type != gjson.Null {
				r.params = append(r.params, key)
			}
		case key == "messages":
			r.prompt = estimateTokens(len(v.Raw))
		case routingParams[key] && v.Type != gjson.Null:
			r.params = append(r.params, key)
		}
		return true
	})
	gjson.GetBytes(body, "models").ForEach(func(_, v gjson.Result) bool { add(v.Str); return true })
	if r.sessionID == "" {
		r.sessionID = strings.Clone(c.Get("X-Session-Id")) // kept by the sticky-session map
		if len([]rune(r.sessionID)) > 256 {
			return nil, apierr.BadRequest("x-session-id", "at most 256 characters")
		}
	}
	prefs, err := route.ParsePreferences(provider, routeField)
	if err != nil {
		return nil, err
	}
	r.prefs = prefs
	return r, nil
}

// metadataRequested reads X-Service-Metadata (or the deprecated
// X-Service-Experimental-Metadata).
func metadataRequested(c *fiber.Ctx) bool {
	v := c.Get("X-Service-Metadata")
	if v == "" {
		v = c.Get("X-Service-Experimental-Metadata")
	}
	return v == "enabled"
}

// estimateTokens is a size-based estimate used for routing and reservations
// before a tokenizer has run; four bytes a token is the usual rule of thumb
// for English text in JSON.
func estimateTokens(n int) int { return (n + 3) / 4 }

func newGenerationID() string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [24]byte
	_, _ = rand.Read(b[:])
	out := make([]byte, 4, 28)
	copy(out, "gen-")
	for _, x := range b {
		out = append(out, alphabet[int(x)%len(alphabet)])
	}
	return string(out)
}

func (s *Server) chat(c *fiber.Ctx) error {
	// fasthttp reuses the request buffer once the handler returns, and a
	// stream outlives the handler.
	body := append([]byte(nil), c.Body()...)
	if len(body) == 0 {
		return apierr.BadRequest("", "request body is empty; send a JSON chat request")
	}
	if err := validate.Chat(body); err != nil {
		return err
	}
	body, aerr := s.chatCompat(body)
	if aerr != nil {
		return aerr
	}
	req, aerr := s.parseChatCompat(c, body)
	if aerr != nil {
		return aerr
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.Config.Timeouts.Request))
	pl, aerr := s.Pipeline.Build(req.key.AccountID, req.models[0], gjson.GetBytes(body, "plugins"))
	if aerr != nil {
		cancel()
		return aerr
	}
	streaming := false // once the stream runs, it owns pl and cancel
	defer func() {
		if !streaming {
			pl.Release()
			cancel()
		}
	}()
	genID := newGenerationID()
	if !pl.Empty() {
		pre, aerr := pl.Pre(ctx, body)
		if aerr != nil {
			return writeError(c, aerr, s.pipelineMeta(req, pl))
		}
		if pre.Respond != nil {
			return s.respondFromPlugin(c, req, pl, genID, pre.Respond)
		}
		if !bytes.Equal(pre.Body, body) {
			if err := validate.Chat(pre.Body); err != nil {
				return writeError(c, &apierr.Error{Status: http.StatusBadGateway,
					Message: "a plugin produced an invalid request: " + err.Message}, s.pipelineMeta(req, pl))
			}
			body = pre.Body
			if req, aerr = s.parseChatCompat(c, body); aerr != nil {
				return aerr
			}
		}
	}
	acct := s.Keys.Providers(req.key.AccountID)
	plan, aerr := s.Router.Plan(route.Request{
		Kind: catalog.KindChat, Models: req.models, Prefs: req.prefs, Params: req.params,
		SessionID: req.sessionID, PromptTokens: req.prompt, MaxOutputTokens: req.maxOut,
		AccountOnly: acct.Only, AccountIgnore: acct.Ignore,
	})
	if aerr != nil {
		return writeError(c, aerr, nil)
	}
	res, aerr := s.reserve(req.key, genID, plan.Attempts[0], body, req.maxOut, req.stream)
	if aerr != nil {
		return aerr
	}

	var call *upstreamCall
	var raw []byte // the translated result of a non-streaming call
	var last *apierr.Error
	attempt := 0
	for i, ep := range plan.Attempts {
		if i > 0 {
			if err := res.Retarget(ep.Provider.Slug, ep.Price); err != nil {
				last = err
				break
			}
		}
		attempt++
		start := time.Now()
		u, err := s.send(ctx, ep, abi.HookChatRequest, upstreamChatBody(body, ep, plan.Dropped[ep]), req.stream, plan.Dropped[ep])
		if err == nil && !req.stream {
			// A non-streaming attempt is done only when its body has been
			// read and translated: a failure there falls back too.
			if raw, err = s.readChat(ctx, u); err != nil {
				u.close()
			}
		}
		if err == nil {
			call = u
			break
		}
		res.AddFailedAttempt(billing.Usage{})
		s.report(ep, false, err.Status, time.Since(start), 0)
		last = err
		if !err.Retryable || !req.prefs.AllowFallbacks() {
			break
		}
	}
	if call == nil {
		msg := "no attempt was made"
		if last != nil {
			msg = last.Message
		}
		_, _ = res.Settle(billing.Outcome{Status: billing.StatusError, Error: msg})
		if last == nil {
			last = apierr.New(http.StatusServiceUnavailable, "no provider is available for %s", req.models[0])
		}
		var meta map[string]any
		if req.meta {
			meta = plan.Metadata(req.models[0], nil, attempt)
			meta["pipeline"] = pl.Stages
		}
		return writeError(c, last, meta)
	}
	var meta map[string]any
	if req.meta {
		meta = plan.Metadata(req.models[0], call.ep, attempt)
		clampMeta(meta, call.ep, req.maxOut)
	}
	if req.sessionID != "" {
		s.Router.Stick(req.sessionID, call.ep)
	}
	if req.stream {
		call.headersReceived()
		st := &stream{s: s, call: call, req: req, genID: genID, meta: meta, ctx: ctx, cancel: cancel, res: res, pl: pl}
		streaming = true
		c.Set(fiber.HeaderContentType, "text/event-stream")
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set("X-Accel-Buffering", "no")
		c.Set("X-Generation-Id", genID)
		c.Status(http.StatusOK)
		c.Context().SetBodyStreamWriter(st.run)
		return nil
	}
	defer call.close()
	raw = normalizeCompletion(raw, genID, call.ep, "chat.completion")
	usage, ok := billing.ParseUsage(raw)
	if !ok {
		usage = countChat(call.ep.Model.ID, body, completionText(raw))
	}
	usage.Requests = 1
	finish := gjson.GetBytes(raw, "choices.0.finish_reason").Str
	var postErr *apierr.Error
	if !pl.Empty() {
		// The generation happened whatever a post plugin decides: it is
		// charged either way.
		if edited, err := pl.Post(ctx, raw); err != nil {
			postErr = err
		} else {
			raw = edited
		}
		if meta != nil {
			meta["pipeline"] = pl.Stages
		}
	}
	raw, aerr = settleOK(res, raw, usage, finish)
	if aerr == nil {
		aerr = postErr
	}
	if aerr != nil {
		return writeError(c, aerr, meta)
	}
	s.report(call.ep, true, http.StatusOK, time.Since(call.started), int(usage.CompletionTokens))
	if meta != nil {
		b, _ := json.Marshal(meta)
		raw, _ = sjson.SetRawBytes(raw, "service_metadata", b)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	c.Set("X-Generation-Id", genID)
	return c.Send(raw)
}

// readChat reads a non-streaming attempt's body and runs the adapter's
// response hook. Its failures are retryable: another endpoint may answer.
func (s *Server) readChat(ctx context.Context, call *upstreamCall) ([]byte, *apierr.Error) {
	raw, err := io.ReadAll(io.LimitReader(call.resp.Body, 64<<20))
	call.headersReceived()
	if err != nil {
		return nil, s.transportError(ctx, call, err)
	}
	if !call.mod.Manifest.IsPassthrough(abi.HookChatResponse) {
		out, err := call.mod.Call(ctx, abi.HookChatResponse, adapterCtx(call.ep, false, nil), raw)
		if err != nil {
			e := apierr.From(err)
			e.Retryable = true
			return nil, e
		}
		raw = out.Field(0)
	}
	if !gjson.ValidBytes(raw) || !gjson.GetBytes(raw, "choices").IsArray() {
		return nil, &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
			Message: "provider " + call.ep.Provider.Slug + " returned a response that is not a chat completion"}
	}
	return raw, nil
}

// normalizeCompletion makes an upstream result the gateway's: our id (the
// generation id), the catalog model id, the serving provider, and the keys
// the spec requires even when the upstream left them out.
func normalizeCompletion(raw []byte, genID string, ep *catalog.Endpoint, object string) []byte {
	raw, _ = sjson.SetBytes(raw, "id", genID)
	raw, _ = sjson.SetBytes(raw, "model", ep.Model.ID)
	raw, _ = sjson.SetBytes(raw, "object", object)
	raw, _ = sjson.SetBytes(raw, "provider", ep.Provider.Slug)
	if !gjson.GetBytes(raw, "created").Exists() {
		raw, _ = sjson.SetBytes(raw, "created", time.Now().Unix())
	}
	if !gjson.GetBytes(raw, "system_fingerprint").Exists() {
		raw, _ = sjson.SetRawBytes(raw, "system_fingerprint", []byte("null"))
	}
	return raw
}

func (s *Server) report(ep *catalog.Endpoint, ok bool, status int, d time.Duration, outTokens int) {
	s.Router.Report(ep, route.Outcome{Success: ok, Status: status, TTFT: d, Duration: d, OutputTokens: outTokens})
}

// stream pumps one upstream SSE response to the client.
type stream struct {
	s      *Server
	call   *upstreamCall
	req    *chatRequest
	genID  string
	meta   map[string]any
	ctx    context.Context
	cancel context.CancelFunc
	res    *billing.Reservation
	pl     *pipeline.Pipeline
	text   strings.Builder // completion so far, for counting when usage is missing
}

type sseItem struct {
	data []byte
	err  error
}

const keepAliveComment = ": SWITCHYARD PROCESSING\n\n"

// checkpointEvery is how often a long stream records its usage so far, which
// is what crash recovery charges for it (docs/billing.md).
const checkpointEvery = 5 * time.Second

func (st *stream) run(w *bufio.Writer) {
	defer st.pl.Release()
	defer st.cancel()
	defer st.call.close()
	// Whatever way the stream ends, what was generated is charged once. A
	// client that went away pays for what was produced until then.
	defer func() {
		if !st.res.Settled() {
			_, _ = st.res.Settle(billing.Outcome{Status: billing.StatusCancelled,
				Usage: countChat(st.call.ep.Model.ID, st.req.body, st.text.String())})
		}
	}()
	s, call := st.s, st.call
	items := make(chan sseItem, 32)
	go func() {
		defer close(items)
		r := sse.NewReader(call.resp.Body, 16<<20)
		for {
			ev, err := r.Next()
			it := sseItem{err: err}
			if err == nil {
				it.data = append([]byte(nil), ev.Data...)
			}
			select {
			case items <- it:
			case <-st.ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	keep := time.NewTicker(time.Duration(s.Config.KeepAlive))
	defer keep.Stop()

	write := func(chunk []byte) bool {
		_, _ = w.WriteString("data: ")
		_, _ = w.Write(chunk)
		_, _ = w.WriteString("\n\n")
		return w.Flush() == nil
	}
	head := chunkHead(st.genID, call.ep.Model.ID, call.ep.Provider.Slug)
	if st.req.echo {
		dbg, _ := sjson.SetRawBytes([]byte(head+`[],"debug":{}}`), "debug.echo_upstream_body", validJSONOr(call.sentBody))
		if !write(dbg) {
			return
		}
	}
	var held []byte  // the chunk carrying usage: held so the final chunk can carry metadata
	var state []byte // the adapter's stream state
	ectx := adapterCtx(call.ep, true, nil)
	sawUsage, contentSent, finished := false, false, false
	checkpointed := time.Now()
	finish := ""
	completion := 0
	var ttft time.Duration
	flushHeld := func() bool {
		if held == nil {
			return true
		}
		h := held
		held = nil
		return write(h)
	}
	fail := func(e *apierr.Error) {
		_ = flushHeld()
		b, _ := sjson.SetRawBytes([]byte(head+`[{"index":0,"delta":{},"finish_reason":"error"}]}`), "error", e.Object())
		_ = write(b)
		// The client received what was generated before the failure, and
		// pays for that; a failure before any content costs nothing.
		var u billing.Usage
		if contentSent {
			u = countChat(call.ep.Model.ID, st.req.body, st.text.String())
		}
		_, _ = st.res.Settle(billing.Outcome{Status: billing.StatusError, Error: e.Message, Usage: u})
		s.report(call.ep, false, e.Status, time.Since(call.started), completion)
	}
loop:
	for {
		select {
		case it, ok := <-items:
			if !ok {
				break loop
			}
			if it.err != nil {
				if errors.Is(it.err, io.EOF) {
					if !finished {
						fail(&apierr.Error{Status: http.StatusBadGateway, Message: "provider " + call.ep.Provider.Slug + " ended the stream before it was complete"})
						_ = write([]byte("[DONE]"))
						return
					}
					break loop
				}
				e := s.transportError(st.ctx, call, it.err)
				if e.Status == 499 {
					return // the client is gone
				}
				fail(e)
				_ = write([]byte("[DONE]"))
				return
			}
			if string(it.data) == "[DONE]" {
				finished = true
				break loop
			}
			chunks := [][]byte{it.data}
			if !call.mod.Manifest.IsPassthrough(abi.HookChatStreamEvent) {
				// Adapters keep per-stream state (a message id, token counts)
				// in a field the host hands back with the next event: any
				// pooled instance can take the next call.
				out, err := call.mod.Call(st.ctx, abi.HookChatStreamEvent, ectx, it.data, state)
				if err != nil {
					fail(apierr.From(err))
					_ = write([]byte("[DONE]"))
					return
				}
				state = out.Field(0)
				chunks = out.Fields[min(1, len(out.Fields)):]
			}
			for _, ch := range chunks {
				if !gjson.ValidBytes(ch) {
					continue
				}
				if gjson.GetBytes(ch, "error").Exists() {
					// A provider error inside the stream, OpenAI style.
					msg := gjson.GetBytes(ch, "error.message").Str
					fail(&apierr.Error{Status: http.StatusBadGateway, Message: s.scrub(call.ep, "provider "+call.ep.Provider.Slug+": "+msg)})
					_ = write([]byte("[DONE]"))
					return
				}
				ch = normalizeChunk(ch, st.genID, call.ep)
				// Billing and health count what the upstream generated,
				// before plugins edit it.
				for _, c := range gjson.GetBytes(ch, "choices").Array() {
					if t := c.Get("delta.content").Str; t != "" {
						if !contentSent {
							ttft = time.Since(call.started)
							st.res.FirstToken()
						}
						contentSent = true
						completion += estimateTokens(len(t))
						st.text.WriteString(t)
						if time.Since(checkpointed) > checkpointEvery {
							// A crash now charges at least what this says.
							checkpointed = time.Now()
							st.res.Checkpoint(countChat(call.ep.Model.ID, st.req.body, st.text.String()))
						}
					}
					if fr := c.Get("finish_reason"); fr.Type == gjson.String {
						finished, finish = true, fr.Str
					}
				}
				if !flushHeld() {
					return
				}
				if gjson.GetBytes(ch, "usage").IsObject() {
					sawUsage, held = true, ch
					continue
				}
				out := [][]byte{ch}
				if st.pl.HasChunkHooks() {
					var err *apierr.Error
					if out, err = st.pl.Chunk(st.ctx, ch); err != nil {
						fail(err)
						_ = write([]byte("[DONE]"))
						return
					}
				}
				for _, o := range out {
					if !write(o) {
						return // client gone: the deferred cancel stops the upstream
					}
				}
			}
		case <-keep.C:
			if _, err := w.WriteString(keepAliveComment); err != nil || w.Flush() != nil {
				return
			}
		case <-st.ctx.Done():
			fail(&apierr.Error{Status: http.StatusRequestTimeout, Message: "request exceeded the gateway's time limit of " + time.Duration(s.Config.Timeouts.Request).String()})
			_ = write([]byte("[DONE]"))
			return
		}
	}
	final := held
	usage, ok := billing.ParseUsage(final)
	if !sawUsage || !ok {
		final = []byte(head + `[]}`)
		usage = countChat(call.ep.Model.ID, st.req.body, st.text.String())
	}
	usage.Requests = 1
	final, aerr := settleOK(st.res, final, usage, finish)
	if aerr != nil {
		fail(aerr)
		_ = write([]byte("[DONE]"))
		return
	}
	if st.meta != nil {
		if !st.pl.Empty() {
			st.meta["pipeline"] = st.pl.Stages
		}
		b, _ := json.Marshal(st.meta)
		final, _ = sjson.SetRawBytes(final, "service_metadata", b)
	}
	_ = write(final)
	_ = write([]byte("[DONE]"))
	if ttft == 0 {
		ttft = time.Since(call.started)
	}
	s.Router.Report(call.ep, route.Outcome{Success: true, Status: 200, TTFT: ttft, Duration: time.Since(call.started),
		OutputTokens: int(usage.CompletionTokens)})
}

// chunkHead is the start of a gateway-made chunk, open at "choices":. The
// provider is left out when no provider served the request ("").
func chunkHead(genID, model, provider string) string {
	h := `{"id":` + strconv.Quote(genID) + `,"object":"chat.completion.chunk","created":` +
		strconv.FormatInt(time.Now().Unix(), 10) + `,"model":` + strconv.Quote(model)
	if provider != "" {
		h += `,"provider":` + strconv.Quote(provider)
	}
	return h + `,"choices":`
}

func normalizeChunk(ch []byte, genID string, ep *catalog.Endpoint) []byte {
	if !gjson.GetBytes(ch, "created").Exists() {
		ch, _ = sjson.SetBytes(ch, "created", time.Now().Unix())
	}
	ch, _ = sjson.SetBytes(ch, "id", genID)
	ch, _ = sjson.SetBytes(ch, "model", ep.Model.ID)
	ch, _ = sjson.SetBytes(ch, "provider", ep.Provider.Slug)
	return ch
}

func validJSONOr(b []byte) []byte {
	if gjson.ValidBytes(b) {
		return b
	}
	q, _ := json.Marshal(string(b))
	return q
}

// pipelineMeta is the service_metadata of a request stopped by a plugin
// before routing.
// It lists the endpoints the request could have been routed to (none
// selected) and an empty region, like the metadata of a routed request.
func (s *Server) pipelineMeta(req *chatRequest, pl *pipeline.Pipeline) map[string]any {
	if !req.meta {
		return nil
	}
	meta := s.Router.Unrouted(req.models, "plugin").Metadata(req.models[0], nil, 0)
	meta["pipeline"] = pl.Stages
	meta["summary"] = "answered by the plugin pipeline before routing"
	return meta
}

func bytesEqual(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || string(a) == string(b))
}

// respondFromPlugin answers with the chat result a pre_request plugin
// produced. Nothing went upstream, so nothing is charged. A streaming
// request gets the result as a stream.
func (s *Server) respondFromPlugin(c *fiber.Ctx, req *chatRequest, pl *pipeline.Pipeline, genID string, result []byte) error {
	model := req.models[0]
	result, _ = sjson.SetBytes(result, "id", genID)
	result, _ = sjson.SetBytes(result, "model", model)
	result, _ = sjson.SetBytes(result, "object", "chat.completion")
	if !gjson.GetBytes(result, "created").Exists() {
		result, _ = sjson.SetBytes(result, "created", time.Now().Unix())
	}
	if !gjson.GetBytes(result, "system_fingerprint").Exists() {
		result, _ = sjson.SetRawBytes(result, "system_fingerprint", []byte("null"))
	}
	if !gjson.GetBytes(result, "usage").IsObject() {
		result, _ = sjson.SetRawBytes(result, "usage", []byte(`{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"cost":0}`))
	}
	if m := s.pipelineMeta(req, pl); m != nil {
		b, _ := json.Marshal(m)
		result, _ = sjson.SetRawBytes(result, "service_metadata", b)
	}
	c.Set("X-Generation-Id", genID)
	if !req.stream {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(result)
	}
	head := chunkHead(genID, model, "")
	var out []byte
	gjson.GetBytes(result, "choices").ForEach(func(_, ch gjson.Result) bool {
		idx := ch.Get("index").Int()
		delta, _ := sjson.SetRawBytes([]byte(`{"role":"assistant"}`), "content", []byte(ch.Get("message.content").Raw))
		chunk := head + `[{"index":` + strconv.FormatInt(idx, 10) + `,"delta":` + string(delta) + `,"finish_reason":null}]}`
		out = append(out, "data: "+chunk+"\n\n"...)
		fr := ch.Get("finish_reason").Raw
		if fr == "" {
			fr = `"stop"`
		}
		out = append(out, "data: "+head+`[{"index":`+strconv.FormatInt(idx, 10)+`,"delta":{},"finish_reason":`+fr+`}]}`+"\n\n"...)
		return true
	})
	final := head + `[],"usage":` + gjson.GetBytes(result, "usage").Raw
	if sm := gjson.GetBytes(result, "service_metadata"); sm.Exists() {
		final += `,"service_metadata":` + sm.Raw
	}
	out = append(out, "data: "+final+"}\n\ndata: [DONE]\n\n"...)
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	return c.Send(out)
}
