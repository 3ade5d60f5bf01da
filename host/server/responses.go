package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/responses"
	"github.com/switchyard/switchyard/host/responses/stored"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// isResponsesRoute reports a request to the Responses front door
// (POST /responses, GET and DELETE /responses/{id}, its input items):
// its errors are OpenAI's shape (host/responses.Envelope).
func isResponsesRoute(c *fiber.Ctx) bool {
	p := strings.TrimSuffix(strings.TrimPrefix(c.Path(), "/api/v1"), "/")
	return p == "/responses" || strings.HasPrefix(p, "/responses/")
}

// responsesAPI serves POST /responses, OpenAI's Responses API: the body is
// translated to the chat request it stands for (host/responses), which is
// parsed, admitted and run exactly as a /chat/completions body, and the
// answer is translated back. Routing, fallbacks, plugins, limits, credits
// and generation records are chat's. A response is kept for its account
// unless store is false (host/responses/stored), and previous_response_id
// continues a kept one.
func (s *Server) responsesAPI(c *fiber.Ctx) error {
	endSpan := telemetry.From(c.UserContext()).Phase("validate")
	key := c.Locals(localsKey).(*keys.Key)
	body := c.Body()
	prev := gjson.GetBytes(body, "previous_response_id")
	var history []json.RawMessage
	if prev.Type == gjson.String && prev.Str != "" {
		items, found, err := s.stored().History(key.AccountID, prev.Str)
		var aerr *apierr.Error
		switch {
		case errors.Is(err, stored.ErrChainTooLong):
			aerr = apierr.BadRequest("previous_response_id", "%v (%d responses)", err, stored.MaxChain)
		case err != nil:
			aerr = apierr.Wrap(http.StatusServiceUnavailable, err, "stored responses cannot be read now; try again shortly")
		case !found:
			aerr = apierr.New(http.StatusNotFound, "previous_response_id: response %.64q not found", prev.Str)
		}
		if aerr != nil {
			endSpan(aerr)
			return s.refused(c, aerr)
		}
		history = items
	}
	rr, aerr := responses.ToChat(body, history)
	if aerr != nil {
		endSpan(aerr)
		return s.refused(c, aerr)
	}
	// rr.Chat is a new buffer: it outlives the handler with a stream.
	vr, unsupported, aerr := s.Core.ParseChat(rr.Chat, accountOf(c), c.Get("X-Session-Id"))
	endSpan(aerr)
	if aerr != nil {
		return s.refused(c, aerr)
	}
	tr := responsesTranslator{echo: rr.Echo}
	if rr.Store {
		account, previous, input := key.AccountID, prev.Str, rr.Input
		tr.save = func(resp []byte) { s.keepResponse(account, previous, input, resp) }
	}
	return s.run(c, vr, unsupported, tr)
}

// responsesTranslator answers in the Responses API's shapes; save keeps
// the response answered (nil: store false).
type responsesTranslator struct {
	echo responses.Echo
	save func(response []byte)
}

func (t responsesTranslator) JSON(chat []byte) ([]byte, *apierr.Error) {
	resp := responses.FromChat(chat, t.echo)
	if t.save != nil {
		t.save(resp)
	}
	return resp, nil
}

func (t responsesTranslator) Stream() streamTranslator {
	st := responses.NewStream(t.echo)
	st.Done = t.save
	return st
}

func (s *Server) stored() stored.Store { return stored.Store{DB: s.Ledger.DB()} }

// keepResponse stores a response answered, with its request's input items
// (ids given to those without). A failure is logged: the answer is on its
// way already.
func (s *Server) keepResponse(account, previous string, input []json.RawMessage, resp []byte) {
	id := gjson.GetBytes(resp, "id").Str
	base := strings.TrimPrefix(id, "resp_")
	items := make([]json.RawMessage, len(input))
	for i, it := range input {
		if gjson.GetBytes(it, "id").Str == "" {
			prefix := "item_"
			if t := gjson.GetBytes(it, "type").Str; t == "message" || t == "" {
				prefix = "msg_"
			}
			it, _ = sjson.SetBytes(append([]byte(nil), it...), "id", prefix+base+"_in"+strconv.Itoa(i))
		}
		items[i] = it
	}
	if err := s.stored().Put(account, id, &stored.Record{Previous: previous, Input: items, Response: resp}); err != nil {
		s.Log.Warn("response not stored", "response", id, "err", err)
	}
}

// storedResponse is the caller's account's response :id, or a 404.
func (s *Server) storedResponse(c *fiber.Ctx) (*stored.Record, error) {
	key := c.Locals(localsKey).(*keys.Key)
	rec, err := s.stored().Get(key.AccountID, c.Params("id"))
	switch {
	case err != nil:
		return nil, apierr.Wrap(http.StatusServiceUnavailable, err, "stored responses cannot be read now; try again shortly")
	case rec == nil:
		return nil, apierr.New(http.StatusNotFound, "response %.64q not found", c.Params("id"))
	}
	return rec, nil
}

// getResponse serves GET /responses/:id.
func (s *Server) getResponse(c *fiber.Ctx) error {
	rec, err := s.storedResponse(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(rec.Response)
}

// deleteResponse serves DELETE /responses/:id.
func (s *Server) deleteResponse(c *fiber.Ctx) error {
	key := c.Locals(localsKey).(*keys.Key)
	found, err := s.stored().Delete(key.AccountID, c.Params("id"))
	switch {
	case err != nil:
		return apierr.Wrap(http.StatusServiceUnavailable, err, "stored responses cannot be changed now; try again shortly")
	case !found:
		return apierr.New(http.StatusNotFound, "response %.64q not found", c.Params("id"))
	}
	return c.JSON(fiber.Map{"id": c.Params("id"), "object": "response", "deleted": true})
}

// inputItems serves GET /responses/:id/input_items: the input items of
// that response's request, as OpenAI's cursor list (order desc by
// default, limit 1–100 (20), after an item id).
func (s *Server) inputItems(c *fiber.Ctx) error {
	rec, err := s.storedResponse(c)
	if err != nil {
		return err
	}
	items := append([]json.RawMessage(nil), rec.Input...)
	switch c.Query("order", "desc") {
	case "desc":
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	case "asc":
	default:
		return apierr.BadRequest("order", "must be asc or desc")
	}
	limit := 20
	if q := c.Query("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > 100 {
			return apierr.BadRequest("limit", "must be an integer from 1 to 100")
		}
		limit = n
	}
	if after := c.Query("after"); after != "" {
		for i, it := range items {
			if gjson.GetBytes(it, "id").Str == after {
				items = items[i+1:]
				break
			}
		}
	}
	more := len(items) > limit
	if more {
		items = items[:limit]
	}
	list := fiber.Map{"object": "list", "data": items, "has_more": more, "first_id": nil, "last_id": nil}
	if len(items) > 0 {
		list["first_id"] = gjson.GetBytes(items[0], "id").Str
		list["last_id"] = gjson.GetBytes(items[len(items)-1], "id").Str
	}
	return c.JSON(list)
}
