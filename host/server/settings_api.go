package server

import (
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/admin"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/keys"
)

// Account-wide provider settings (spec 2.4: provider.only and
// provider.ignore are merged with them). Reading is open to any key of the
// account; changing them needs a management key.
func (s *Server) registerSettingsAPI(api fiber.Router) {
	api.Get("/settings/providers", func(c *fiber.Ctx) error {
		k := c.Locals(localsKey).(*keys.Key)
		return c.JSON(fiber.Map{"data": s.Keys.Providers(k.AccountID)})
	})
	api.Put("/settings/providers", admin.ManagementOnly, func(c *fiber.Ctx) error {
		var p keys.ProviderSettings
		dec := json.NewDecoder(strings.NewReader(string(c.Body())))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return apierr.BadRequest("", `body must be {"only": [slugs], "ignore": [slugs]}: %v`, err)
		}
		for i, list := range [][]string{p.Only, p.Ignore} {
			for _, slug := range list {
				if strings.TrimSpace(slug) == "" {
					return apierr.BadRequest([]string{"only", "ignore"}[i], "provider slugs must not be empty")
				}
			}
		}
		k := c.Locals(localsKey).(*keys.Key)
		if err := s.Keys.SetProviders(k.AccountID, p); err != nil {
			return err
		}
		return c.JSON(fiber.Map{"data": p})
	})
}
