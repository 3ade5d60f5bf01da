package admin

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// GET/PUT /accounts/:id/log_content: whether the request log carries the
// account's prompts and completions (docs/observability.md). Reading is for
// the account's management keys and the operator; only the operator turns
// it on or off, since the log is the operator's.
func (h *handlers) registerLogContent(r fiber.Router) {
	r.Get("/accounts/:id/log_content", ManagementOnly, func(c *fiber.Ctx) error {
		id, ok := h.accountFor(c)
		if !ok {
			return Fail(c, http.StatusNotFound, "Account not found: no account "+strconv.Quote(c.Params("id")))
		}
		return c.JSON(fiber.Map{"data": fiber.Map{"account_id": id, "log_content": h.ks.LogContent(id)}})
	})
	r.Put("/accounts/:id/log_content", ManagementOnly, func(c *fiber.Ctx) error {
		if !h.ks.IsOperator(caller(c)) {
			return Fail(c, http.StatusForbidden, "Only the gateway's operator can turn content logging on or off")
		}
		id, ok := h.accountFor(c)
		if !ok {
			return Fail(c, http.StatusNotFound, "Account not found: no account "+strconv.Quote(c.Params("id")))
		}
		var body struct {
			LogContent *bool `json:"log_content"`
		}
		if err := json.Unmarshal(c.Body(), &body); err != nil || body.LogContent == nil {
			return Fail(c, http.StatusBadRequest, `body must be {"log_content": true} or {"log_content": false}`)
		}
		if err := h.ks.SetLogContent(id, *body.LogContent); err != nil {
			return Fail(c, http.StatusInternalServerError, "internal server error")
		}
		return c.JSON(fiber.Map{"data": fiber.Map{"account_id": id, "log_content": *body.LogContent}})
	})
}
