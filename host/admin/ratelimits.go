package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/ratelimit"
)

// rateLimitsView is a set of rate limits as the API shows and reads it;
// 0 is unlimited.
type rateLimitsView struct {
	RequestsPerMinute int64 `json:"requests_per_minute"`
	TokensPerMinute   int64 `json:"tokens_per_minute"`
	Concurrent        int64 `json:"concurrent"`
}

func viewOf(l ratelimit.Limits) rateLimitsView {
	return rateLimitsView{l.RequestsPerMinute, l.TokensPerMinute, l.Concurrent}
}

// keyRateLimits is a key's rate limits for its view: null when it has none.
func keyRateLimits(k *keys.Key) *rateLimitsView {
	if k.RateLimits == (ratelimit.Limits{}) {
		return nil
	}
	v := viewOf(k.RateLimits)
	return &v
}

// parseRateLimits reads {requests_per_minute?, tokens_per_minute?,
// concurrent?} (absent fields are 0, unlimited) or null (no limits).
func parseRateLimits(v json.RawMessage) (ratelimit.Limits, error) {
	const shape = "rate_limits: must be null or an object with non-negative integers requests_per_minute, tokens_per_minute and concurrent (0 = unlimited)"
	if string(bytes.TrimSpace(v)) == "null" {
		return ratelimit.Limits{}, nil
	}
	var rv rateLimitsView
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rv); err != nil {
		return ratelimit.Limits{}, errors.New(shape)
	}
	if rv.RequestsPerMinute < 0 || rv.TokensPerMinute < 0 || rv.Concurrent < 0 {
		return ratelimit.Limits{}, errors.New(shape)
	}
	return ratelimit.Limits{RequestsPerMinute: rv.RequestsPerMinute, TokensPerMinute: rv.TokensPerMinute, Concurrent: rv.Concurrent}, nil
}

// looserRateLimit says why l is looser than bound in some dimension (a
// limit of bound's that l lacks or exceeds), or "" when it is within.
// what names bound for the message.
func looserRateLimit(l, bound ratelimit.Limits, what string) string {
	dims := []struct {
		name     string
		got, max int64
	}{
		{"requests_per_minute", l.RequestsPerMinute, bound.RequestsPerMinute},
		{"tokens_per_minute", l.TokensPerMinute, bound.TokensPerMinute},
		{"concurrent", l.Concurrent, bound.Concurrent},
	}
	for _, d := range dims {
		switch {
		case d.max == 0:
		case d.got == 0:
			return fmt.Sprintf("rate_limits.%s: %s has a limit of %d, so this key needs one of at most that (0 means unlimited)", d.name, what, d.max)
		case d.got > d.max:
			return fmt.Sprintf("rate_limits.%s: %d is more than %s limit of %d", d.name, d.got, what, d.max)
		}
	}
	return ""
}

// checkKeyRateLimits says why the tenant key me may not give target (nil:
// a new key) the rate limits l, or "" when it may: a tenant cannot hand
// out more than its own key's limits, and cannot raise its own. The
// operator may do both.
func (h *handlers) checkKeyRateLimits(me, target *keys.Key, l ratelimit.Limits) string {
	if h.ks.IsOperator(me) {
		return ""
	}
	if target != nil && target.Hash == me.Hash {
		if msg := looserRateLimit(l, me.RateLimits, "your key's own"); msg != "" {
			return msg + "; a key cannot raise its own rate limits, only the gateway's operator can"
		}
		return ""
	}
	return looserRateLimit(l, me.RateLimits, "your own key's")
}

// accountRateLimitsView is GET/PUT /accounts/:id/rate_limits.
type accountRateLimitsView struct {
	AccountID string `json:"account_id"`
	// RateLimits are the account's own (null: the defaults apply).
	RateLimits *rateLimitsView `json:"rate_limits"`
	Defaults   rateLimitsView  `json:"defaults"`
	// Effective is what the account's keys share: its own, with each unset
	// field taken from the defaults.
	Effective rateLimitsView `json:"effective"`
}

func (h *handlers) accountRateLimits(id string) accountRateLimitsView {
	own := h.ks.RateLimits(id)
	op := id == h.ks.OperatorAccount()
	v := accountRateLimitsView{AccountID: id, Defaults: viewOf(h.defaults.Account(ratelimit.Limits{}, op)), Effective: viewOf(h.defaults.Account(own, op))}
	if own != (ratelimit.Limits{}) {
		o := viewOf(own)
		v.RateLimits = &o
	}
	return v
}

// registerRateLimits mounts the account rate-limit routes. Reading needs a
// management key of the account (or the operator's); changing them is the
// operator's: they bound what the account's tenant can do.
func (h *handlers) registerRateLimits(r fiber.Router) {
	r.Get("/accounts/:id/rate_limits", ManagementOnly, func(c *fiber.Ctx) error {
		id, ok := h.accountFor(c)
		if !ok {
			return Fail(c, http.StatusNotFound, "Account not found: no account "+strconv.Quote(c.Params("id")))
		}
		return c.JSON(fiber.Map{"data": h.accountRateLimits(id)})
	})
	r.Put("/accounts/:id/rate_limits", ManagementOnly, func(c *fiber.Ctx) error {
		if !h.ks.IsOperator(caller(c)) {
			return Fail(c, http.StatusForbidden, "Only the gateway's operator can set an account's rate limits")
		}
		id, ok := h.accountFor(c)
		if !ok {
			return Fail(c, http.StatusNotFound, "Account not found: no account "+strconv.Quote(c.Params("id")))
		}
		l, err := parseRateLimits(c.Body())
		if err != nil {
			return Fail(c, http.StatusBadRequest, err.Error())
		}
		var set *ratelimit.Limits
		if l != (ratelimit.Limits{}) {
			set = &l
		}
		if err := h.ks.SetRateLimits(id, set); err != nil {
			if errors.Is(err, keys.ErrNoAccount) {
				return Fail(c, http.StatusNotFound, "Account not found: no account "+strconv.Quote(id))
			}
			return Fail(c, http.StatusInternalServerError, "internal server error")
		}
		return c.JSON(fiber.Map{"data": h.accountRateLimits(id)})
	})
}

// accountFor resolves :id ("me" is the caller's account) to an account the
// caller may see: its own, or any for the operator. Another account is
// reported like a missing one.
func (h *handlers) accountFor(c *fiber.Ctx) (string, bool) { return AccountFor(c, h.ks) }

// AccountFor is the account a per-account route's :id names ("me": the
// caller's), when the caller may act on it: its own, or any for the
// operator. false: no such account, or not the caller's to see (both a
// 404, so an id of another tenant is not confirmed).
func AccountFor(c *fiber.Ctx, ks *keys.Store) (string, bool) {
	me := caller(c)
	id := c.Params("id")
	if id == "me" {
		id = me.AccountID
	}
	if id != me.AccountID && !ks.IsOperator(me) {
		return "", false
	}
	if _, err := ks.Account(id); err != nil {
		return "", false
	}
	return id, true
}
