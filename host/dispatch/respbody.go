package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/switchyard/switchyard/host/apierr"
)

// DefaultMaxResponseBytes bounds a non-streaming upstream body when the
// Dispatcher sets no MaxResponseBytes.
const DefaultMaxResponseBytes = 64 << 20

// errResponseTooLarge is an upstream body over the bound.
var errResponseTooLarge = errors.New("upstream response body over the bound")

// maxResponse is the bound in force.
func (d *Dispatcher) maxResponse() int {
	if d == nil || d.MaxResponseBytes <= 0 {
		return DefaultMaxResponseBytes
	}
	return d.MaxResponseBytes
}

// readResponse reads an upstream body into one buffer that grows by
// doubling as bytes arrive (io.ReadAll grows by a quarter at these sizes and
// so copies a 30 MB body about twenty times), starting from the declared
// length when there is one, capped, so a false Content-Length costs no
// more than what arrives.
func readResponse(r io.Reader, declared int64, limit int) ([]byte, error) {
	size := 64 << 10
	if declared >= 0 {
		size = int(min(declared+1, int64(limit)+1, 4<<20)) // +1: room for the read that sees EOF
	}
	buf := make([]byte, 0, max(size, 512))
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, errResponseTooLarge
			}
			want := min(2*cap(buf), limit+1)
			if declared > int64(len(buf)) {
				want = int(min(int64(want), declared+1))
			}
			nb := make([]byte, len(buf), max(want, len(buf)+1))
			copy(nb, buf)
			buf = nb
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if len(buf) > limit {
				return nil, errResponseTooLarge
			}
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// readUpstream reads a non-streaming upstream answer within the bound; one
// over it is a 502 that names the bound (retryable: another endpoint may
// answer smaller), a broken one the attempt's transport error.
func (u *Call) readUpstream(ctx context.Context) ([]byte, *apierr.Error) {
	limit := u.d.maxResponse()
	raw, err := readResponse(u.Resp.Body, u.Resp.ContentLength, limit)
	u.HeadersReceived()
	switch {
	case errors.Is(err, errResponseTooLarge):
		return nil, &apierr.Error{Status: http.StatusBadGateway, Retryable: true, Cause: err,
			Message: fmt.Sprintf("provider %s answered with more than the gateway's limit of %d MiB (limits.max_upstream_body_bytes)",
				u.Endpoint.Provider.Slug, limit>>20)}
	case err != nil:
		return nil, u.TransportError(ctx, err)
	}
	return raw, nil
}
