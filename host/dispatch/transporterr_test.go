package dispatch

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
)

// passedDeadline is a context whose deadline has passed while its timer
// has not fired yet: what the transport's read sees when the connection's
// deadline (set from the context's) runs out a moment before the
// context's own timer marks it done.
type passedDeadline struct{ context.Context }

func (passedDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// A connection timeout at the context's deadline is the deadline's error,
// with its cause (a plugin's limit, naming the module), not "could not
// reach provider": TestPluginDeadlineInSubRequestNamed failed on it once
// in CI when the read's timeout won that race.
func TestTransportTimeoutAtTheDeadlineIsTheDeadlines(t *testing.T) {
	cause := &apierr.Error{Status: http.StatusBadGateway, Message: "module testplugin failed in pre_request: exceeded its time limit of 1000 ms"}
	for _, tc := range []struct {
		name       string
		ctx        func() (context.Context, context.CancelFunc)
		wantStatus int
		want       string
	}{
		{"a module call's deadline, its timer a moment late", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithDeadlineCause(context.Background(), time.Now().Add(20*time.Millisecond), cause)
			return passedDeadline{ctx}, cancel
		}, http.StatusBadGateway, "exceeded its time limit of 1000 ms"},
		{"the request's deadline, its timer a moment late", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(20*time.Millisecond))
			return passedDeadline{ctx}, cancel
		}, http.StatusRequestTimeout, "the gateway's time limit of 30s"},
		{"no deadline reached: the provider timed out", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Hour)
		}, http.StatusBadGateway, "could not reach provider alpha: timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			u := &Call{Endpoint: &catalog.Endpoint{Provider: &catalog.Provider{Slug: "alpha"}}, d: &Dispatcher{RequestTimeout: 30 * time.Second}}
			e := u.TransportError(ctx, os.ErrDeadlineExceeded)
			if e.Status != tc.wantStatus || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("%d %q, want %d and %q", e.Status, e.Message, tc.wantStatus, tc.want)
			}
		})
	}
}
