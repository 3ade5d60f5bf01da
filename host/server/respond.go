package server

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/messages"
	"github.com/switchyard/switchyard/host/responses"
	"github.com/switchyard/switchyard/host/wire"
)

// writeError answers with e's envelope. Every error response passes here.
func (s *Server) writeError(c *fiber.Ctx, e *apierr.Error, meta *wire.Metadata) error {
	s.Core.LogCause(c.Path(), e)
	switch {
	case e.RetryAfter > 0:
		// The upstream's own Retry-After, kept (whole seconds, rounded up).
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(int64((e.RetryAfter+time.Second-1)/time.Second), 10))
	case (e.Status == 429 || e.Status == 503 || e.Status == 529) && len(c.Response().Header.Peek(fiber.HeaderRetryAfter)) == 0:
		// Clients (the OpenAI SDKs among them) honour Retry-After; one a
		// handler set already (a rate limit's) stands.
		c.Set(fiber.HeaderRetryAfter, "1")
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	if isMessagesRoute(c) {
		// Anthropic's envelope, which its clients parse (host/messages).
		return c.Status(e.Status).Send(messages.Envelope(e))
	}
	if isResponsesRoute(c) {
		// OpenAI's error object: type, param, string code (host/responses).
		return c.Status(e.Status).Send(responses.Envelope(e, meta.JSON()))
	}
	return c.Status(e.Status).Send(e.Envelope(meta.JSON()))
}
