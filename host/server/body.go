package server

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/bodyread"
)

// Request bodies are streamed (fiber.Config.StreamRequestBody) and read by
// host/bodyread within the body limit, the body timeout and the bytes-in-
// flight budget (limits.max_body_bytes_in_flight). readBody runs after
// authentication, so a caller without a key never costs more than the
// 8 KiB fasthttp reads with the headers.

// bodyReadKey marks in Locals a request whose body readBody has consumed:
// only then can its connection be kept alive (unread body bytes would be
// parsed as the next request). Its value is a bodyState.
const bodyReadKey = "switchyard.bodyRead"

// bodyState says where readBody left a body it consumed.
type bodyState uint8

const (
	// bodyPooled: in fasthttp's buffer, which fasthttp reuses for the
	// connection's next request once the handler returns.
	bodyPooled bodyState = iota + 1
	// bodyOwned: in a buffer readBody allocated, which nothing reuses.
	bodyOwned
)

// keptBody is the request body for a handler that keeps it past its return
// (a stream, a job): readBody's own buffer as it is, fasthttp's copied.
// The copy was 1 KB and a memmove on every chat request.
func keptBody(c *fiber.Ctx) []byte {
	b := c.Body()
	if st, _ := c.Locals(bodyReadKey).(bodyState); st == bodyOwned && len(b) > 0 {
		// The same array: fiber's Body returns a decoded copy instead for
		// a compressed body, which readBody refuses (refuseEncoded) — the
		// check keeps this right should that ever change.
		if raw := c.Request().Body(); len(raw) == len(b) && &raw[0] == &b[0] {
			return b
		}
	}
	return append([]byte(nil), b...)
}

// readBody reads the request body within the body limit, the body timeout
// and the global budget, and hands it to the handlers as c.Body().
func (s *Server) readBody(c *fiber.Ctx) error {
	limit := s.Config.MaxBodyBytes
	declared := c.Request().Header.ContentLength() // -1 chunked, -2 none
	if declared > limit {
		return bodyread.TooLarge(limit)
	}
	if declared != 0 && declared != -2 {
		if aerr := refuseEncoded(c); aerr != nil {
			return aerr
		}
	}
	stream := c.Context().RequestBodyStream()
	if declared == 0 || declared == -2 || stream == nil {
		c.Locals(bodyReadKey, bodyPooled)
		return c.Next()
	}
	timeout := time.Duration(s.Config.Limits.BodyTimeout)
	if conn := c.Context().Conn(); conn != nil {
		// The header timeout (fasthttp's ReadTimeout) covered the headers;
		// the body gets its own bound.
		_ = conn.SetReadDeadline(time.Now().Add(timeout))
	}
	buf, aerr := bodyread.Read(stream, declared, bodyread.Limits{Max: limit, Timeout: timeout, Budget: s.bodies})
	if aerr != nil {
		return aerr
	}
	c.Request().SetBodyRaw(buf)
	c.Locals(bodyReadKey, bodyOwned)
	return c.Next()
}

// refuseEncoded answers 415 to a body sent with a Content-Encoding other
// than identity. fiber's Ctx.Body would decompress it whole, with no
// bound: 300 KB of gzip became a 300 MB prompt and a 1.4 GB peak, past
// max_body_bytes and the bytes-in-flight budget, which count what arrives.
// Clients of an OpenAI-compatible API send JSON as it is.
func refuseEncoded(c *fiber.Ctx) *apierr.Error {
	enc := strings.TrimSpace(string(c.Request().Header.Peek(fiber.HeaderContentEncoding)))
	if enc == "" || strings.EqualFold(enc, "identity") {
		return nil
	}
	return apierr.New(http.StatusUnsupportedMediaType,
		"request bodies are not accepted compressed (Content-Encoding: %.40q): send the JSON uncompressed", enc)
}

// closeUnlessBodyRead makes the connection close after this response when
// the request had a body nobody read (a 401 before the body, a 413, a 404):
// the unread bytes would otherwise be parsed as the next request. The
// lingering close (netguard) lets the client read the answer first.
func closeUnlessBodyRead(c *fiber.Ctx) {
	if c.Locals(bodyReadKey) != nil {
		return
	}
	h := &c.Request().Header
	if cl := h.ContentLength(); cl != 0 && cl != -2 {
		c.Context().SetConnectionClose()
	}
}

func retryAfterHeader(d time.Duration) string {
	return strconv.Itoa(max(int((d+time.Second-1)/time.Second), 1))
}
