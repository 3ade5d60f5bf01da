package flow

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/ratelimit"
)

// TestAlsoCountsEveryCall: an upstream call made for an admitted request
// spends the same key's requests per minute; it runs in the request's
// concurrent slot unless it runs beside another (slot), which takes one of
// its own. A request without limits (nil admission) admits every call.
func TestAlsoCountsEveryCall(t *testing.T) {
	lim := ratelimit.NewMemory()
	r := ratelimit.Request{ID: ratelimit.NewID(), Key: "k", Account: "a",
		KeyLimits: ratelimit.Limits{RequestsPerMinute: 3, Concurrent: 1}}
	if d := lim.Admit(time.Now(), r); !d.Allowed {
		t.Fatalf("the request: %+v", d)
	}
	parent := &Admission{lim: lim, req: r}

	inSlot, err := parent.also(10, false)
	if err != nil {
		t.Fatalf("a call in the request's slot: %v", err)
	}
	if _, err := parent.also(10, true); err == nil || err.Status != 429 || err.Metadata["limit"] != "key_concurrent_requests" {
		t.Fatalf("a second call beside it with a concurrency of 1: %v", err)
	}
	inSlot.End()
	if _, err := parent.also(10, false); err != nil {
		t.Fatalf("the third request of the minute: %v", err)
	}
	if _, err := parent.also(10, false); err == nil || err.Metadata["limit"] != "key_requests_per_minute" {
		t.Fatalf("the fourth request of a minute limited to 3: %v", err)
	}
	var none *Admission
	if a, err := none.also(10, true); a != nil || err != nil {
		t.Fatalf("no limits: %v %v", a, err)
	}
}
