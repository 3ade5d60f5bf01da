// Package server is the gateway's HTTP front: fiber routes, authentication,
// and the request flow request → auth → validate → route → adapter →
// upstream → adapter → response. It owns all network I/O; modules only
// transform bytes.
package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/activity"
	"github.com/switchyard/switchyard/host/admin"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/bodyread"
	"github.com/switchyard/switchyard/host/cachedefaults"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/content"
	"github.com/switchyard/switchyard/host/dispatch"
	"github.com/switchyard/switchyard/host/flow"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/switchyard/switchyard/host/ratelimit"
	"github.com/switchyard/switchyard/host/route"
	"github.com/switchyard/switchyard/host/telemetry"
	"github.com/switchyard/switchyard/host/upstream"
)

// Deps are what the server runs on; main wires them.
type Deps struct {
	Config *config.Config
	// Catalog is the catalog at start; handlers read Router.Catalog(),
	// which a configuration reload replaces (Router.Swap).
	Catalog *catalog.Catalog
	Keys    *keys.Store
	Modules *modules.Registry
	Router  *route.Router
	Ledger  *billing.Ledger
	// Pipeline runs request plugins; nil means one over Modules.
	Pipeline *pipeline.Runner
	Log      *slog.Logger
	// Client reaches upstreams; nil means a tuned default.
	Client *http.Client
	// Limiter enforces per-key and per-account rate limits (ratelimit.go);
	// nil means one in-memory limiter for this server.
	Limiter ratelimit.Limiter
	// RateDefaults are every account's and every key's configured default
	// rate limits; nil means Config.RateLimits and Config.KeyRateLimits. A configuration reload replaces them.
	RateDefaults *ratelimit.Defaults
	// Mount adds routes served beside the API by other packages (the
	// configuration reload endpoint, the web console): root is the app,
	// api the authenticated /api/v1 group. Nil adds none.
	Mount func(root, api fiber.Router)
	// Telemetry reports every API request (metrics, traces, request log);
	// nil: none.
	Telemetry *telemetry.Telemetry
}

// Server is one gateway instance.
type Server struct {
	Deps
	// Dispatcher runs requests through routing and billing.
	Dispatcher *dispatch.Dispatcher
	// Core runs chat requests (host/flow); the handlers are its glue.
	Core *flow.Core
	app  *fiber.App
	// shedder refuses work when the process is overloaded (front).
	shedder *ratelimit.Shedder
	// bodies bounds request body bytes held across connections (readBody).
	bodies *bodyread.Budget
	// content stores generations' content for the accounts that opted in
	// (host/content).
	content *content.Service
}

// localsKey is where the auth middleware leaves the caller's *keys.Key,
// the name the admin handlers read it from.
const localsKey = admin.LocalsKey

// New builds the fiber app and its routes.
func New(d Deps) *Server {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	var direct http.RoundTripper
	if d.Client == nil {
		// Plain-HTTP upstreams on the calling goroutine; TLS (HTTP/2 when
		// offered) and proxied ones through net/http (host/upstream).
		dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		d.Client = &http.Client{CheckRedirect: noRedirects, Transport: &upstream.Transport{
			Proxy:          http.ProxyFromEnvironment,
			Dialer:         dialer,
			MaxIdlePerHost: 256,
			IdleTimeout:    90 * time.Second,
			Fallback: &http.Transport{
				Proxy:                 http.ProxyFromEnvironment,
				DialContext:           dialer.DialContext,
				ForceAttemptHTTP2:     true,
				MaxIdleConns:          1024,
				MaxIdleConnsPerHost:   256,
				IdleConnTimeout:       90 * time.Second,
				TLSHandshakeTimeout:   10 * time.Second,
				ExpectContinueTimeout: time.Second,
			},
		}}
		// It adds nothing and follows no redirect: calls skip Client.Do.
		direct = d.Client.Transport
	}
	if d.Pipeline == nil {
		d.Pipeline = &pipeline.Runner{Modules: d.Modules}
	}
	if d.Limiter == nil {
		d.Limiter = ratelimit.NewMemory()
	}
	if d.RateDefaults == nil {
		d.RateDefaults = ratelimit.NewDefaults(d.Config.RateLimits, d.Config.KeyRateLimits)
	}
	s := &Server{Deps: d, Dispatcher: &dispatch.Dispatcher{
		Router: d.Router, Ledger: d.Ledger, Modules: d.Modules, Client: d.Client, Direct: direct,
		AttemptTimeout: time.Duration(d.Config.Timeouts.Attempt), RequestTimeout: time.Duration(d.Config.Timeouts.Request),
		MaxResponseBytes: d.Config.Limits.MaxUpstreamBodyBytes,
		Log:              d.Log,
	}}
	s.Core = flow.New(flow.Core{Config: d.Config, Keys: d.Keys, Modules: d.Modules, Router: d.Router, Ledger: d.Ledger,
		Pipeline: d.Pipeline, Dispatcher: s.Dispatcher, Limiter: d.Limiter, RateDefaults: d.RateDefaults, Log: d.Log})
	s.content = content.New(d.Ledger.DB(), d.Config.Content, d.Keys, d.Log)
	lim := d.Config.Limits
	s.shedder = newShedder(lim)
	s.bodies = bodyread.NewBudget(lim.MaxBodyBytesInFlight)
	s.app = fiber.New(fiber.Config{
		AppName:               "switchyard",
		BodyLimit:             d.Config.MaxBodyBytes,
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
		// Bodies are read by readBody, after authentication and as bytes
		// arrive (body.go), not by fasthttp into a buffer sized by the
		// declared Content-Length before any handler runs.
		StreamRequestBody: true,
		// fasthttp's ReadTimeout bounds a request's headers (and the first
		// 8 KiB of its body): a connection that sends nothing is closed
		// after it. readBody gives the rest of the body its own deadline.
		ReadTimeout: time.Duration(lim.HeaderTimeout),
		IdleTimeout: time.Duration(lim.IdleTimeout),
		// Streams can run for minutes; writes are bounded by the request
		// deadline instead.
		WriteTimeout: 0,
	})
	s.app.Use(d.Telemetry.Middleware) // first: it sees load shedding too
	s.app.Use(s.front)
	s.app.Get("/health", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	api := s.app.Group("/api/v1", s.authenticate, s.readBody)
	api.Post("/chat/completions", s.openRouterNames(s.chat))
	api.Post("/completions", s.openRouterNames(s.textCompletions)) // legacy text completions (completions.go)
	api.Post("/responses", s.openRouterNames(s.responsesAPI))
	api.Get("/responses/:id", s.getResponse)
	api.Delete("/responses/:id", s.deleteResponse)
	api.Get("/responses/:id/input_items", s.inputItems)
	api.Post("/embeddings", s.openRouterNames(s.embeddings))
	api.Post("/messages", s.messages) // Anthropic's Messages (messages.go)
	api.Post("/messages/count_tokens", s.countTokens)
	api.Get("/embeddings/models", s.listModels(catalog.KindEmbedding, false))
	api.Get("/models", s.listModels("", false))
	api.Get("/models/count", s.countModels)
	api.Get("/models/user", s.listModels("", true))
	api.Get("/models/:author/:slug/endpoints", s.listEndpoints)
	api.Get("/model/:author/:slug", s.getModel)
	api.Get("/providers", s.listProviders)
	api.Get("/endpoints/zdr", s.listZDREndpoints)
	activity.Register(api, d.Ledger)                // GET /generations, GET /activity
	s.content.Register(api, d.Keys)                 // GET /generation/content, /accounts/:id/store_content
	cachedefaults.Register(api, d.Keys, d.Pipeline) // /accounts/:id/response_cache, /keys/:hash/response_cache
	admin.Register(api, admin.Deps{Keys: d.Keys, Ledger: d.Ledger, Modules: d.Modules, DefaultRateLimits: d.RateDefaults})
	if d.Mount != nil {
		d.Mount(s.app, api)
	}
	return s
}

// Serve serves on an existing listener until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.app.Listener(ln) }

// Shutdown stops accepting connections and waits for requests in flight,
// streams included, up to ctx's deadline.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.app.ShutdownWithContext(ctx)
}

// authenticate resolves the bearer key (spec section 5). The Messages
// front door also takes it as x-api-key, as Anthropic's clients send it
// (Claude Code sends either).
func (s *Server) authenticate(c *fiber.Ctx) error {
	h := c.Get(fiber.HeaderAuthorization)
	if strings.TrimSpace(h) == "" && isMessagesRoute(c) {
		if k := strings.TrimSpace(c.Get("X-Api-Key")); k != "" {
			h = "Bearer " + k
		}
	}
	if strings.TrimSpace(h) == "" {
		return apierr.New(http.StatusUnauthorized, "Missing Authentication header")
	}
	scheme, secret, _ := strings.Cut(strings.TrimSpace(h), " ")
	if strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(secret) == "" {
		return apierr.New(http.StatusUnauthorized, "Missing Authentication header: the Bearer token is empty")
	}
	if !strings.EqualFold(scheme, "Bearer") {
		return apierr.New(http.StatusUnauthorized, "Authorization header must be of the form 'Bearer <API key>'")
	}
	k, err := s.Keys.Authenticate(strings.TrimSpace(secret))
	if err != nil {
		return err
	}
	c.Locals(localsKey, k)
	return c.Next()
}

// errorHandler renders every error as the spec's envelope (section 7).
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	var e *apierr.Error
	if fe, ok := err.(*fiber.Error); ok {
		e = &apierr.Error{Status: fe.Code, Message: fe.Message}
		switch fe.Code {
		case http.StatusRequestEntityTooLarge:
			e = bodyread.TooLarge(s.Config.MaxBodyBytes)
		case http.StatusNotFound:
			e.Message = "no route for " + c.Method() + " " + c.Path()
		case http.StatusMethodNotAllowed:
			e.Message = "method " + c.Method() + " is not allowed on " + c.Path()
		}
	} else {
		e = apierr.From(err)
	}
	return s.writeError(c, e, nil)
}
