package server

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/flow"
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
		vr, unsupported, aerr = s.Core.ParseChat(mr.Chat, accountOf(c), c.Get("X-Session-Id"))
	}
	endSpan(aerr)
	if aerr != nil {
		return s.refused(c, aerr)
	}
	// Native mode (docs/front-doors.md): an attempt on a provider that
	// speaks Messages itself sends the client's body, not its translation.
	// The body may alias c.Body(), valid until this handler returns: only
	// Run's attempts read it (the adapter copies it into its upstream
	// request), and a stream's attempt is made before Run returns.
	native := &dispatch.Native{API: "messages", Capability: manifest.CapabilityMessagesNative,
		Body: messages.Native(c.Body()), Beta: anthropicBeta(c)}
	native.PromptBound, native.Images = messages.PromptBound(native.Body)
	return s.runWith(c, vr, unsupported, messagesTranslator{model: mr.Model}, func(req *flow.Request) {
		req.Native, req.NativeError = native, messages.ErrorEvent
	})
}

// anthropicBeta is the request's anthropic-beta header, its repeats
// joined with commas as the header's list allows.
func anthropicBeta(c *fiber.Ctx) string {
	var vals []string
	for _, v := range c.Request().Header.PeekAll("anthropic-beta") {
		if v := strings.TrimSpace(string(v)); v != "" {
			vals = append(vals, v)
		}
	}
	return strings.Join(vals, ",")
}

// messagesTranslator answers in Anthropic's shapes, naming the model the
// client asked for.
type messagesTranslator struct{ model string }

func (t messagesTranslator) JSON(chat []byte) ([]byte, *apierr.Error) {
	return messages.FromChat(chat, t.model)
}

func (t messagesTranslator) Stream() streamTranslator {
	return &messagesStream{s: messages.NewStream(t.model)}
}

// messagesStream is messages.Stream as a streamTranslator.
type messagesStream struct {
	s   *messages.Stream
	out []byte
}

func (m *messagesStream) Feed(p []byte) []byte { m.out = m.s.Feed(m.out[:0], p); return m.out }
func (m *messagesStream) End() []byte          { m.out = m.s.Close(m.out[:0]); return m.out }

// countTokens serves POST /messages/count_tokens: the prompt tokens of
// the equivalent chat request, by the gateway's tokenizer for the model
// (the figure the gateway's own counts use; the provider's may differ).
func (s *Server) countTokens(c *fiber.Ctx) error {
	mr, aerr := messages.ToChatCount(c.Body())
	var vr *validate.ChatRequest
	if aerr == nil {
		vr, _, aerr = s.Core.ParseChat(mr.Chat, accountOf(c), "")
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
