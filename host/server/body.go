package server

import (
	"errors"
	"github.com/switchyard/switchyard/host/flow"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
)

// Request bodies are streamed (fiber.Config.StreamRequestBody): fasthttp
// reads the headers and at most 8 KiB of a body before a handler runs,
// instead of the whole body into a buffer sized by the declared
// Content-Length. readBody runs after authentication, so a caller without a
// key never costs more than those 8 KiB, and it grows its buffer only as
// bytes arrive, so a client that declares 10 MB and sends 30 bytes costs
// 30 bytes. The bytes held across all requests are bounded by a budget
// (limits.max_body_bytes_in_flight); past it a request gets 503 with
// Retry-After instead of more memory.

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

// byteBudget is a non-blocking counting semaphore of bytes.
type byteBudget struct {
	max  int64
	used atomic.Int64
}

// take reserves n bytes, or reports false when that would pass the bound.
func (b *byteBudget) take(n int64) bool {
	if b.max <= 0 {
		return true
	}
	for {
		u := b.used.Load()
		if u+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *byteBudget) give(n int64) {
	if b.max > 0 {
		b.used.Add(-n)
	}
}

// firstBodyChunk is the first buffer of a body; a buffer of unknown length
// doubles, one of a declared length grows fourfold and is allocated whole
// once a quarter of it arrived (each step copies: 128 KB goes through 16
// and 64 KiB, from the staging pool, into its own 128 KB + 1; it went
// through 16, 32 and 64 KiB of fresh memory).
const firstBodyChunk = 16 << 10

// The buffers a body outgrows on its way (16, 32, 64 KiB, …) are pooled:
// they are dead once copied into the next one, and at 128 KiB they were
// 112 KiB of fresh, zeroed memory per request (with page faults: large
// allocations come from pages the runtime may have returned). The
// buffer a body ends in is the handlers' and never goes back.
var staging [stagingClasses]sync.Pool

// stagingClasses: firstBodyChunk << 0 … << 6 (1 MiB); larger buffers are
// rare and not kept.
const stagingClasses = 7

// stagingClass is the pool of a buffer of capacity n, or -1: only the
// exact power-of-two sizes readBody grows through are pooled.
func stagingClass(n int) int {
	for k := 0; k < stagingClasses; k++ {
		if n == firstBodyChunk<<k {
			return k
		}
	}
	return -1
}

func stagingGet(n int) []byte {
	if k := stagingClass(n); k >= 0 {
		if p, _ := staging[k].Get().(*[]byte); p != nil {
			return (*p)[:0]
		}
	}
	return nil
}

func stagingPut(b []byte) {
	if k := stagingClass(cap(b)); k >= 0 {
		b = b[:0]
		staging[k].Put(&b)
	}
}

// readBody reads the request body within the body limit, the body timeout
// and the global budget, and hands it to the handlers as c.Body().
func (s *Server) readBody(c *fiber.Ctx) error {
	limit := s.Config.MaxBodyBytes
	declared := c.Request().Header.ContentLength() // -1 chunked, -2 none
	if declared > limit {
		return s.bodyTooLarge()
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
	if conn := c.Context().Conn(); conn != nil {
		// The header timeout (fasthttp's ReadTimeout) covered the headers;
		// the body gets its own bound.
		_ = conn.SetReadDeadline(time.Now().Add(time.Duration(s.Config.Limits.BodyTimeout)))
	}
	var held int64
	defer func() { s.bodies.give(held) }()
	grow := func(buf []byte, want int) ([]byte, *apierr.Error) {
		want = min(want, limit+1) // one byte past the limit tells "too large"
		if !s.bodies.take(int64(want - cap(buf))) {
			return buf, s.overloaded("request bodies in flight have reached the gateway's bound; retry shortly")
		}
		held += int64(want - cap(buf))
		nb := stagingGet(want)
		if nb == nil {
			nb = make([]byte, 0, want)
		}
		nb = append(nb, buf...)
		// buf is dead: what it held is in nb. The buffer the body ends in
		// is the handlers' (they keep it: a stream, a job, a string
		// aliasing it) and never goes back.
		stagingPut(buf)
		return nb, nil
	}
	start := firstBodyChunk
	if declared > 0 {
		start = min(declared+1, firstBodyChunk) // +1: room for the read that sees EOF
	}
	buf, aerr := grow(nil, start)
	if aerr != nil {
		return aerr
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return s.bodyTooLarge()
			}
			// Held: at most 4× what arrived (len(buf), the buffer is
			// full). A length not declared doubles; a declared one grows
			// by that bound, to the whole length as soon as it allows.
			want := 2 * cap(buf)
			if declared > 0 {
				if want = 4 * len(buf); want >= declared {
					want = declared + 1
				}
			}
			if buf, aerr = grow(buf, want); aerr != nil {
				return aerr
			}
		}
		n, err := stream.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return apierr.Wrap(http.StatusRequestTimeout, err, "the request body did not arrive within %s", time.Duration(s.Config.Limits.BodyTimeout))
			}
			return apierr.Wrap(http.StatusBadRequest, err, "the request body ended early (%d bytes read)", len(buf))
		}
	}
	if len(buf) > limit {
		return s.bodyTooLarge()
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

func (s *Server) bodyTooLarge() *apierr.Error {
	return apierr.New(http.StatusRequestEntityTooLarge, "request body exceeds the gateway's limit of %s", flow.HumanBytes(s.Config.MaxBodyBytes))
}

// overloaded is a 503 the client should retry after Retry-After seconds
// (front writes the header).
func (s *Server) overloaded(msg string) *apierr.Error {
	return apierr.New(http.StatusServiceUnavailable, "%s", msg)
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
