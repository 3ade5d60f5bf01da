package server

import (
	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/completions"
	"github.com/switchyard/switchyard/host/telemetry"
)

// textCompletions serves POST /completions, the legacy text completions
// (OpenAI's, and OpenRouter's; the Vercel AI SDK provider's completion()
// model calls it): the prompt becomes a chat request with it as the one
// user message (host/completions), run through the request core as
// /chat/completions is, and the answer and stream come back as
// text_completion objects.
func (s *Server) textCompletions(c *fiber.Ctx) error {
	endSpan := telemetry.From(c.UserContext()).Phase("validate")
	cr, aerr := completions.ToChat(c.Body()) // a new body: it outlives the handler with a stream
	if aerr != nil {
		endSpan(aerr)
		return s.refused(c, aerr)
	}
	vr, unsupported, aerr := s.Core.ParseChat(cr.Chat, accountOf(c), c.Get("X-Session-Id"))
	endSpan(aerr)
	if aerr != nil {
		return s.refused(c, aerr)
	}
	return s.run(c, vr, unsupported, completionsTranslator{cr})
}

// completionsTranslator answers in text_completion shapes.
type completionsTranslator struct{ r *completions.Request }

func (t completionsTranslator) JSON(chat []byte) ([]byte, *apierr.Error) {
	return completions.FromChat(chat, t.r), nil
}

func (t completionsTranslator) Stream() streamTranslator { return completions.NewStream(t.r) }
