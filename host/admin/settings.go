package admin

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/keys"
)

// Account-wide provider settings (spec 2.4: provider.only and
// provider.ignore are merged with them). Reading is open to any key of the
// account; changing them needs a management key.
func (h *handlers) registerSettings(api fiber.Router) {
	api.Get("/settings/providers", func(c *fiber.Ctx) error {
		k := c.Locals(LocalsKey).(*keys.Key)
		return c.JSON(fiber.Map{"data": h.ks.Providers(k.AccountID)})
	})
	api.Put("/settings/providers", ManagementOnly, func(c *fiber.Ctx) error {
		var p keys.ProviderSettings
		if err := decodeStrict(c.Body(), &p); err != nil {
			return apierr.BadRequest("", `body must be {"only": [slugs], "ignore": [slugs]}: %v`, err)
		}
		for i, list := range [][]string{p.Only, p.Ignore} {
			for _, slug := range list {
				if strings.TrimSpace(slug) == "" {
					return apierr.BadRequest([]string{"only", "ignore"}[i], "provider slugs must not be empty")
				}
			}
		}
		k := c.Locals(LocalsKey).(*keys.Key)
		if err := h.ks.SetProviders(k.AccountID, p); err != nil {
			return err
		}
		return c.JSON(fiber.Map{"data": p})
	})
}
