package server

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/hangup"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/route"
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
	acct := s.Keys.Providers(key.AccountID)
	ctx, cancel := context.WithTimeout(c.UserContext(), s.Dispatcher.RequestTimeout) // with the request's telemetry
	defer cancel()
	ctx, stopWatch := hangup.Watch(ctx, cancel, c.Context().Conn()) // a client that hangs up cancels the call
	defer stopWatch.Stop()
	r, aerr := s.Dispatcher.Run(ctx, &dispatch.Job{
		Key: key, GenID: billing.NewID(), Body: req.Body, TextBody: text, PromptBound: req.PromptBound, Images: req.Images,
		Read: dispatch.ReadEmbeddings(req.Inputs, req.Base64),
		Route: route.Request{Kind: catalog.KindEmbedding, Models: []string{req.Model}, Prefs: req.Prefs,
			PromptTokens: req.PromptTokens, ContextTokens: req.LongestInput, AccountOnly: acct.Only, AccountIgnore: acct.Ignore},
	})
	if aerr != nil {
		return aerr
	}
	usage := r.Usage(r.Body, nil)
	adm.Record(usage)
	raw, aerr := r.Settle(r.Body, usage, "")
	if aerr != nil {
		return aerr
	}
	r.Succeeded(0, 0)
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
	req, aerr := validate.Embeddings(body)
	if aerr != nil {
		return nil, nil, aerr
	}
	req, text, aerr := s.Core.NormalizeEmbeddings(req)
	if aerr != nil {
		return nil, nil, aerr
	}
	if m := s.Router.Catalog().Model(req.Model); m != nil && m.Kind == catalog.KindEmbedding && !m.AcceptsImages() && req.HasImage {
		return nil, nil, apierr.BadRequest("input", "model %s does not accept image input; send text only", req.Model)
	}
	return req, text, nil
}
