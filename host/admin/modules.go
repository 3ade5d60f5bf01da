package admin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/modules"
)

// The module API publishes, activates, rolls back and lists Wasm modules
// (docs/api.md). Management keys only. A key publishes into its account's
// scope — plugins there run only for that account's keys — and keys of the
// operator account (the bootstrap account) may also manage the gateway-wide
// scope, where adapters live.
func (h *handlers) registerModules(api fiber.Router) {
	g := api.Group("/modules", ManagementOnly)
	g.Get("/", h.listModules)
	g.Post("/", h.publishModule)
	g.Post("/:name/activate", h.activateModule)
	g.Post("/:name/rollback", h.rollbackModule)
	g.Get("/:name/logs", h.moduleLogs)
	g.Put("/:name/default", h.defaultModule)
	g.Delete("/:name/versions/:version", h.deleteVersion)
	g.Delete("/:name", h.deleteModule)
}

// deleteScope is a DELETE's scope: the query's ?scope=account|global
// (a body is accepted too, as the other module calls take it).
func (h *handlers) deleteScope(c *fiber.Ctx) (string, *apierr.Error) {
	if s := c.Query("scope"); s != "" {
		return h.scopeOf(c, s)
	}
	_, scope, aerr := h.parseScopeBody(c)
	return scope, aerr
}

// moduleLogs returns the last lines a module of the key's scope logged
// on this gateway (?scope=account, the default: the account's own module;
// global for the operator): a tenant reads its own plugin's log lines and
// no one else's.
func (h *handlers) moduleLogs(c *fiber.Ctx) error {
	scope, aerr := h.scopeOf(c, c.Query("scope"))
	if aerr != nil {
		return aerr
	}
	return c.JSON(fiber.Map{"data": h.mods.Logs(scope, moduleParam(c))})
}

// deleteVersion removes a stored version that is not the active one.
func (h *handlers) deleteVersion(c *fiber.Ctx) error {
	scope, aerr := h.deleteScope(c)
	if aerr != nil {
		return aerr
	}
	version := strings.Clone(c.Params("version"))
	if err := h.mods.DeleteVersion(modules.Scoped(scope, moduleParam(c)), version); err != nil {
		return moduleError(err, moduleParam(c))
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"name": moduleParam(c), "version": version, "deleted": true}})
}

// deleteModule removes every version of a module and stops running it.
func (h *handlers) deleteModule(c *fiber.Ctx) error {
	scope, aerr := h.deleteScope(c)
	if aerr != nil {
		return aerr
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := h.mods.DeleteModule(ctx, modules.Scoped(scope, moduleParam(c)))
	if err != nil {
		return moduleError(err, moduleParam(c))
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"name": moduleParam(c), "versions_deleted": n, "deleted": true}})
}

// scopeOf maps the API's scope ("account", default, or "global") to a
// registry scope, refusing the global scope to other accounts.
func (h *handlers) scopeOf(c *fiber.Ctx, scope string) (string, *apierr.Error) {
	k := c.Locals(LocalsKey).(*keys.Key)
	switch scope {
	case "", "account":
		return k.AccountID, nil
	case "global":
		if !h.ks.IsOperator(k) {
			return "", apierr.New(http.StatusForbidden, "only the gateway's operator can manage gateway-wide modules")
		}
		return "", nil
	}
	return "", apierr.BadRequest("scope", "must be account or global, got %q", scope)
}

type moduleView struct {
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	Scope     string    `json:"scope"`
	SHA256    string    `json:"sha256"`
	Active    bool      `json:"active"`
	Default   bool      `json:"default"`
	Source    string    `json:"source"`
	Published time.Time `json:"published_at"`
}

func (h *handlers) listModules(c *fiber.Ctx) error {
	k := c.Locals(LocalsKey).(*keys.Key)
	defaults := map[string]bool{}
	for _, n := range h.mods.Defaults("") {
		defaults[n] = true
	}
	for _, n := range h.mods.Defaults(k.AccountID) {
		defaults[modules.Scoped(k.AccountID, n)] = true
	}
	out := []moduleView{}
	for _, m := range h.mods.List(k.AccountID) {
		v := moduleView{Name: m.Name, Version: m.Version, Scope: "global", SHA256: m.SHA256, Active: m.Active,
			Default: defaults[m.Name], Source: m.Source, Published: m.Published}
		if n, ok := strings.CutPrefix(m.Name, k.AccountID+"/"); ok {
			v.Name, v.Scope = n, "account"
		}
		out = append(out, v)
	}
	return c.JSON(fiber.Map{"data": out})
}

func (h *handlers) publishModule(c *fiber.Ctx) error {
	var req struct {
		Manifest json.RawMessage `json:"manifest"`
		Wasm     string          `json:"wasm"`
		Scope    string          `json:"scope"`
		Activate bool            `json:"activate"`
	}
	if err := decodeStrict(c.Body(), &req); err != nil {
		return apierr.BadRequest("", "body must be {\"manifest\": {…}, \"wasm\": \"<base64>\", \"scope\": \"account\"|\"global\", \"activate\": bool}: %v", err)
	}
	if len(req.Manifest) == 0 {
		return apierr.BadRequest("manifest", "required")
	}
	bin, err := base64.StdEncoding.DecodeString(req.Wasm)
	if err != nil || len(bin) == 0 {
		return apierr.BadRequest("wasm", "required: the module binary, base64-encoded")
	}
	scope, aerr := h.scopeOf(c, req.Scope)
	if aerr != nil {
		return aerr
	}
	// Compiling and the guest check: the bound other gateways give the
	// same compile when they follow a publish (modules/follow.go). One
	// minute failed publishes of the test plugin under -race at load 10.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	publish := h.mods.PublishScoped
	if req.Activate {
		publish = h.mods.PublishAndActivate // one load for both
	}
	m, err := publish(ctx, scope, req.Manifest, bin, "api")
	if err != nil {
		return moduleError(err, "")
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"data": fiber.Map{"name": m.Name, "version": m.Version, "active": req.Activate}})
}

type scopeBody struct {
	Version string `json:"version"`
	Scope   string `json:"scope"`
	Enabled *bool  `json:"enabled"`
}

func (h *handlers) parseScopeBody(c *fiber.Ctx) (scopeBody, string, *apierr.Error) {
	var b scopeBody
	if len(c.Body()) > 0 {
		if err := decodeStrict(c.Body(), &b); err != nil {
			return b, "", apierr.BadRequest("", "invalid JSON body: %v", err)
		}
	}
	scope, err := h.scopeOf(c, b.Scope)
	return b, scope, err
}

func (h *handlers) activateModule(c *fiber.Ctx) error {
	b, scope, aerr := h.parseScopeBody(c)
	if aerr != nil {
		return aerr
	}
	if b.Version == "" {
		return apierr.BadRequest("version", "required")
	}
	return h.activate(c, modules.Scoped(scope, moduleParam(c)), b.Version)
}

func (h *handlers) activate(c *fiber.Ctx, scoped, version string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.mods.Activate(ctx, scoped, version); err != nil {
		return moduleError(err, moduleParam(c))
	}
	return activated(c, version)
}

// rollbackModule activates the version published before the active one.
func (h *handlers) rollbackModule(c *fiber.Ctx) error {
	_, scope, aerr := h.parseScopeBody(c)
	if aerr != nil {
		return aerr
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	version, err := h.mods.Rollback(ctx, modules.Scoped(scope, moduleParam(c)))
	if err != nil {
		return moduleError(err, moduleParam(c))
	}
	return activated(c, version)
}

func activated(c *fiber.Ctx, version string) error {
	return c.JSON(fiber.Map{"data": fiber.Map{"name": moduleParam(c), "version": version, "active": true}})
}

// moduleError maps the registry's errors to statuses. Anything else — a
// manifest that does not parse, a module that does not load — is the
// caller's to fix (422); the active version is untouched.
func moduleError(err error, name string) *apierr.Error {
	switch {
	case errors.Is(err, modules.ErrExists), errors.Is(err, modules.ErrNotPublished),
		errors.Is(err, modules.ErrActiveVersion), errors.Is(err, modules.ErrQuota), errors.Is(err, modules.ErrGuestCheck):
		return apierr.From(err) // the registry's own 409, 404 or 400, with its message
	case errors.Is(err, modules.ErrNoEarlier):
		return apierr.Wrap(http.StatusConflict, err, "module %s has no earlier version to roll back to", name)
	}
	return apierr.Wrap(http.StatusUnprocessableEntity, err, "%v", err)
}

func (h *handlers) defaultModule(c *fiber.Ctx) error {
	b, scope, aerr := h.parseScopeBody(c)
	if aerr != nil {
		return aerr
	}
	if b.Enabled == nil {
		return apierr.BadRequest("enabled", "required: true to run the plugin on every request of its scope")
	}
	scoped := modules.Scoped(scope, moduleParam(c))
	if h.mods.ActiveVersion(scoped) == "" {
		return apierr.New(http.StatusNotFound, "no active module %s in this scope", moduleParam(c))
	}
	if err := h.mods.SetDefault(scoped, *b.Enabled); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"name": moduleParam(c), "default": *b.Enabled}})
}

// moduleParam copies the :name parameter: fiber's values alias the request
// buffer, which is reused once the handler returns, and the registry keeps
// the name.
func moduleParam(c *fiber.Ctx) string { return strings.Clone(c.Params("name")) }
