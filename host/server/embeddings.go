package server

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/flow"
	"github.com/switchyard/switchyard/host/hangup"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/telemetry"
)

// embeddings serves POST /embeddings: parse, admit, the request core's
// embeddings phases (flow.Core.Embeddings), write.
func (s *Server) embeddings(c *fiber.Ctx) error {
	endSpan := telemetry.From(c.UserContext()).Phase("validate")
	req, text, aerr := s.Core.ParseEmbeddings(keptBody(c)) // the request aliases the body
	endSpan(aerr)
	if aerr != nil {
		return s.refused(c, aerr)
	}
	key := c.Locals(localsKey).(*keys.Key)
	adm, aerr := s.admit(c, key, int64(req.PromptTokens))
	if aerr != nil {
		return aerr
	}
	defer adm.End()
	ctx, cancel := context.WithTimeout(c.UserContext(), s.Dispatcher.RequestTimeout) // with the request's telemetry
	defer cancel()
	ctx, stopWatch := hangup.Watch(ctx, cancel, c.Context().Conn()) // a client that hangs up cancels the call
	defer stopWatch.Stop()
	_, raw, _, aerr := s.Core.Embeddings(ctx, flow.EmbeddingsJob{Key: key, GenID: billing.NewID(), Req: req, Text: text, Adm: adm,
		Meta: metadataRequested(c)})
	if aerr != nil {
		return aerr
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(raw)
}
