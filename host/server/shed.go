package server

import (
	"io"
	"math"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/ratelimit"
)

// newShedder sets up global load shedding from the limits section.
func newShedder(l config.Limits) *ratelimit.Shedder {
	cfg := ratelimit.ShedConfig{MaxInFlight: max(l.MaxRequestsInFlight, 0)}
	switch {
	case l.MaxHeapBytes > 0:
		cfg.MaxHeap = uint64(l.MaxHeapBytes)
	case l.MaxHeapBytes == 0:
		// GOMEMLIMIT is the operator's statement of the memory the process
		// may use; shed before the GC has to fight for the last 10%.
		if lim := debug.SetMemoryLimit(-1); lim > 0 && lim < math.MaxInt64 {
			cfg.MaxHeap = uint64(lim) / 10 * 9
		}
	}
	return ratelimit.NewShedder(cfg)
}

// front is the first middleware of every route. It sheds load before any
// other work (503 + Retry-After, the spec's envelope) — /health excepted,
// so liveness stays visible — and, once the handlers are done, closes a
// connection whose request body was never read.
func (s *Server) front(c *fiber.Ctx) error {
	defer closeUnlessBodyRead(c)
	if c.Path() == "/health" {
		return c.Next()
	}
	ok, why, retry := s.shedder.Enter(time.Now())
	if !ok {
		err := s.writeError(c, apierr.New(fiber.StatusServiceUnavailable,
			"the gateway is overloaded (%s); retry after %s", why, retryAfterHeader(retry)+" s"), nil)
		c.Set(fiber.HeaderRetryAfter, retryAfterHeader(retry))
		return err
	}
	// A stream's handler returns before the stream ends; it keeps the slot
	// (keepShedSlot) and gives it back when the stream is over, so an open
	// stream counts for its whole length.
	slot := &shedSlot{}
	c.Locals(localsShedSlot, slot)
	defer func() {
		if !slot.kept {
			s.shedder.Exit()
		}
	}()
	return c.Next()
}

const localsShedSlot = "shed-slot"

// shedSlot is a request's place among the requests in flight.
type shedSlot struct{ kept bool }

// keepShedSlot is for a handler whose response outlives it (a stream): the
// request keeps counting as in flight until the returned slot is closed
// (once; later closes do nothing).
func (s *Server) keepShedSlot(c *fiber.Ctx) io.Closer {
	slot, _ := c.Locals(localsShedSlot).(*shedSlot)
	if slot == nil || slot.kept {
		return &keptSlot{}
	}
	slot.kept = true
	return &keptSlot{exit: s.shedder.Exit}
}

// keptSlot is a place among the requests in flight a stream holds.
type keptSlot struct {
	once sync.Once
	exit func()
}

func (k *keptSlot) Close() error {
	if k.exit != nil {
		k.once.Do(k.exit)
	}
	return nil
}
