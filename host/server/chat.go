package server

import (
	"bufio"
	"context"
	"net/http"
	"slices"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/content"
	"github.com/switchyard/switchyard/host/flow"
	"github.com/switchyard/switchyard/host/hangup"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/switchyard/switchyard/host/usage"
	"github.com/switchyard/switchyard/host/validate"
)

// chat serves POST /chat/completions: the HTTP side of the request core
// (host/flow) — parse, admit, Run, write.
func (s *Server) chat(c *fiber.Ctx) error {
	endSpan := telemetry.From(c.UserContext()).Phase("validate")
	// keptBody: a stream outlives the handler.
	vr, unsupported, aerr := s.Core.ParseChat(keptBody(c), accountOf(c), c.Get("X-Session-Id"))
	endSpan(aerr)
	if aerr != nil {
		return s.refused(c, aerr)
	}
	return s.run(c, vr, unsupported, nil)
}

// run admits a parsed chat request, runs it through the request core and
// writes its answer, translated by tr (nil: as chat). Every front door
// (chat, Responses) ends here.
func (s *Server) run(c *fiber.Ctx, vr *validate.ChatRequest, unsupported []string, tr translator) error {
	return s.runWith(c, vr, unsupported, tr, nil)
}

// runWith is run with set, when not nil, given the Request before it runs
// (a front door's native request).
func (s *Server) runWith(c *fiber.Ctx, vr *validate.ChatRequest, unsupported []string, tr translator, set func(*flow.Request)) error {
	key := c.Locals(localsKey).(*keys.Key)
	adm, aerr := s.admit(c, key, int64(vr.PromptTokens))
	if aerr != nil {
		return aerr
	}
	// The user context carries the request's telemetry (host/telemetry).
	ctx, cancel := context.WithTimeout(c.UserContext(), s.Dispatcher.RequestTimeout)
	// Until the handler returns, a client that hangs up cancels the work
	// (a stream notices it by its failed writes afterwards).
	ctx, stopWatch := hangup.Watch(ctx, cancel, c.Context().Conn())
	defer stopWatch.Stop()
	req := s.Core.NewRequest(ctx, cancel, vr, key, adm)
	defer req.Close()
	req.Meta, req.OpenRouterMeta, req.Unsupported = metadataRequested(c), openRouterMetadataAsked(c), unsupported
	req.Attribution = usage.AttributionOf(func(h string) string { return c.Get(h) })
	if set != nil {
		set(req)
	}
	o := req.Run()
	return s.write(c, req, o, tr, s.collector(req, o, vr.Body, tr))
}

// translator turns a chat answer into another API's (host/responses,
// host/messages): JSON a completion, Stream a translation of a chat event
// stream. Errors keep their status; the front door's envelope is
// writeError's.
type translator interface {
	JSON(chat []byte) ([]byte, *apierr.Error)
	Stream() streamTranslator
}

// streamTranslator translates a chat event stream as it goes: Feed takes
// any split of it, End what follows its last byte (the front door's
// ending of a stream cut short). Each result is valid until the next
// call.
type streamTranslator interface {
	Feed(chatEvents []byte) []byte
	End() []byte
}

// write answers with what a request's Run produced, translated by tr
// (nil: as it is), and hands the chat answer to col as it goes (nil: the
// content is not stored, content.go). Errors keep the chat envelope,
// which is OpenAI's.
func (s *Server) write(c *fiber.Ctx, req *flow.Request, o flow.Outcome, tr translator, col *content.Collector) error {
	if o.Charged {
		c.Set("X-Generation-Id", req.ID)
	}
	if o.Cache != "" {
		c.Set("X-Cache", o.Cache)
	}
	if o.Native {
		tr = nil // the provider's answer in the client's own API: as it came
	}
	switch {
	case o.Err != nil:
		col.Fail(o.Err.Status, o.Err.Message)
		return s.writeError(c, o.Err, o.Meta)
	case o.Stream != nil:
		// An open stream counts as in flight until it ends: the request
		// gives the slot back when its stream closes it.
		req.AddCloser(s.keepShedSlot(c))
		setStreamHeaders(c)
		fc := c.Context()
		switch st := o.Stream.(type) {
		case *flow.Pump:
			fc.Response.ImmediateHeaderFlush = st.Attach(fc.Conn())
			src := col.Reader(st)
			if tr != nil {
				fc.Response.SetBodyStream(&translatedReader{src: src, t: tr.Stream()}, -1)
			} else {
				fc.Response.SetBodyStream(src, -1)
			}
		case flow.Pusher:
			fc.SetBodyStreamWriter(func(w *bufio.Writer) {
				if tr != nil {
					// Push flushes after every write: the small buffer
					// hands each write on to the translation at once.
					t := &translatedWriter{w: w, t: tr.Stream()}
					tw := bufio.NewWriterSize(col.Writer(t), 512)
					st.Push(tw)
					_ = tw.Flush()
					_ = col.Close()
					_ = t.End()
					return
				}
				if col != nil {
					tw := bufio.NewWriterSize(col.Writer(flushWriter{w}), 512)
					st.Push(tw)
					_ = tw.Flush()
					_ = col.Close() // a stream that ended without [DONE]
					return
				}
				st.Push(w)
			})
		}
		return nil
	case o.Events != nil:
		_, _ = col.Write(o.Events)
		_ = col.Close()
		setStreamHeaders(c)
		if tr != nil {
			st := tr.Stream()
			return c.Send(append(slices.Clone(st.Feed(o.Events)), st.End()...))
		}
		return c.Send(o.Events)
	}
	col.JSON(o.Body)
	if tr != nil {
		body, aerr := tr.JSON(o.Body)
		if aerr != nil {
			return s.writeError(c, aerr, nil)
		}
		o.Body = body
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(o.Body)
}

// admit is the request's rate-limit admission (host/flow), its headers on
// the response.
func (s *Server) admit(c *fiber.Ctx, key *keys.Key, estimate int64) (*flow.Admission, *apierr.Error) {
	return s.Core.Admit(key, estimate, func(name, value string) { c.Set(name, value) })
}

// refused counts a request refused at validation (a 400) against its
// key's and account's requests per minute: a flood of invalid requests is
// not free. It answers the 429 instead once the limit is spent, and aerr
// otherwise. Unauthenticated requests never get here.
func (s *Server) refused(c *fiber.Ctx, aerr *apierr.Error) *apierr.Error {
	key, ok := c.Locals(localsKey).(*keys.Key)
	if !ok || key == nil || aerr.Status >= 500 {
		return aerr
	}
	adm, lerr := s.admit(c, key, 0)
	if lerr != nil {
		return lerr
	}
	adm.End()
	return aerr
}

func setStreamHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
}

// metadataRequested reads X-Service-Metadata (or the deprecated
// X-Service-Experimental-Metadata, or OpenRouter's names of either).
func metadataRequested(c *fiber.Ctx) bool {
	v := c.Get("X-Service-Metadata")
	if v == "" {
		v = c.Get("X-Service-Experimental-Metadata")
	}
	for _, h := range openRouterMetadataHeaders {
		if v == "" {
			v = c.Get(h)
		}
	}
	return v == "enabled"
}

// accountOf is the account of the request's key, "" before authentication.
func accountOf(c *fiber.Ctx) string {
	if k, ok := c.Locals(localsKey).(*keys.Key); ok && k != nil {
		return k.AccountID
	}
	return ""
}
