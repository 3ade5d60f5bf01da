package server

import (
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/wire"
)

// writeError answers with e's envelope. Every error response passes here,
// so an error's cause is logged here and only here.
func (s *Server) writeError(c *fiber.Ctx, e *apierr.Error, meta *wire.Metadata) error {
	if e.Cause != nil {
		s.Log.Error("request failed", "path", c.Path(), "status", e.Status, "message", e.Message, "err", e.Cause)
	}
	if e.Status == 429 || e.Status == 503 || e.Status == 529 {
		// Clients (the OpenAI SDKs among them) honour Retry-After.
		c.Set(fiber.HeaderRetryAfter, "1")
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(e.Status).Send(e.Envelope(meta.JSON()))
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
