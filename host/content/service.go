package content

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/admin"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
)

// Service decides which generations' content is stored and serves it.
type Service struct {
	Store Store
	// Default is the operator's choice for every account that made none
	// (config content.store).
	Default bool
	// Account is an account's own choice, nil when it made none
	// (keys.Store.StoreContent).
	Account func(account string) *bool
	Log     *slog.Logger
	max     int
}

// New is the service of the gateway's store db, configured by c, with
// the accounts' choices in ks.
func New(db store.DB, c config.Content, ks *keys.Store, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{Store: Store{DB: db}, Default: c.Store, Account: ks.StoreContent, Log: log, max: c.RecordBytes()}
}

// Enabled reports whether the account's generations are stored.
func (s *Service) Enabled(account string) bool {
	if v := s.Account(account); v != nil {
		return *v
	}
	return s.Default
}

// Collector is the collector of generation id of the account's request
// (chatBody; prompt: a legacy completion's), nil when its content is not
// stored.
func (s *Service) Collector(account, id string, chatBody []byte, prompt bool) *Collector {
	if s == nil || !s.Enabled(account) {
		return nil
	}
	return &Collector{svc: s, account: account, id: id, input: Input(chatBody, prompt)}
}

// Register mounts GET /generation/content and GET, PUT
// /accounts/:id/store_content on r, the authenticated /api/v1 group.
func (s *Service) Register(r fiber.Router, ks *keys.Store) {
	r.Get("/generation/content", s.get)
	r.Get("/accounts/:id/store_content", admin.ManagementOnly, func(c *fiber.Ctx) error {
		id, ok := admin.AccountFor(c, ks)
		if !ok {
			return admin.Fail(c, http.StatusNotFound, "Account not found: no account "+strconv.Quote(c.Params("id")))
		}
		return c.JSON(fiber.Map{"data": s.setting(id)})
	})
	r.Put("/accounts/:id/store_content", admin.ManagementOnly, func(c *fiber.Ctx) error {
		id, ok := admin.AccountFor(c, ks)
		if !ok {
			return admin.Fail(c, http.StatusNotFound, "Account not found: no account "+strconv.Quote(c.Params("id")))
		}
		var body map[string]json.RawMessage
		var on *bool // null: the operator's default again
		err := json.Unmarshal(c.Body(), &body)
		v, present := body["store_content"]
		if err == nil && present {
			err = json.Unmarshal(v, &on)
		}
		if err != nil || !present {
			return admin.Fail(c, http.StatusBadRequest, `body must be {"store_content": true}, {"store_content": false} or {"store_content": null} (the operator's default)`)
		}
		if err := ks.SetStoreContent(id, on); err != nil {
			return admin.Fail(c, http.StatusInternalServerError, "internal server error")
		}
		return c.JSON(fiber.Map{"data": s.setting(id)})
	})
}

// setting is the account's setting as the API shows it: whether its
// content is stored, and whether that is its own choice or the default.
func (s *Service) setting(account string) fiber.Map {
	source := "default"
	if s.Account(account) != nil {
		source = "account"
	}
	return fiber.Map{"account_id": account, "store_content": s.Enabled(account), "source": source}
}

// get serves GET /generation/content?id=: OpenRouter's shape, with the
// added member truncated. Any key of the account reads its records, as
// GET /generation; another account's id is not found (404, never 403: the
// answer does not tell that the id exists).
func (s *Service) get(c *fiber.Ctx) error {
	k, _ := c.Locals(admin.LocalsKey).(*keys.Key)
	if k == nil {
		return admin.Fail(c, http.StatusUnauthorized, "Missing Authentication header")
	}
	id := c.Query("id")
	if id == "" {
		return admin.Fail(c, http.StatusBadRequest, "id: the generation id is required (GET /generation/content?id=gen-…)")
	}
	rec, err := s.Store.Get(k.AccountID, id)
	if err != nil {
		s.Log.Error("content: reading a generation's content", "generation", id, "err", err)
		return admin.Fail(c, http.StatusInternalServerError, "internal server error")
	}
	if rec == nil {
		if !s.Enabled(k.AccountID) {
			return admin.Fail(c, http.StatusNotFound, "Generation content not found: this account's prompts and completions are not stored (storage is off by default). "+
				`A management key of the account turns it on with PUT /api/v1/accounts/me/store_content {"store_content": true}; generations made after that can be read here`)
		}
		return admin.Fail(c, http.StatusNotFound, "Generation content not found: no stored content for "+strconv.Quote(id)+
			" in this account (made before storage was turned on, pruned after retention.content, or not this account's generation)")
	}
	return c.JSON(fiber.Map{"data": view(rec)})
}

// view is a record in OpenRouter's GenerationContentData shape.
func view(rec *Record) fiber.Map {
	var fail any // null on success
	if rec.Error != nil {
		var status any
		if rec.Error.Status != 0 {
			status = rec.Error.Status
		}
		fail = fiber.Map{"message": rec.Error.Message, "status": status, "provider_name": nil, "raw": nil, "previous_errors": []any{}}
	}
	input := rec.Input
	if len(input) == 0 {
		input = json.RawMessage(`{"messages":[]}`)
	}
	return fiber.Map{
		"input":     input,
		"output":    fiber.Map{"completion": rec.Completion, "reasoning": rec.Reasoning},
		"error":     fail,
		"truncated": rec.Truncated,
	}
}
