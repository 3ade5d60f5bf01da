// Package cachedefaults serves the response cache's per-account and
// per-key defaults (issue 35; docs/response-cache.md, "Turning it on"):
// GET and PUT /accounts/:id/response_cache and /keys/:hash/response_cache.
// A default is the options object of the cache plugin's plugins[] item
// ({"mode": "semantic", "ttl": 600}); with one set, every request of the
// account (or of the key) runs the cache as if it listed it, its own item
// merged over the default (host/flow cachePresets, pipeline.Extra.Presets).
// A key's default wins over its account's; {"enabled": false} on a key
// turns its account's default off for that key.
package cachedefaults

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/admin"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/validate"
)

// member is the body's one member: {"response_cache": {…} | null}.
const member = "response_cache"

// Register mounts the routes on r, the authenticated /api/v1 group. Both
// need a management key; an account's keys and settings are its own (an
// operator key may name another account, as for rate limits).
func Register(r fiber.Router, ks *keys.Store, p *pipeline.Runner) {
	h := &handlers{ks: ks, p: p}
	r.Get("/accounts/:id/response_cache", admin.ManagementOnly, h.getAccount)
	r.Put("/accounts/:id/response_cache", admin.ManagementOnly, h.putAccount)
	r.Get("/keys/:hash/response_cache", admin.ManagementOnly, h.getKey)
	r.Put("/keys/:hash/response_cache", admin.ManagementOnly, h.putKey)
}

type handlers struct {
	ks *keys.Store
	p  *pipeline.Runner
}

func (h *handlers) account(c *fiber.Ctx) (string, error) {
	id, ok := admin.AccountFor(c, h.ks)
	if !ok {
		return "", admin.Fail(c, http.StatusNotFound, "Account not found: no account "+strconv.Quote(c.Params("id")))
	}
	return id, nil
}

// key is the key :hash if it belongs to the caller's account; another
// account's is reported exactly like a missing one.
func (h *handlers) key(c *fiber.Ctx) (*keys.Key, error) {
	me, _ := c.Locals(admin.LocalsKey).(*keys.Key)
	hash := c.Params("hash")
	k, err := h.ks.Get(hash)
	if err != nil || me == nil || k.AccountID != me.AccountID {
		return nil, admin.Fail(c, http.StatusNotFound, "Key not found: no key with hash "+strconv.Quote(hash))
	}
	return k, nil
}

func (h *handlers) getAccount(c *fiber.Ctx) error {
	id, err := h.account(c)
	if id == "" {
		return err
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"account_id": id, member: view(h.ks.ResponseCache(id))}})
}

func (h *handlers) putAccount(c *fiber.Ctx) error {
	id, err := h.account(c)
	if id == "" {
		return err
	}
	opts, msg, status := h.parse(c.Body(), id)
	if msg != "" {
		return admin.Fail(c, status, msg)
	}
	if err := h.ks.SetResponseCache(id, opts); err != nil {
		return admin.Fail(c, http.StatusInternalServerError, "internal server error")
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"account_id": id, member: view(opts)}})
}

func (h *handlers) getKey(c *fiber.Ctx) error {
	k, err := h.key(c)
	if k == nil {
		return err
	}
	return c.JSON(fiber.Map{"data": h.keyView(k)})
}

func (h *handlers) putKey(c *fiber.Ctx) error {
	k, err := h.key(c)
	if k == nil {
		return err
	}
	opts, msg, status := h.parse(c.Body(), k.AccountID)
	if msg != "" {
		return admin.Fail(c, status, msg)
	}
	k, err = h.ks.SetKeyResponseCache(k.Hash, opts)
	if errors.Is(err, keys.ErrNotFound) {
		return admin.Fail(c, http.StatusNotFound, "Key not found: no key with hash "+strconv.Quote(c.Params("hash")))
	}
	if err != nil {
		return admin.Fail(c, http.StatusInternalServerError, "internal server error")
	}
	return c.JSON(fiber.Map{"data": h.keyView(k)})
}

// keyView is a key's setting: its own, and what its requests run with
// (its own, else its account's) and where that comes from.
func (h *handlers) keyView(k *keys.Key) fiber.Map {
	eff, source := k.ResponseCache, "key"
	if len(eff) == 0 {
		eff, source = h.ks.ResponseCache(k.AccountID), "account"
	}
	if len(eff) == 0 {
		source = "none"
	}
	return fiber.Map{"hash": k.Hash, "account_id": k.AccountID, member: view(k.ResponseCache), "effective": view(eff), "source": source}
}

func view(opts json.RawMessage) any {
	if len(opts) == 0 {
		return nil
	}
	return opts
}

const usage = `body must be {"response_cache": {options of the response-cache plugin}} (e.g. {"mode": "semantic", "ttl": 600}; {"enabled": false} turns an account's default off for a key) or {"response_cache": null} (none)`

// parse reads the body's options, checked against the config_schema of
// the cache plugin requests of account run (as a request's plugins[]
// item is): nil for null. A non-empty msg is the error, with its status.
func (h *handlers) parse(body []byte, account string) (opts json.RawMessage, msg string, status int) {
	var b map[string]json.RawMessage
	if err := json.Unmarshal(body, &b); err != nil || len(b) != 1 || b[member] == nil {
		return nil, usage, http.StatusBadRequest
	}
	raw := b[member]
	if string(raw) == "null" {
		return nil, "", 0
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, usage, http.StatusBadRequest
	}
	if _, ok := m["id"]; ok {
		return nil, "response_cache.id: leave it out: the host runs the account's cache plugin (the module of role cache)", http.StatusBadRequest
	}
	id := h.p.Modules.RolePlugin(account, manifest.RoleCache)
	if id == "" {
		return nil, "no response cache plugin is installed on this gateway (a module of role cache): a default would turn nothing on", http.StatusConflict
	}
	m["id"], _ = json.Marshal(id)
	item, _ := json.Marshal(m)
	if sch := h.p.Schemas(account)(id); sch != nil {
		if aerr := validate.PluginOption(0, id, sch, string(item)); aerr != nil {
			return nil, "response_cache: " + aerr.Message, http.StatusBadRequest
		}
	}
	delete(m, "id")
	opts, _ = json.Marshal(m)
	return opts, "", 0
}
