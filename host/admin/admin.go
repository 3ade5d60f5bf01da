// Package admin is the management API under /api/v1 (documented in
// docs/api.md): keys, credits, generations, modules and account provider
// settings. The caller's auth
// middleware has already resolved the bearer key and stored it as
// c.Locals("key") (*keys.Key); management operations additionally need a
// management key. Every operation is confined to the caller's account.
package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/ratelimit"
)

// LocalsKey is the fiber locals name under which the auth middleware stores
// the caller's *keys.Key.
const LocalsKey = "key"

// Deps are what the management API manages.
type Deps struct {
	Keys    *keys.Store
	Ledger  *billing.Ledger
	Modules *modules.Registry
	// DefaultRateLimits are every account's configured default rate
	// limits, shown beside an account's own (live: a configuration reload
	// replaces them; nil: unlimited).
	DefaultRateLimits *ratelimit.Defaults
}

type handlers struct {
	ks       *keys.Store
	l        *billing.Ledger
	mods     *modules.Registry
	defaults *ratelimit.Defaults
}

// Register mounts the management API on r, the authenticated /api/v1
// group: keys, credits, generations, modules and provider settings.
func Register(r fiber.Router, d Deps) {
	h := &handlers{ks: d.Keys, l: d.Ledger, mods: d.Modules, defaults: d.DefaultRateLimits}
	h.registerModules(r)
	h.registerSettings(r)
	h.registerRateLimits(r)
	h.registerLogContent(r) // logcontent.go
	r.Get("/key", h.currentKey)
	r.Get("/keys", ManagementOnly, h.listKeys)
	r.Post("/keys", ManagementOnly, h.createKey)
	r.Get("/keys/:hash", ManagementOnly, h.getKey)
	r.Patch("/keys/:hash", ManagementOnly, h.updateKey)
	r.Delete("/keys/:hash", ManagementOnly, h.deleteKey)
	r.Get("/credits", h.getCredits)
	r.Post("/credits", ManagementOnly, h.addCredits)
	r.Get("/generation", h.getGeneration)
}

// decodeStrict decodes a JSON request body into v, refusing unknown fields
// so a typo in a management call is an error, not a silent no-op.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Fail writes the spec's error envelope {"error":{"code":status,"message":msg},"user_id":null}.
func Fail(c *fiber.Ctx, status int, msg string) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(status).Send((&apierr.Error{Status: status, Message: msg}).Envelope(nil))
}

func caller(c *fiber.Ctx) *keys.Key {
	k, _ := c.Locals(LocalsKey).(*keys.Key)
	return k
}

// ManagementOnly is middleware for operations that need a management key:
// an ordinary key gets 403 (spec section 5). The auth middleware has run.
func ManagementOnly(c *fiber.Ctx) error {
	k := caller(c)
	if k == nil {
		return Fail(c, http.StatusUnauthorized, "Missing Authentication header")
	}
	if !k.Management {
		return Fail(c, http.StatusForbidden, "Only management keys can perform this operation")
	}
	return c.Next()
}

// keyView is a key as the API shows it. Amounts are dollars.
type keyView struct {
	Hash              string         `json:"hash"`
	Name              string         `json:"name"`
	Label             string         `json:"label"`
	Disabled          bool           `json:"disabled"`
	IsManagementKey   bool           `json:"is_management_key"`
	IsOperatorKey     bool           `json:"is_operator_key"`
	Limit             *billing.Nanos `json:"limit"`
	LimitRemaining    *billing.Nanos `json:"limit_remaining"`
	LimitReset        *string        `json:"limit_reset"`
	Usage             billing.Nanos  `json:"usage"`
	UsageDaily        billing.Nanos  `json:"usage_daily"`
	UsageWeekly       billing.Nanos  `json:"usage_weekly"`
	UsageMonthly      billing.Nanos  `json:"usage_monthly"`
	UsageInLimitReset billing.Nanos  `json:"usage_in_limit_period"`
	Reserved          billing.Nanos  `json:"reserved"`
	CreatedAt         time.Time      `json:"created_at"`
	UpdatedAt         *time.Time     `json:"updated_at"`
	ExpiresAt         *time.Time     `json:"expires_at"`
	// RateLimits bound the key alone (null: only its account's apply).
	RateLimits *rateLimitsView `json:"rate_limits"`

	// The members OpenRouter's key objects have that @openrouter/sdk
	// requires (issue 32). The gateway has no BYOK, workspaces or
	// external users: zero, false, null and "".
	ByokUsage          billing.Nanos `json:"byok_usage"`
	ByokUsageDaily     billing.Nanos `json:"byok_usage_daily"`
	ByokUsageWeekly    billing.Nanos `json:"byok_usage_weekly"`
	ByokUsageMonthly   billing.Nanos `json:"byok_usage_monthly"`
	IncludeByokInLimit bool          `json:"include_byok_in_limit"`
	CreatorUserID      *string       `json:"creator_user_id"`
	ExternalUser       *string       `json:"external_user"`
	WorkspaceID        string        `json:"workspace_id"`
}

func (h *handlers) view(k *keys.Key) keyView {
	u := h.l.KeyUsage(k)
	v := keyView{
		Hash: k.Hash, Name: k.Name, Label: k.Label, Disabled: k.Disabled, IsManagementKey: k.Management,
		IsOperatorKey:  h.ks.IsOperator(k),
		LimitRemaining: u.Remaining, Usage: u.Total, UsageDaily: u.Daily, UsageWeekly: u.Weekly,
		UsageMonthly: u.Monthly, UsageInLimitReset: u.InPeriod, Reserved: u.Held, CreatedAt: k.Created,
		RateLimits: keyRateLimits(k),
	}
	if k.Limit != nil {
		l := billing.Nanos(*k.Limit)
		v.Limit = &l
	}
	if k.LimitReset != keys.ResetNone {
		r := k.LimitReset
		v.LimitReset = &r
	}
	if !k.Updated.IsZero() {
		t := k.Updated
		v.UpdatedAt = &t
	}
	if !k.Expires.IsZero() {
		t := k.Expires
		v.ExpiresAt = &t
	}
	return v
}

// GET /key: the calling key's own limit and usage; any key.
func (h *handlers) currentKey(c *fiber.Ctx) error {
	k := caller(c)
	if k == nil {
		return Fail(c, http.StatusUnauthorized, "Missing Authentication header")
	}
	return c.JSON(fiber.Map{"data": currentKeyView{keyView: h.view(k), AllowedDataRegions: []string{},
		IsProvisioningKey: k.Management, RateLimit: legacyRateLimit(k), FreeModelDailyRequests: freeModelRequests{}}})
}

// currentKeyView is GET /key's key: the key object and the further
// members OpenRouter's GET /key defines that @openrouter/sdk requires (its
// GetCurrentKeyData; issue 32). The gateway has no free tier,
// organizations or data regions: those read as zero, false, null and []
// (no region restriction). is_provisioning_key is OpenRouter's
// name for a management key.
type currentKeyView struct {
	keyView
	AllowedDataRegions     []string          `json:"allowed_data_regions"`
	IsFreeTier             bool              `json:"is_free_tier"`
	IsProvisioningKey      bool              `json:"is_provisioning_key"`
	OrganizationID         *string           `json:"organization_id"`
	FreeModelDailyRequests freeModelRequests `json:"free_model_daily_requests"`
	RateLimit              legacyLimit       `json:"rate_limit"`
}

type freeModelRequests struct {
	Limit     int `json:"limit"`
	Remaining int `json:"remaining"`
	Used      int `json:"used"`
}

// legacyLimit is OpenRouter's deprecated rate_limit member of GET /key.
type legacyLimit struct {
	Requests int64  `json:"requests"`
	Interval string `json:"interval"`
	Note     string `json:"note"`
}

// legacyRateLimit is the key's own requests per minute as OpenRouter's
// rate_limit, -1 when the key has none of its own.
func legacyRateLimit(k *keys.Key) legacyLimit {
	l := legacyLimit{Requests: -1, Interval: "1m", Note: "deprecated (OpenRouter's field); the key's limits are in rate_limits"}
	if rl := keyRateLimits(k); rl != nil && rl.RequestsPerMinute > 0 {
		l.Requests = rl.RequestsPerMinute
	}
	return l
}

// GET /keys?offset=&limit=&include_disabled=
func (h *handlers) listKeys(c *fiber.Ctx) error {
	offset, err := queryInt(c, "offset", 0)
	if err != nil {
		return Fail(c, http.StatusBadRequest, err.Error())
	}
	limit, err := queryInt(c, "limit", 100)
	if err != nil || limit < 1 || limit > 1000 {
		return Fail(c, http.StatusBadRequest, "limit: must be an integer from 1 to 1000")
	}
	inc := false
	if s := c.Query("include_disabled"); s != "" {
		if inc, err = strconv.ParseBool(s); err != nil {
			return Fail(c, http.StatusBadRequest, "include_disabled: must be true or false")
		}
	}
	ks, err := h.ks.List(caller(c).AccountID, inc)
	if err != nil {
		return Fail(c, http.StatusInternalServerError, "internal server error")
	}
	out := make([]keyView, 0, limit)
	for i := offset; i < len(ks) && len(out) < limit; i++ {
		out = append(out, h.view(ks[i]))
	}
	return c.JSON(fiber.Map{"data": out})
}

func queryInt(c *fiber.Ctx, name string, def int) (int, error) {
	s := c.Query(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, errors.New(name + ": must be a non-negative integer")
	}
	return v, nil
}

// keyFields is the parsed body of POST and PATCH /keys. A field is set when
// present in the body; null clears limit, limit_reset and expires_at.
type keyFields struct {
	name       *string
	disabled   *bool
	management *bool
	operator   *bool
	limitSet   bool
	limit      *int64
	resetSet   bool
	reset      string
	expiresSet bool
	expires    time.Time
	rateSet    bool
	rate       ratelimit.Limits // zero: none (null)
}

// parseKeyFields reads a JSON object with only the allowed fields; the
// error message names the offending field.
func parseKeyFields(body []byte, allowed ...string) (*keyFields, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return nil, errors.New("body must be a JSON object")
	}
	f := &keyFields{}
	for name, v := range raw {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			return nil, errors.New(name + ": unknown field")
		}
		null := string(v) == "null"
		switch name {
		case "name":
			var s string
			if json.Unmarshal(v, &s) != nil || strings.TrimSpace(s) == "" || len(s) > 256 {
				return nil, errors.New("name: must be a non-empty string of at most 256 characters")
			}
			f.name = &s
		case "disabled", "management", "operator":
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return nil, errors.New(name + ": must be a boolean")
			}
			switch name {
			case "disabled":
				f.disabled = &b
			case "management":
				f.management = &b
			default:
				f.operator = &b
			}
		case "limit":
			f.limitSet = true
			if null {
				continue
			}
			n, err := parseAmount(v)
			if err != nil || n < 0 {
				return nil, errors.New("limit: must be a non-negative number of dollars or null")
			}
			l := int64(n)
			f.limit = &l
		case "limit_reset":
			f.resetSet = true
			if null {
				continue
			}
			var s string
			if json.Unmarshal(v, &s) != nil || (s != keys.ResetDaily && s != keys.ResetWeekly && s != keys.ResetMonthly) {
				return nil, errors.New("limit_reset: must be daily, weekly, monthly or null")
			}
			f.reset = s
		case "expires_at":
			f.expiresSet = true
			if null {
				continue
			}
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil, errors.New("expires_at: must be an RFC 3339 date-time string or null")
			}
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return nil, errors.New("expires_at: must be an RFC 3339 date-time string or null")
			}
			if !t.After(time.Now()) {
				return nil, errors.New("expires_at: must be in the future")
			}
			f.expires = t.UTC()
		case "rate_limits":
			l, err := parseRateLimits(v)
			if err != nil {
				return nil, err
			}
			f.rateSet, f.rate = true, l
		}
	}
	return f, nil
}

// parseAmount reads a JSON number of dollars exactly (no float64 detour).
func parseAmount(v json.RawMessage) (billing.Nanos, error) {
	s := strings.TrimSpace(string(v))
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return 0, errors.New("not a number")
	}
	return billing.ParseUSD(s)
}

// POST /keys {name, limit?, limit_reset?, expires_at?, management?, rate_limits?}
func (h *handlers) createKey(c *fiber.Ctx) error {
	f, err := parseKeyFields(c.Body(), "name", "limit", "limit_reset", "expires_at", "management", "operator", "rate_limits")
	if err != nil {
		return Fail(c, http.StatusBadRequest, err.Error())
	}
	if f.name == nil {
		return Fail(c, http.StatusBadRequest, "name: required")
	}
	o := keys.Options{Name: *f.name, Limit: f.limit, LimitReset: f.reset, Expires: f.expires}
	if f.management != nil {
		o.Management = *f.management
	}
	if f.operator != nil {
		o.Operator = *f.operator
	}
	me := caller(c)
	if !h.ks.IsOperator(me) {
		if o.Operator {
			return Fail(c, http.StatusForbidden, "operator: only the gateway's operator can create operator keys")
		}
		if msg := h.exceedsCaller(me, o.Limit); msg != "" {
			return Fail(c, http.StatusForbidden, msg)
		}
	}
	// Without rate_limits a tenant's new key gets the tenant key's own:
	// the most it may hand out.
	o.RateLimits = f.rate
	if !f.rateSet && !h.ks.IsOperator(me) {
		o.RateLimits = me.RateLimits
	}
	if msg := h.checkKeyRateLimits(me, nil, o.RateLimits); msg != "" {
		return Fail(c, http.StatusForbidden, msg)
	}
	secret, k, err := h.ks.Create(me.AccountID, o)
	if err != nil {
		if errors.Is(err, keys.ErrInvalidOptions) {
			return Fail(c, http.StatusBadRequest, err.Error())
		}
		return Fail(c, http.StatusInternalServerError, "internal server error")
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"data": h.view(k), "key": secret})
}

// lookup returns the key named by :hash if it belongs to the caller's
// account; another account's key is reported exactly like a missing one.
func (h *handlers) lookup(c *fiber.Ctx) (*keys.Key, error) {
	hash := c.Params("hash")
	k, err := h.ks.Get(hash)
	if err != nil || k.AccountID != caller(c).AccountID {
		return nil, Fail(c, http.StatusNotFound, "Key not found: no key with hash "+strconv.Quote(hash))
	}
	return k, nil
}

// GET /keys/:hash
func (h *handlers) getKey(c *fiber.Ctx) error {
	k, err := h.lookup(c)
	if k == nil {
		return err
	}
	return c.JSON(fiber.Map{"data": h.view(k)})
}

// PATCH /keys/:hash {name?, disabled?, limit?, limit_reset?, expires_at?, rate_limits?}
func (h *handlers) updateKey(c *fiber.Ctx) error {
	f, err := parseKeyFields(c.Body(), "name", "disabled", "limit", "limit_reset", "expires_at", "rate_limits")
	if err != nil {
		return Fail(c, http.StatusBadRequest, err.Error())
	}
	k, ferr := h.lookup(c)
	if k == nil {
		return ferr
	}
	if me := caller(c); !h.ks.IsOperator(me) && (f.limitSet || f.resetSet) {
		if k.Hash == me.Hash && (f.resetSet || !lowers(k.Limit, f.limit)) {
			return Fail(c, http.StatusForbidden, "limit: a key cannot raise its own limit or change its period; only the gateway's operator can")
		}
		if f.limitSet {
			if msg := h.exceedsCaller(me, f.limit); msg != "" {
				return Fail(c, http.StatusForbidden, msg)
			}
		}
	}
	if f.rateSet {
		if msg := h.checkKeyRateLimits(caller(c), k, f.rate); msg != "" {
			return Fail(c, http.StatusForbidden, msg)
		}
	}
	k, err = h.ks.Update(k.Hash, func(k *keys.Key) error {
		if f.name != nil {
			k.Name = *f.name
		}
		if f.disabled != nil {
			k.Disabled = *f.disabled
		}
		if f.limitSet {
			k.Limit = f.limit
		}
		if f.resetSet {
			k.LimitReset = f.reset
		}
		if f.expiresSet {
			k.Expires = f.expires
		}
		if f.rateSet {
			k.RateLimits = f.rate
		}
		return nil
	})
	switch {
	case errors.Is(err, keys.ErrNotFound):
		return Fail(c, http.StatusNotFound, "Key not found: no key with hash "+strconv.Quote(c.Params("hash")))
	case errors.Is(err, keys.ErrInvalidOptions):
		return Fail(c, http.StatusBadRequest, err.Error())
	case err != nil:
		return Fail(c, http.StatusInternalServerError, "internal server error")
	}
	return c.JSON(fiber.Map{"data": h.view(k)})
}

// DELETE /keys/:hash
func (h *handlers) deleteKey(c *fiber.Ctx) error {
	k, ferr := h.lookup(c)
	if k == nil {
		return ferr
	}
	if err := h.ks.Delete(k.Hash); err != nil {
		if errors.Is(err, keys.ErrNotFound) {
			return Fail(c, http.StatusNotFound, "Key not found: no key with hash "+strconv.Quote(k.Hash))
		}
		return Fail(c, http.StatusInternalServerError, "internal server error")
	}
	// deleted at the top level too: OpenRouter's answer (issue 32).
	return c.JSON(fiber.Map{"deleted": true, "data": fiber.Map{"hash": k.Hash, "deleted": true}})
}

// exceedsCaller says why a tenant's key me may not give a key the limit
// (nil: none), or "" when it may: a tenant's key with a limit cannot hand
// out more spending than it has itself, so an unlimited key or a larger
// limit would let it spend past the limit its operator set.
func (h *handlers) exceedsCaller(me *keys.Key, limit *int64) string {
	if me.Limit == nil {
		return ""
	}
	if limit == nil {
		return fmt.Sprintf("limit: your key has a limit of %s, so the keys it creates or changes need a limit of at most that (null means unlimited)", billing.Nanos(*me.Limit))
	}
	if *limit > *me.Limit {
		return fmt.Sprintf("limit: %s is more than your own key's limit of %s", billing.Nanos(*limit), billing.Nanos(*me.Limit))
	}
	return ""
}

// lowers reports whether limit to is no more spending than from (nil: no
// limit).
func lowers(from, to *int64) bool {
	switch {
	case to == nil:
		return from == nil
	case from == nil:
		return true
	default:
		return *to <= *from
	}
}

type creditsView struct {
	TotalCredits billing.Nanos `json:"total_credits"`
	TotalUsage   billing.Nanos `json:"total_usage"`
	Balance      billing.Nanos `json:"balance"`
	Reserved     billing.Nanos `json:"reserved"`
	Available    billing.Nanos `json:"available"`
}

func creditsOf(b billing.Balance) fiber.Map {
	return fiber.Map{"data": creditsView{b.Credits, b.Usage, b.Balance, b.Held, b.Available}}
}

// GET /credits: the caller's account; any key.
func (h *handlers) getCredits(c *fiber.Ctx) error {
	k := caller(c)
	if k == nil {
		return Fail(c, http.StatusUnauthorized, "Missing Authentication header")
	}
	return c.JSON(creditsOf(h.l.Balance(k.AccountID)))
}

// POST /credits {amount, note?, account_id?}: the operator adds credits to
// its own account or to account_id. Credits are money: a tenant's
// management key cannot create them.
func (h *handlers) addCredits(c *fiber.Ctx) error {
	me := caller(c)
	if !h.ks.IsOperator(me) {
		return Fail(c, http.StatusForbidden, "Only the gateway's operator can add credits; ask your operator to top up this account")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(c.Body(), &raw); err != nil || raw == nil {
		return Fail(c, http.StatusBadRequest, "body must be a JSON object")
	}
	var note string
	account := me.AccountID
	for name, v := range raw {
		switch name {
		case "account_id":
			if json.Unmarshal(v, &account) != nil || account == "" {
				return Fail(c, http.StatusBadRequest, "account_id: must be an account id string")
			}
		case "amount":
		case "note":
			if json.Unmarshal(v, &note) != nil || len(note) > 256 {
				return Fail(c, http.StatusBadRequest, "note: must be a string of at most 256 characters")
			}
		default:
			return Fail(c, http.StatusBadRequest, name+": unknown field")
		}
	}
	v, ok := raw["amount"]
	if !ok {
		return Fail(c, http.StatusBadRequest, "amount: required")
	}
	amount, err := parseAmount(v)
	if err != nil || amount <= 0 || amount > 1_000_000*billing.NanosPerUSD {
		return Fail(c, http.StatusBadRequest, "amount: must be a number of dollars greater than 0 and at most 1000000")
	}
	if _, err := h.ks.Account(account); err != nil {
		return Fail(c, http.StatusNotFound, "account_id: no account "+strconv.Quote(account))
	}
	b, err := h.l.TopUp(account, amount, note)
	if err != nil {
		return Fail(c, http.StatusInternalServerError, "internal server error")
	}
	return c.JSON(creditsOf(b))
}

// GET /generation?id=
func (h *handlers) getGeneration(c *fiber.Ctx) error {
	k := caller(c)
	if k == nil {
		return Fail(c, http.StatusUnauthorized, "Missing Authentication header")
	}
	id := c.Query("id")
	if id == "" {
		return Fail(c, http.StatusBadRequest, "id: required")
	}
	g, err := h.l.Generation(id)
	if err != nil || g.AccountID != k.AccountID {
		if err != nil && !errors.Is(err, billing.ErrNotFound) {
			return Fail(c, http.StatusInternalServerError, "internal server error")
		}
		if msg := h.prunedMessage(id); msg != "" {
			return Fail(c, http.StatusNotFound, msg)
		}
		return Fail(c, http.StatusNotFound, "Generation not found: no generation with id "+strconv.Quote(id))
	}
	return c.JSON(fiber.Map{"data": openRouterGeneration(g)})
}

// openRouterGeneration is the record g as GET /generation answers it:
// OpenRouter's generation fields (its API reference and @openrouter/sdk's
// GenerationResponseData, issue 32) and the record's own beside them. The
// one name both use differently is "usage": OpenRouter's is the cost in
// dollars, so the record's token counts are under "tokens" here (GET
// /generations keeps the record as it is). What the gateway does not
// record (app id, user agent, media counts, upstream id, …) is null.
func openRouterGeneration(g *billing.Generation) map[string]json.RawMessage {
	// Raw members: the record's amounts stay exact decimals (a float64
	// round trip wrote 5e-09).
	var out map[string]json.RawMessage
	if b, err := json.Marshal(g); err == nil {
		_ = json.Unmarshal(b, &out)
	}
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	out["tokens"] = out["usage"]
	u := g.Usage
	var finish any
	if g.FinishReason != "" {
		finish = g.FinishReason
	}
	var referer any // the client's HTTP-Referer, recorded as text
	if g.Referer != "" {
		referer = g.Referer
	}
	genTime := g.LatencyMs
	if g.TTFTMs > 0 && g.TTFTMs <= g.LatencyMs {
		genTime = g.LatencyMs - g.TTFTMs
	}
	for k, v := range map[string]any{
		"usage": g.Charged, "total_cost": g.Charged, "upstream_inference_cost": g.Cost.Total,
		"tokens_prompt": u.PromptTokens, "tokens_completion": u.CompletionTokens,
		"native_tokens_prompt": u.PromptTokens, "native_tokens_completion": u.CompletionTokens,
		"native_tokens_reasoning": u.ReasoningTokens, "native_tokens_cached": u.CachedTokens,
		"native_tokens_completion_images": nil, "finish_reason": finish, "native_finish_reason": finish,
		"latency": g.LatencyMs, "generation_time": genTime, "moderation_latency": nil,
		"created_at": g.CreatedAt.UTC().Format(time.RFC3339Nano), "streamed": g.Streamed, "cancelled": g.Status == "cancelled",
		"is_byok": false, "origin": "", "data_region": "global", "api_type": nil, "app_id": nil, "cache_discount": nil,
		"external_user": nil, "http_referer": referer, "num_fetches": nil, "num_input_audio_prompt": nil, "num_media_completion": nil,
		"num_media_prompt": nil, "num_search_results": nil, "preset_id": nil, "provider_responses": nil, "router": nil,
		"service_tier": nil, "upstream_id": nil, "user_agent": nil, "web_search_engine": nil, "workspace_id": nil,
	} {
		out[k], _ = json.Marshal(v)
	}
	if g.Provider == "" {
		out["provider_name"] = json.RawMessage("null")
	}
	return out
}
