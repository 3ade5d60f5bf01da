package server

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
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
		return aerr
	}
	key := c.Locals(localsKey).(*keys.Key)
	adm, aerr := s.admit(c, key, int64(req.PromptTokens))
	if aerr != nil {
		return aerr
	}
	defer adm.end()
	acct := s.Keys.Providers(key.AccountID)
	ctx, cancel := context.WithTimeout(c.UserContext(), s.Dispatcher.RequestTimeout) // with the request's telemetry
	defer cancel()
	ctx, stopWatch := hangup.Watch(ctx, cancel, c.Context().Conn()) // a client that hangs up cancels the call
	defer stopWatch.Stop()
	r, aerr := s.Dispatcher.Run(ctx, &dispatch.Job{
		Key: key, GenID: newGenerationID(), Body: req.Body, TextBody: text, PromptBound: req.PromptBound, Images: req.Images,
		Read: dispatch.ReadEmbeddings(req.Inputs, req.Base64),
		Route: route.Request{Kind: catalog.KindEmbedding, Models: []string{req.Model}, Prefs: req.Prefs,
			PromptTokens: req.PromptTokens, AccountOnly: acct.Only, AccountIgnore: acct.Ignore},
	})
	if aerr != nil {
		return aerr
	}
	usage := r.Usage(r.Body, nil)
	adm.record(usage)
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

// listModels serves GET /models and GET /embeddings/models (spec 2.8).
func (s *Server) listModels(kind catalog.Kind) fiber.Handler {
	type entry struct {
		ID            string            `json:"id"`
		Object        string            `json:"object"`
		Name          string            `json:"name,omitempty"`
		Kind          catalog.Kind      `json:"kind"`
		ContextLength int               `json:"context_length,omitempty"`
		OwnedBy       string            `json:"owned_by"`
		Modalities    []string          `json:"input_modalities"`
		Pricing       map[string]string `json:"pricing"`
		Providers     []string          `json:"providers"`
		// Router is the plugin a router model id runs (routers.go).
		Router string `json:"router,omitempty"`
	}
	return func(c *fiber.Ctx) error {
		out := []entry{}
		for _, k := range []catalog.Kind{catalog.KindChat, catalog.KindEmbedding} {
			if kind != "" && k != kind {
				continue
			}
			for _, m := range s.Router.Catalog().ModelsOfKind(k) {
				e := entry{ID: m.ID, Object: "model", Name: m.Name, Kind: m.Kind, ContextLength: m.ContextLength,
					Modalities: m.InputModalities, OwnedBy: m.ID[:indexSlash(m.ID)]}
				cheapest := m.Endpoints[0]
				for _, ep := range m.Endpoints {
					e.Providers = append(e.Providers, ep.Provider.Slug)
					if ep.Price.Prompt+ep.Price.Completion < cheapest.Price.Prompt+cheapest.Price.Completion {
						cheapest = ep
					}
				}
				// Per-token USD strings, as the public gateways list them.
				e.Pricing = map[string]string{
					"prompt":     perToken(cheapest.Price.Prompt),
					"completion": perToken(cheapest.Price.Completion),
					"request":    usd(cheapest.Price.Request),
				}
				out = append(out, e)
			}
			if k != catalog.KindChat {
				continue
			}
			// The router model ids whose plugin is installed. A router
			// adds no price of its own: "-1" says the price is the model
			// it chooses (as the public gateways list theirs).
			for _, rm := range routerModels {
				if !s.Pipeline.Installed(c.Locals(localsKey).(*keys.Key).AccountID, rm.Plugin) {
					continue
				}
				out = append(out, entry{ID: rm.Model, Object: "model", Name: rm.Name, Kind: catalog.KindChat, OwnedBy: "switchyard",
					Modalities: []string{"text", "image"}, Pricing: map[string]string{"prompt": "-1", "completion": "-1", "request": "0"},
					Providers: []string{}, Router: rm.Plugin})
			}
		}
		return c.JSON(fiber.Map{"object": "list", "data": out})
	}
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
	req, text, aerr := s.normalizeEmbeddings(req)
	if aerr != nil {
		return nil, nil, aerr
	}
	if m := s.Router.Catalog().Model(req.Model); m != nil && m.Kind == catalog.KindEmbedding && !m.AcceptsImages() && req.HasImage {
		return nil, nil, apierr.BadRequest("input", "model %s does not accept image input; send text only", req.Model)
	}
	return req, text, nil
}
