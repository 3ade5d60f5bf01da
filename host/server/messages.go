package server

import (
	"bufio"
	"context"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/flow"
	"github.com/switchyard/switchyard/host/hangup"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/messages"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/switchyard/switchyard/host/validate"
)

// The Anthropic Messages front door (docs/front-doors.md): its body is
// translated into the equivalent chat request (host/messages), which runs
// through the one request core exactly as POST /chat/completions does,
// and the Outcome is translated back.
const (
	messagesPath    = "/api/v1/messages"
	countTokensPath = "/api/v1/messages/count_tokens"
)

// isMessagesRoute reports a request to the Messages front door: its
// errors are Anthropic's envelope, and it may authenticate by x-api-key.
func isMessagesRoute(c *fiber.Ctx) bool {
	p := strings.TrimSuffix(c.Path(), "/")
	return p == messagesPath || p == countTokensPath
}

// messages serves POST /messages (also with ?beta=true, as Claude Code
// calls it).
func (s *Server) messages(c *fiber.Ctx) error {
	endSpan := telemetry.From(c.UserContext()).Phase("validate")
	// c.Body() is not kept: the translation is a new body.
	mr, aerr := messages.ToChat(c.Body())
	var vr *validate.ChatRequest
	var unsupported []string
	if aerr == nil {
		vr, unsupported, aerr = s.Core.ParseChat(mr.Chat, c.Get("X-Session-Id"))
	}
	endSpan(aerr)
	if aerr != nil {
		return s.refused(c, aerr)
	}
	key := c.Locals(localsKey).(*keys.Key)
	adm, aerr := s.admit(c, key, int64(vr.PromptTokens))
	if aerr != nil {
		return aerr
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), s.Dispatcher.RequestTimeout)
	ctx, stopWatch := hangup.Watch(ctx, cancel, c.Context().Conn())
	defer stopWatch.Stop()
	req := s.Core.NewRequest(ctx, cancel, vr, key, adm)
	defer req.Close()
	req.Unsupported = unsupported
	return s.writeMessages(c, req, mr.Model, req.Run())
}

// writeMessages answers with what Run produced, in Anthropic's shapes; it
// is Server.write with a translation on each way out.
func (s *Server) writeMessages(c *fiber.Ctx, req *flow.Request, model string, o flow.Outcome) error {
	if o.Charged {
		c.Set("X-Generation-Id", req.ID)
	}
	switch {
	case o.Err != nil:
		return s.writeError(c, o.Err, nil)
	case o.Stream != nil:
		req.AddCloser(s.keepShedSlot(c))
		setStreamHeaders(c)
		fc := c.Context()
		switch st := o.Stream.(type) {
		case *flow.Pump:
			// The pump's keep-alives go to the connection as SSE
			// comments, between events, which the SDKs skip.
			fc.Response.ImmediateHeaderFlush = st.Attach(fc.Conn())
			fc.Response.SetBodyStream(messages.NewReader(st, model), -1)
		case flow.Pusher:
			fc.SetBodyStreamWriter(func(w *bufio.Writer) {
				tw := messages.NewWriter(w, model)
				bw := bufio.NewWriterSize(tw, 4096)
				st.Push(bw)
				_ = bw.Flush()
				_ = tw.Close()
			})
		}
		return nil
	case o.Events != nil:
		setStreamHeaders(c)
		st := messages.NewStream(model)
		return c.Send(st.Close(st.Feed(nil, o.Events)))
	}
	body, aerr := messages.FromChat(o.Body, model)
	if aerr != nil {
		return s.writeError(c, aerr, nil)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(body)
}

// countTokens serves POST /messages/count_tokens: the prompt tokens of
// the equivalent chat request, by the gateway's tokenizer for the model
// (the figure the gateway's own counts use; the provider's may differ).
func (s *Server) countTokens(c *fiber.Ctx) error {
	mr, aerr := messages.ToChatCount(c.Body())
	var vr *validate.ChatRequest
	if aerr == nil {
		vr, _, aerr = s.Core.ParseChat(mr.Chat, "")
	}
	if aerr != nil {
		return s.refused(c, aerr)
	}
	// A count is a request like any other for the key's rate limits: a
	// flood of counts is not free.
	adm, aerr := s.admit(c, c.Locals(localsKey).(*keys.Key), 0)
	if aerr != nil {
		return aerr
	}
	defer adm.End()
	n, _, err := tokenize.CountChatPrompt(vr.Model(), vr.Body)
	if err != nil {
		return apierr.Wrap(http.StatusInternalServerError, err, "counting tokens")
	}
	return c.JSON(fiber.Map{"input_tokens": n})
}
