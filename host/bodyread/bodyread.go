// Package bodyread reads a request body that arrives after its handler
// started (fasthttp's StreamRequestBody): fasthttp reads the headers and at
// most 8 KiB of a body before a handler runs, instead of the whole body
// into a buffer sized by the declared Content-Length. Read grows its
// buffer only as bytes arrive, so a client that declares 10 MB and sends
// 30 bytes costs 30 bytes, and the bytes held across all requests are
// bounded by a Budget: past it a request gets 503 instead of more memory.
//
// It knows nothing of HTTP frameworks: host/server calls it with the
// connection's body stream and hands the bytes to the handlers.
package bodyread

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
)

// Budget bounds the bytes that the bodies being read hold together. It
// never blocks: a read that would pass it is refused. A zero Budget (or
// one of max ≤ 0) bounds nothing.
type Budget struct {
	max  int64
	used atomic.Int64
}

// NewBudget returns a budget of max bytes (≤ 0: unbounded).
func NewBudget(max int64) *Budget { return &Budget{max: max} }

// take reserves n bytes, or reports false when that would pass the bound.
func (b *Budget) take(n int64) bool {
	if b == nil || b.max <= 0 {
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

func (b *Budget) give(n int64) {
	if b != nil && b.max > 0 {
		b.used.Add(-n)
	}
}

// Used is the bytes held now.
func (b *Budget) Used() int64 { return b.used.Load() }

// FirstChunk is the first buffer of a body; a buffer of unknown length
// doubles, one of a declared length grows fourfold and is allocated whole
// once a quarter of it arrived (each step copies: 128 KB goes through 16
// and 64 KiB, from the staging pool, into its own 128 KB + 1; it went
// through 16, 32 and 64 KiB of fresh memory).
const FirstChunk = 16 << 10

// The buffers a body outgrows on its way (16, 32, 64 KiB, …) are pooled:
// they are dead once copied into the next one, and at 128 KiB they were
// 112 KiB of fresh, zeroed memory per request (with page faults: large
// allocations come from pages the runtime may have returned). The
// buffer a body ends in is the caller's and never goes back.
var staging [stagingClasses]sync.Pool

// stagingClasses: FirstChunk << 0 … << 6 (1 MiB); larger buffers are
// rare and not kept.
const stagingClasses = 7

// stagingClass is the pool of a buffer of capacity n, or -1: only the
// exact power-of-two sizes Read grows through are pooled.
func stagingClass(n int) int {
	for k := 0; k < stagingClasses; k++ {
		if n == FirstChunk<<k {
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

// Limits are what one body may take.
type Limits struct {
	// Max is the largest body, in bytes.
	Max int
	// Timeout is what the caller gave the body to arrive (the error of a
	// read past its deadline names it).
	Timeout time.Duration
	// Budget is shared by every body in flight; nil: unbounded.
	Budget *Budget
}

// Read reads r to its end: a body whose Content-Length was declared
// (declared > 0) or not (declared ≤ 0: read until EOF). The returned
// buffer is the caller's to keep. Its errors are the client's answer:
// 413 past l.Max, 503 when the budget is spent (retry), 408 when r's
// deadline passed, 400 when the body ended early or ran past its
// declared length.
func Read(r io.Reader, declared int, l Limits) ([]byte, *apierr.Error) {
	if declared > l.Max {
		return nil, TooLarge(l.Max)
	}
	var held int64
	defer func() { l.Budget.give(held) }()
	grow := func(buf []byte, want int) ([]byte, *apierr.Error) {
		want = min(want, l.Max+1) // one byte past the limit tells "too large"
		if !l.Budget.take(int64(want - cap(buf))) {
			return buf, apierr.New(http.StatusServiceUnavailable, "request bodies in flight have reached the gateway's bound; retry shortly")
		}
		held += int64(want - cap(buf))
		nb := stagingGet(want)
		if nb == nil {
			nb = make([]byte, 0, want)
		}
		nb = append(nb, buf...)
		// buf is dead: what it held is in nb. The buffer the body ends in
		// is the caller's (it keeps it: a stream, a job, a string
		// aliasing it) and never goes back.
		stagingPut(buf)
		return nb, nil
	}
	start := FirstChunk
	if declared > 0 {
		start = min(declared+1, FirstChunk) // +1: room for the read that sees EOF
	}
	buf, aerr := grow(nil, start)
	if aerr != nil {
		return nil, aerr
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) > l.Max {
				return nil, TooLarge(l.Max)
			}
			// Held: at most 4× what arrived (len(buf), the buffer is
			// full). A length not declared doubles; a declared one grows
			// by that bound, to the whole length as soon as it allows.
			want := 2 * cap(buf)
			if declared > 0 {
				if want = 4 * len(buf); want >= declared {
					want = declared + 1
				}
				if want <= cap(buf) {
					// More bytes than declared: a reader that does not
					// stop at the length (fasthttp's does) would otherwise
					// grow nothing and loop.
					return nil, apierr.New(http.StatusBadRequest, "the request body is longer than its Content-Length of %d bytes", declared)
				}
			}
			if buf, aerr = grow(buf, want); aerr != nil {
				return nil, aerr
			}
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, apierr.Wrap(http.StatusRequestTimeout, err, "the request body did not arrive within %s", l.Timeout)
			}
			return nil, apierr.Wrap(http.StatusBadRequest, err, "the request body ended early (%d bytes read)", len(buf))
		}
	}
	if len(buf) > l.Max {
		return nil, TooLarge(l.Max)
	}
	return buf, nil
}

// TooLarge is the 413 of a body over max bytes.
func TooLarge(max int) *apierr.Error {
	return apierr.New(http.StatusRequestEntityTooLarge, "request body exceeds the gateway's limit of %s", HumanBytes(max))
}

// HumanBytes writes a byte limit as an operator configured it: 4 MiB,
// 512 KiB, or bytes.
func HumanBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
