package server

import (
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// openRouterMetadataHeaders are OpenRouter's names of X-Service-Metadata
// (and of its legacy X-Service-Experimental-Metadata).
var openRouterMetadataHeaders = []string{"X-OpenRouter-Metadata", "X-OpenRouter-Experimental-Metadata"}

// openRouterMetadataAsked reports whether the client asked for routing
// metadata under OpenRouter's header name.
func openRouterMetadataAsked(c *fiber.Ctx) bool {
	return slices.ContainsFunc(openRouterMetadataHeaders, func(h string) bool { return c.Get(h) != "" })
}

// openRouterNames wraps a handler so that a client that asked for the
// routing metadata under OpenRouter's header gets it under OpenRouter's
// name, openrouter_metadata, in a JSON answer or error. A stream's chunks
// keep service_metadata (they are written as they go).
func (s *Server) openRouterNames(h fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		err := h(c)
		if !openRouterMetadataAsked(c) {
			return err
		}
		if err != nil {
			if err = s.errorHandler(c, err); err != nil {
				return err
			}
		}
		resp := c.Response()
		if resp.IsBodyStream() || !strings.HasPrefix(string(resp.Header.ContentType()), fiber.MIMEApplicationJSON) {
			return nil
		}
		body := resp.Body()
		m := gjson.GetBytes(body, "service_metadata")
		if !m.Exists() {
			return nil
		}
		out, e := sjson.DeleteBytes(body, "service_metadata")
		if e == nil {
			out, e = sjson.SetRawBytes(out, "openrouter_metadata", []byte(m.Raw))
		}
		if e == nil {
			resp.SetBodyRaw(out)
		}
		return nil
	}
}
