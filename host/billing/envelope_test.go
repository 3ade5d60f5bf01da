package billing

import (
	"net/http"
	"testing"

	"github.com/switchyard/switchyard/host/keys"
)

// An envelope holds a group's worst case before any of its requests runs;
// their reservations draw from it, so the account is not asked twice.
func TestEnvelope(t *testing.T) {
	cases := []struct {
		name    string
		credits Nanos
		limit   *int64
		hold    Nanos
		status  int    // of Hold; 0 = held
		reason  string // error.metadata.reason
	}{
		{"covered", 10 * testHold, nil, 3 * testHold, 0, ""},
		{"account short", 2 * testHold, nil, 3 * testHold, http.StatusPaymentRequired, "insufficient_credits"},
		{"key limit short", 10 * testHold, ptr(2 * testHold), 3 * testHold, http.StatusPaymentRequired, "key_limit_exceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, k := newEnv(t, c.credits, c.limit, keys.ResetNone, Options{})
			env, err := e.l.Hold(k, c.hold)
			if c.status != 0 {
				if err == nil || err.Status != c.status || err.Metadata["reason"] != c.reason {
					t.Fatalf("Hold: %v", err)
				}
				if b := e.l.Balance(k.AccountID); b.Held != 0 {
					t.Fatalf("a refused hold left %s held", b.Held)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b := e.l.Balance(k.AccountID); b.Held != c.hold {
				t.Fatalf("held %s, want %s", b.Held, c.hold)
			}
			// A reservation of the group moves its hold out of the envelope:
			// the account's total held does not change.
			req := testReq("g1")
			req.Envelope = env
			r, err := e.l.Reserve(k, req)
			if err != nil {
				t.Fatal(err)
			}
			if b := e.l.Balance(k.AccountID); b.Held != c.hold || env.Left() != c.hold-testHold {
				t.Fatalf("after one draw: held %s, envelope %s", b.Held, env.Left())
			}
			if _, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 10, CompletionTokens: 10, Requests: 1}}); err != nil {
				t.Fatal(err)
			}
			env.Release()
			env.Release() // idempotent
			if b := e.l.Balance(k.AccountID); b.Held != 0 || env.Left() != 0 {
				t.Fatalf("after release: held %s, envelope %s", b.Held, env.Left())
			}
			mustAudit(t, e.l)
		})
	}
}

// With an envelope the account only has to cover what it does not: a group
// that holds everything the account has can still run its requests.
func TestEnvelopeCoversItsRequests(t *testing.T) {
	e, k := newEnv(t, 2*testHold, nil, keys.ResetNone, Options{})
	env, err := e.l.Hold(k, 2*testHold)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.Reserve(k, testReq("outside")); err == nil || err.Status != http.StatusPaymentRequired {
		t.Fatalf("a request outside the group: %v", err)
	}
	for _, id := range []string{"in1", "in2"} {
		req := testReq(id)
		req.Envelope = env
		r, err := e.l.Reserve(k, req)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		defer r.Settle(Outcome{Status: StatusCancelled})
	}
	// Empty now: a third request of the group must fit the account alone.
	req := testReq("in3")
	req.Envelope = env
	if _, err := e.l.Reserve(k, req); err == nil || err.Status != http.StatusPaymentRequired {
		t.Fatalf("past the envelope: %v", err)
	}
	if env.Left() != 0 {
		t.Fatalf("a refused reservation kept its draw: %s left", env.Left())
	}
	env.Release()
}
