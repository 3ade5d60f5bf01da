package activity

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/admin"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
)

// Page sizes of GET /generations.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Register mounts GET /generations and GET /activity on r, the
// authenticated /api/v1 group. Like GET /generation, any key of an account
// reads the account's records, and only its account's (docs/api.md).
//
// Both read the store after the ledger's queued writes are committed
// (Ledger.Sync): settlements are acknowledged from memory and committed
// within the commit window, and a client that lists its records right
// after a response expects to find that response's among them.
func Register(r fiber.Router, l *billing.Ledger) {
	db := l.DB()
	read := func(h func(*fiber.Ctx, store.DB) error) fiber.Handler {
		return func(c *fiber.Ctx) error {
			if err := l.Sync(); err != nil {
				// The store is unreachable (a shared store's outage) or
				// the gateway is stopping: the listing could not be read
				// either.
				c.Set(fiber.HeaderRetryAfter, "1")
				return admin.Fail(c, http.StatusServiceUnavailable, "the records cannot be read now (the store is unavailable); try again shortly")
			}
			return h(c, db)
		}
	}
	r.Get("/generations", read(listGenerations))
	r.Get("/activity", read(activity))
}

// Statuses are the generation statuses a listing filters by.
var Statuses = []string{billing.StatusSuccess, billing.StatusError, billing.StatusCancelled, billing.StatusInterrupted, billing.StatusExpired}

func listGenerations(c *fiber.Ctx, db store.DB) error {
	k, _ := c.Locals(admin.LocalsKey).(*keys.Key)
	if k == nil {
		return admin.Fail(c, http.StatusUnauthorized, "Missing Authentication header")
	}
	limit := DefaultLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return admin.Fail(c, http.StatusBadRequest, "limit: must be a whole number from 1 to "+strconv.Itoa(MaxLimit))
		}
		limit = n
	}
	f := Filter{Key: c.Query("key"), Model: c.Query("model"), Provider: c.Query("provider"), Status: c.Query("status")}
	if f.Status != "" && !contains(Statuses, f.Status) {
		return admin.Fail(c, http.StatusBadRequest, "status: must be one of "+strings.Join(Statuses, ", "))
	}
	var err error
	if f.From, err = ParseTime(c.Query("from"), false); err != nil {
		return admin.Fail(c, http.StatusBadRequest, "from: "+err.Error())
	}
	if f.To, err = ParseTime(c.Query("to"), true); err != nil {
		return admin.Fail(c, http.StatusBadRequest, "to: "+err.Error())
	}
	page, err := List(db, k.AccountID, f, c.Query("cursor"), limit)
	if errors.Is(err, ErrBadCursor) {
		return admin.Fail(c, http.StatusBadRequest, err.Error())
	}
	if err != nil {
		return admin.Fail(c, http.StatusInternalServerError, "internal server error")
	}
	return c.JSON(fiber.Map{"data": page.Data, "next_cursor": page.Next})
}

// ParseTime reads RFC 3339 or a date (YYYY-MM-DD, UTC). A date as the end
// of a range includes that day.
func ParseTime(v string, end bool) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, errors.New("must be an RFC 3339 time (2026-01-02T15:04:05Z) or a date (2026-01-02)")
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// MaxActivityDays bounds the range of GET /activity.
const MaxActivityDays = 366

func activity(c *fiber.Ctx, db store.DB) error {
	k, _ := c.Locals(admin.LocalsKey).(*keys.Key)
	if k == nil {
		return admin.Fail(c, http.StatusUnauthorized, "Missing Authentication header")
	}
	to := time.Now().UTC().Truncate(24 * time.Hour)
	if v := c.Query("to"); v != "" {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return admin.Fail(c, http.StatusBadRequest, "to: must be a date (2026-01-02)")
		}
		to = t
	}
	from := to.AddDate(0, 0, -29)
	if v := c.Query("from"); v != "" {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return admin.Fail(c, http.StatusBadRequest, "from: must be a date (2026-01-02)")
		}
		from = t
	}
	if from.After(to) {
		return admin.Fail(c, http.StatusBadRequest, "from: must not be after to")
	}
	if to.Sub(from) >= MaxActivityDays*24*time.Hour {
		return admin.Fail(c, http.StatusBadRequest, "from, to: the range must be at most "+strconv.Itoa(MaxActivityDays)+" days")
	}
	var by GroupBy
	switch c.Query("group_by") {
	case "":
	case "model":
		by = ByModel
	case "key":
		by = ByKey
	case "app":
		by = ByApp
	default:
		return admin.Fail(c, http.StatusBadRequest, "group_by: must be model, key or app (or absent: model and key)")
	}
	rows, err := Activity(db, k.AccountID, from.Format(time.DateOnly), to.Format(time.DateOnly), by)
	if err != nil {
		return admin.Fail(c, http.StatusInternalServerError, "internal server error")
	}
	out := make([]openRouterRow, len(rows))
	for i, r := range rows {
		out[i] = openRouterRow{Row: r, Usage: r.cost, ModelPermaslug: r.Model}
	}
	return c.JSON(fiber.Map{"data": out})
}

// openRouterRow is a Row with the members of OpenRouter's activity items
// that @openrouter/sdk requires (ActivityItem; issue 32): usage (the cost
// as a number), model_permaslug (the model). The totals are per day, model
// and key, not per provider or endpoint, and count no reasoning tokens
// apart: provider_name and endpoint_id are "", reasoning_tokens and
// byok_usage_inference 0.
type openRouterRow struct {
	Row
	Usage              billing.Nanos `json:"usage"`
	ModelPermaslug     string        `json:"model_permaslug"`
	ProviderName       string        `json:"provider_name"`
	EndpointID         string        `json:"endpoint_id"`
	ReasoningTokens    int64         `json:"reasoning_tokens"`
	ByokUsageInference billing.Nanos `json:"byok_usage_inference"`
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}
