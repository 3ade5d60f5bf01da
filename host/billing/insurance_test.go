package billing

import "testing"

// TestZeroCompletionInsurance: an answer with no completion tokens whose
// finish reason is empty or "error" is not charged for its inference (the
// final attempt's nor the failed attempts'); tool fees are; the record says
// what was insured, the balance moves by exactly the charge, and the
// audit's sum (charged + uncollected + insured = cost + failed + fees)
// holds.
func TestZeroCompletionInsurance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		usage   Usage
		finish  string
		status  string
		failed  bool  // a failed attempt billed before
		fee     Nanos // a server tool ran
		insured bool
	}{
		{"no completion, no finish reason", Usage{PromptTokens: 100}, "", "", false, 0, true},
		{"no completion, finish error", Usage{PromptTokens: 100}, "error", StatusError, false, 0, true},
		{"broken stream, failed attempt before", Usage{PromptTokens: 100}, "", StatusError, true, 0, true},
		{"tool fees are still charged", Usage{PromptTokens: 100}, "", "", false, 2_000_000, true},
		{"cancelled by the client: charged its prompt", Usage{PromptTokens: 100}, "", StatusCancelled, false, 0, false},
		{"no completion but finished: stop", Usage{PromptTokens: 100}, "stop", "", false, 0, false},
		{"no completion, length", Usage{PromptTokens: 100}, "length", "", false, 0, false},
		{"completion tokens, no finish reason", Usage{PromptTokens: 100, CompletionTokens: 3}, "", StatusError, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, k := newEnv(t, NanosPerUSD, nil, "", Options{})
			req := testReq("gen-insured")
			req.Insurable = true
			r, aerr := e.l.Reserve(k, req)
			if aerr != nil {
				t.Fatal(aerr)
			}
			if tc.failed {
				r.AddFailedAttempt(Usage{PromptTokens: 100})
			}
			if tc.fee != 0 {
				r.AddFees(Fee{Tool: "service:web_search", Calls: 1, Cost: tc.fee})
			}
			g, err := r.Settle(Outcome{Status: tc.status, Usage: tc.usage, FinishReason: tc.finish})
			if err != nil {
				t.Fatal(err)
			}
			inference := g.Cost.Total + g.FailedCost
			if inference == 0 || (tc.failed && g.FailedCost == 0) {
				t.Fatalf("the case costs nothing to insure: cost %s failed %s", g.Cost.Total, g.FailedCost)
			}
			want, insured := inference+tc.fee, Nanos(0)
			if tc.insured {
				want, insured = tc.fee, inference
			}
			if g.Charged != want || g.Insured != insured || g.Uncollected != 0 {
				t.Fatalf("charged %s insured %s uncollected %s; want charged %s insured %s", g.Charged, g.Insured, g.Uncollected, want, insured)
			}
			if b := e.l.Balance(e.acct); b.Usage != want || b.Held != 0 || b.Balance != NanosPerUSD-want {
				t.Fatalf("balance %+v, want usage %s", b, want)
			}
			// The durable record says so too.
			stored, err := waitGeneration(e.l, "gen-insured")
			if err != nil || stored.Insured != insured || stored.Charged != want {
				t.Fatalf("stored %+v %v", stored, err)
			}
			mustAudit(t, e.l)
		})
	}
}

// TestInsuranceNotOnExpiry: a hold the janitor expires charges its last
// checkpoint (the recovery invariant), uninsured.
func TestInsuranceNotOnExpiry(t *testing.T) {
	e, k := newEnv(t, NanosPerUSD, nil, "", Options{RequestDeadline: 50 * 1e6, JanitorInterval: 5 * 1e6})
	req := testReq("gen-lost")
	req.Insurable = true
	r, aerr := e.l.Reserve(k, req)
	if aerr != nil {
		t.Fatal(aerr)
	}
	r.Checkpoint(Usage{PromptTokens: 1000})
	g, err := waitGeneration(e.l, "gen-lost")
	if err != nil || g.Status != StatusExpired || g.Charged == 0 || g.Insured != 0 {
		t.Fatalf("%+v %v", g, err)
	}
	mustAudit(t, e.l)
}

// TestInsuranceOnlyForCompletions: a reservation that is not a completion
// (an embedding) is charged though it has no completion tokens.
func TestInsuranceOnlyForCompletions(t *testing.T) {
	e, k := newEnv(t, NanosPerUSD, nil, "", Options{})
	r, aerr := e.l.Reserve(k, testReq("gen-embed"))
	if aerr != nil {
		t.Fatal(aerr)
	}
	g, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 100}})
	if err != nil || g.Charged == 0 || g.Insured != 0 {
		t.Fatalf("%+v %v", g, err)
	}
	mustAudit(t, e.l)
}
