package server

import (
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
)

type envelope struct {
	Error           errorBody      `json:"error"`
	ServiceMetadata map[string]any `json:"service_metadata,omitempty"`
	UserID          *string        `json:"user_id"`
}

type errorBody struct {
	Code     int            `json:"code"`
	Message  string         `json:"message"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// errorJSON is the envelope of spec section 7 for e.
func errorJSON(e *apierr.Error, meta map[string]any) []byte {
	b, _ := json.Marshal(envelope{Error: errorBody{Code: e.Status, Message: e.Message, Metadata: e.Metadata}, ServiceMetadata: meta})
	return b
}

func writeError(c *fiber.Ctx, e *apierr.Error, meta map[string]any) error {
	if e.Status == 429 || e.Status == 503 || e.Status == 529 {
		// Clients (the OpenAI SDKs among them) honour Retry-After.
		c.Set(fiber.HeaderRetryAfter, "1")
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(e.Status).Send(errorJSON(e, meta))
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

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
