package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/keys"
)

// A tool fee above limits.max_tool_fee_per_call (default $1) is charged at
// the ceiling, never above it, and the anomaly is on the turn's record
// (issue 31 item 14: a fee of 1e9 drained an $8,757 balance in one
// request).
func TestToolFeeCeiling(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	publishToolTest(t, g)
	tl := `[{"type":"service:tooltest"}]`
	before := g.Ledger.Balance(g.AccountID)
	resp, body := post(t, g, "/chat/completions", toolsBody(`call:tooltest args:{"cost":"1000000000"}`, tl, ""), "X-Service-Metadata", "enabled")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	const ceiling = billing.Nanos(1_000_000_000) // $1
	wantSums(t, g, body, before, ceiling)
	used := g.Ledger.Balance(g.AccountID).Usage - before.Usage
	if used > ceiling+10_000_000 { // the fee plus two small turns
		t.Fatalf("charged %s for one tool call; the ceiling is %s", used, ceiling)
	}
	rec := generation(t, g, g.Key, body.Get("id").Str)
	if a := rec.Get("upstream_anomaly").Str; !strings.Contains(a, "limits.max_tool_fee_per_call") || !strings.Contains(a, "1000000000") {
		t.Fatalf("record's anomaly %q", a)
	}
	call := toolStage(t, body).Get("data.calls.0")
	if usd(t, call.Get("cost")) != ceiling || !strings.Contains(call.Get("reported_cost").Raw, "1000000000") {
		t.Fatalf("stage call %s", call.Raw)
	}
}

// A turn's tool calls run only once the hold covers their fees at the
// ceiling: a key whose limit leaves less than that after the turn's own
// hold gets 402 before the tool runs, with the model's turn charged and
// nothing more.
func TestToolFeeHeldBeforeCall(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	publishToolTest(t, g)
	tl := `[{"type":"service:tooltest"}]`
	// The same request without a call (same length): one turn, whose hold
	// is what turn 1 holds for the model.
	_, probe := post(t, g, "/chat/completions", toolsBody(`xxxx:tooltest args:{"cost":"0.0001"}`, tl, `,"max_tokens":50`))
	held := usd(t, generation(t, g, g.Key, probe.Get("id").Str).Get("held"))
	key := newLimitedKey(t, g, (held + 500_000_000).USD()) // $0.50 short of the $1 ceiling
	before := g.Ledger.Balance(g.AccountID)
	resp, body := post(t, g, "/chat/completions", toolsBody(`call:tooltest args:{"cost":"0.0001"}`, tl, `,"max_tokens":50`), "Authorization", "Bearer "+key)
	wantError(t, resp, body, http.StatusPaymentRequired, "limits.max_tool_fee_per_call")
	wantError(t, resp, body, http.StatusPaymentRequired, "Key limit exceeded")
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	used := g.Ledger.Balance(g.AccountID).Usage - before.Usage
	var recs []*billing.Generation // the limited key's: turn 1's alone
	if err := g.Ledger.Generations(g.AccountID, func(r *billing.Generation) bool {
		if r.KeyHash != keys.HashOf(key) {
			return true
		}
		recs = append(recs, r)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || used == 0 || used > held || recs[0].Charged != used || recs[0].FeesCost != 0 || len(recs[0].Fees) != 0 {
		t.Fatalf("charged %s (turn 1's hold %s); records %+v", used, held, recs)
	}
	if !strings.Contains(body.Get("error.message").Str, used.USD()) {
		t.Fatalf("message %q does not say what was charged (%s)", body.Get("error.message").Str, used.USD())
	}
}
