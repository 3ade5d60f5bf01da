// Package console serves the web console at /console: a static front end
// (console/ in the repository, built by Vite into static/app and embedded
// here) that talks to the management API with the management key the
// operator types in. The console adds no authentication of its own: the
// page and its assets are public and hold nothing; every piece of data
// comes from /api/v1 with the key as a bearer token.
package console

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// static holds NOT_BUILT.html (committed) and app/ (the Vite build, made
// by `make console`, not committed): a fresh clone compiles before the
// front end is built, and serves a page saying how to build it.
//
//go:embed all:static
var static embed.FS

// Prefix is where the console is served.
const Prefix = "/console"

// securityHeaders keep the page's key out of reach of other origins: only
// the gateway's own scripts, styles and API may load (no inline script, so
// an injected tag cannot run), no framing (clickjacking), no referrer (the
// URL never holds the key anyway), no MIME sniffing.
var securityHeaders = [][2]string{
	{"Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"},
	{"X-Content-Type-Options", "nosniff"},
	{"X-Frame-Options", "DENY"},
	{"Referrer-Policy", "no-referrer"},
	{"Cross-Origin-Opener-Policy", "same-origin"},
}

// Built reports whether the front end was built into this binary.
func Built() bool {
	_, err := fs.Stat(static, "static/app/index.html")
	return err == nil
}

// Mount serves the console on r: GET /console (and /console/) is the page,
// /console/assets/… its hashed assets. Anything else under /console is a
// 404.
func Mount(r fiber.Router) {
	app, _ := fs.Sub(static, "static/app")
	serve := func(c *fiber.Ctx) error {
		for _, h := range securityHeaders {
			c.Set(h[0], h[1])
		}
		name := strings.TrimPrefix(c.Path(), Prefix)
		name = strings.TrimPrefix(name, "/")
		if name == "" || name == "index.html" {
			if !Built() {
				b, _ := static.ReadFile("static/NOT_BUILT.html")
				c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
				c.Set(fiber.HeaderCacheControl, "no-store")
				return c.Status(http.StatusServiceUnavailable).Send(b)
			}
			name = "index.html"
			// The page names the hashed assets of this build.
			c.Set(fiber.HeaderCacheControl, "no-cache")
		} else {
			// Vite names assets by content hash: they never change.
			c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
		}
		b, err := fs.ReadFile(app, path.Clean(name))
		if err != nil {
			c.Set(fiber.HeaderCacheControl, "no-store")
			return c.Status(http.StatusNotFound).SendString("not found")
		}
		ct := mime.TypeByExtension(path.Ext(name))
		if ct == "" {
			ct = "application/octet-stream"
		}
		c.Set(fiber.HeaderContentType, ct)
		return c.Send(b)
	}
	r.Get(Prefix, serve)
	r.Get(Prefix+"/*", serve)
}
