package server

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/wire"
)

// writeError answers with e's envelope. Every error response passes here.
func (s *Server) writeError(c *fiber.Ctx, e *apierr.Error, meta *wire.Metadata) error {
	s.logCause(c.Path(), e)
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
	return c.Status(e.Status).Send(e.Envelope(meta.JSON()))
}

// logCause logs the internal cause of an error a client receives. Error
// responses (writeError) and failed streams (pump.finish) call it, and
// nothing else logs a request's error, so each is logged once.
func (s *Server) logCause(path string, e *apierr.Error) {
	if e.Cause == nil {
		return
	}
	level := slog.LevelWarn // the caller's to fix
	if e.Status >= 500 {
		level = slog.LevelError
	}
	s.Log.Log(context.Background(), level, "request failed", "path", path, "status", e.Status, "message", e.Message, "err", e.Cause)
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
