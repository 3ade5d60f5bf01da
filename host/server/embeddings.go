package server

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/flow"
	"github.com/switchyard/switchyard/host/hangup"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/switchyard/switchyard/host/validate"
)

// embeddings serves POST /embeddings: typed request → dispatcher → JSON.
func (s *Server) embeddings(c *fiber.Ctx) error {
	endSpan := telemetry.From(c.UserContext()).Phase("validate")
	req, text, aerr := s.embeddingsRequest(c)
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
	r, raw, _, aerr := s.Core.Embeddings(ctx, flow.EmbeddingsJob{Key: key, GenID: billing.NewID(), Req: req, Text: text, Adm: adm})
	if aerr != nil {
		return aerr
	}
	// The generation id, as OpenRouter's embeddings answers carry (the
	// body is ours, dispatch.ReadEmbeddings wrote it: it has no id).
	if len(raw) > 1 && raw[0] == '{' {
		raw = append([]byte(`{"id":"`+r.Identity().GenID+`",`), raw[1:]...)
	}
	if metadataRequested(c) {
		raw = r.Metadata(req.Model).Set(raw)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(raw)
}

// embeddingsRequest is the typed, normalised request of c, and its input
// in the form the adapters take (normalizeEmbeddings).
func (s *Server) embeddingsRequest(c *fiber.Ctx) (*validate.EmbeddingsRequest, []byte, *apierr.Error) {
	body := keptBody(c) // the request aliases it
	if len(body) == 0 {
		return nil, nil, apierr.BadRequest("", "request body is empty; send a JSON embeddings request")
	}
	return s.Core.ParseEmbeddings(body)
}
