package server

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/responses"
	"github.com/switchyard/switchyard/host/telemetry"
)

// responsesAPI serves POST /responses, OpenAI's Responses API: the body is
// translated to the chat request it stands for (host/responses), which is
// parsed, admitted and run exactly as a /chat/completions body, and the
// answer is translated back. Routing, fallbacks, plugins, limits, credits
// and generation records are chat's.
func (s *Server) responsesAPI(c *fiber.Ctx) error {
	endSpan := telemetry.From(c.UserContext()).Phase("validate")
	rr, aerr := responses.ToChat(c.Body())
	if aerr != nil {
		endSpan(aerr)
		return s.refused(c, aerr)
	}
	// rr.Chat is a new buffer: it outlives the handler with a stream.
	vr, unsupported, aerr := s.Core.ParseChat(rr.Chat, c.Get("X-Session-Id"))
	endSpan(aerr)
	if aerr != nil {
		return s.refused(c, aerr)
	}
	return s.run(c, vr, unsupported, responsesTranslator{rr.Echo})
}

// responsesTranslator answers in the Responses API's shapes.
type responsesTranslator struct{ echo responses.Echo }

func (t responsesTranslator) JSON(chat []byte) []byte  { return responses.FromChat(chat, t.echo) }
func (t responsesTranslator) Stream() streamTranslator { return responses.NewStream(t.echo) }

// notStored answers the stored-response endpoints: this gateway keeps no
// responses (store is accepted and nothing is kept), so none is found.
func (s *Server) notStored(c *fiber.Ctx) error {
	return apierr.New(http.StatusNotFound, "response %.64q not found: this gateway does not store responses (store is accepted and nothing is kept)", c.Params("id"))
}
