package server

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/modellist"
)

// The model listing routes: host/modellist builds what they answer.

// modelEntries lists the models of kind ("" for every kind) and the
// router models of the caller's account; forUser: only endpoints the
// account's provider settings allow (GET /models/user).
func (s *Server) modelEntries(c *fiber.Ctx, kind catalog.Kind, forUser bool) []modellist.Entry {
	key := c.Locals(localsKey).(*keys.Key)
	var acct keys.ProviderSettings
	if forUser {
		acct = s.Keys.Providers(key.AccountID)
	}
	return modellist.Entries(s.Router.Catalog(), s.Modules.Routers(key.AccountID), kind, acct, forUser)
}

// queryInt reads a non-negative integer query parameter (def when absent).
func queryInt(c *fiber.Ctx, name string, def int) (int, *apierr.Error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, apierr.BadRequest(name, "%s: must be a non-negative integer", name)
	}
	return n, nil
}

// query is c's query parameter getter, for modellist.Filter.
func query(c *fiber.Ctx) func(string) string {
	return func(name string) string { return c.Query(name) }
}

// listModels serves GET /models, GET /models/user (forUser) and GET
// /embeddings/models (spec 2.8): the filtered list, a page of it from
// offset (default 0) of at most limit entries (default: all), its
// total_count and links.next, the next page's address or null.
func (s *Server) listModels(kind catalog.Kind, forUser bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		all, aerr := modellist.Filter(query(c), s.modelEntries(c, kind, forUser))
		if aerr != nil {
			return aerr
		}
		offset, aerr := queryInt(c, "offset", 0)
		if aerr != nil {
			return aerr
		}
		limit, aerr := queryInt(c, "limit", len(all))
		if aerr != nil {
			return aerr
		}
		page := all[min(offset, len(all)):]
		page = page[:min(limit, len(page))]
		var next *string
		if end := offset + len(page); end < len(all) && len(page) > 0 {
			v := url.Values{}
			c.Context().QueryArgs().VisitAll(func(k, val []byte) { v.Set(string(k), string(val)) })
			v.Set("offset", strconv.Itoa(end))
			v.Set("limit", strconv.Itoa(limit))
			n := c.Path() + "?" + v.Encode()
			next = &n
		}
		return c.JSON(fiber.Map{"object": "list", "data": page, "total_count": len(all), "links": fiber.Map{"next": next}})
	}
}

// countModels serves GET /models/count: {"data":{"count":N}}, N the
// models GET /models lists with the same filters.
func (s *Server) countModels(c *fiber.Ctx) error {
	all, aerr := modellist.Filter(query(c), s.modelEntries(c, "", false))
	if aerr != nil {
		return aerr
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"count": len(all)}})
}

// findModel is the listing of the model named by the route's :author
// and :slug, or a 404.
func (s *Server) findModel(c *fiber.Ctx) (*modellist.Entry, *catalog.Model, *apierr.Error) {
	id := c.Params("author") + "/" + c.Params("slug")
	if u, err := url.PathUnescape(id); err == nil {
		id = u
	}
	for _, e := range s.modelEntries(c, "", false) {
		if e.ID == id {
			return &e, s.Router.Catalog().Model(id), nil
		}
	}
	return nil, nil, apierr.New(http.StatusNotFound, "model %s does not exist", id)
}

// getModel serves GET /model/:author/:slug: {"data": <model>}.
func (s *Server) getModel(c *fiber.Ctx) error {
	e, _, aerr := s.findModel(c)
	if aerr != nil {
		return aerr
	}
	return c.JSON(fiber.Map{"data": e})
}

// listEndpoints serves GET /models/:author/:slug/endpoints.
func (s *Server) listEndpoints(c *fiber.Ctx) error {
	e, m, aerr := s.findModel(c)
	if aerr != nil {
		return aerr
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"id": e.ID, "name": e.Name, "created": e.Created, "description": e.Description,
		"architecture": e.Architecture, "endpoints": modellist.Endpoints(m, e.Name)}})
}

// listZDREndpoints serves GET /endpoints/zdr (OpenRouter's).
func (s *Server) listZDREndpoints(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"data": modellist.ZDREndpoints(s.Router.Catalog())})
}

// listProviders serves GET /providers.
func (s *Server) listProviders(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"data": modellist.Providers(s.Router.Catalog())})
}
