package billing

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
)

// price: $1/Mtok prompt, $2/Mtok completion, $0.001 per request.
var testPrice = catalog.Price{Prompt: 1, Completion: 2, Request: 0.001}

// testReq holds 1000×1 + 500×2 µ$ + 1000 µ$ = $0.003 worst case.
func testReq(id string) Request {
	return Request{ID: id, Model: "acme/m", Provider: "p1", Price: testPrice, PromptTokens: 1000, MaxOutputTokens: 500}
}

const testHold Nanos = 3_000_000

type env struct {
	path string
	db   store.DB
	ks   *keys.Store
	l    *Ledger
	acct string
}

func openEnv(t testing.TB, path string, opts Options) *env {
	t.Helper()
	db, err := store.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := keys.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{path: path, db: db, ks: ks, l: l}
	t.Cleanup(e.close)
	return e
}

func (e *env) close() {
	if e.l != nil {
		_ = e.l.Close()
		e.l = nil
	}
	if e.db != nil {
		_ = e.db.Close()
		e.db = nil
	}
}

// newEnv makes an account funded with credits and one key with an optional
// limit.
func newEnv(t testing.TB, credits Nanos, limit *int64, reset string, opts Options) (*env, *keys.Key) {
	t.Helper()
	e := openEnv(t, filepath.Join(t.TempDir(), "sy.db"), opts)
	a, err := e.ks.CreateAccount("acme")
	if err != nil {
		t.Fatal(err)
	}
	e.acct = a.ID
	_, k, err := e.ks.Create(a.ID, keys.Options{Name: "k", Limit: limit, LimitReset: reset})
	if err != nil {
		t.Fatal(err)
	}
	if credits > 0 {
		if _, err := e.l.TopUp(a.ID, credits, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return e, k
}

func ptr(n Nanos) *int64 { v := int64(n); return &v }

func mustAudit(t testing.TB, l *Ledger) {
	t.Helper()
	p, err := l.Audit()
	if err != nil {
		t.Fatal(err)
	}
	if len(p) > 0 {
		t.Fatalf("audit:\n%s", strings.Join(p, "\n"))
	}
}

// 200 concurrent requests against a limit (key or account) that covers 50.
func TestConcurrentReserveSettle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		credits Nanos
		limit   *int64
		reason  string
	}{
		{"key limit", 1000 * NanosPerUSD, ptr(50 * testHold), "Key limit exceeded"},
		{"account balance", 50 * testHold, nil, "Insufficient credits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, k := newEnv(t, tc.credits, tc.limit, keys.ResetNone, Options{})
			var ok, refused atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					r, aerr := e.l.Reserve(k, testReq(fmt.Sprintf("gen-%d", i)))
					if aerr != nil {
						if aerr.Status != http.StatusPaymentRequired || !strings.Contains(aerr.Message, tc.reason) {
							t.Errorf("refusal %d %q", aerr.Status, aerr.Message)
						}
						refused.Add(1)
						return
					}
					// The actual usage equals the worst case, so each success
					// consumes exactly 1/50 of the limit whatever the timing.
					if _, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 1000, CompletionTokens: 500, Requests: 1}}); err != nil {
						t.Error(err)
					}
					ok.Add(1)
				}()
			}
			close(start)
			wg.Wait()
			if ok.Load() != 50 || refused.Load() != 150 {
				t.Fatalf("succeeded %d, refused %d; want 50 and 150", ok.Load(), refused.Load())
			}
			var sum Nanos
			n := 0
			if err := e.l.Generations(e.acct, func(g *Generation) bool { sum += g.Charged; n++; return true }); err != nil {
				t.Fatal(err)
			}
			u := e.l.KeyUsage(k)
			if n != 50 || u.Total != sum || sum != 50*testHold || u.Held != 0 {
				t.Fatalf("records %d, key usage %s, sum of records %s, held %s", n, u.Total, sum, u.Held)
			}
			b := e.l.Balance(e.acct)
			if b.Usage != sum || b.Balance != tc.credits-sum || b.Held != 0 {
				t.Fatalf("balance %+v", b)
			}
			mustAudit(t, e.l)
		})
	}
}

func TestRefusalMessages(t *testing.T) {
	for _, tc := range []struct {
		name    string
		credits Nanos
		limit   *int64
		reset   string
		want    string
	}{
		{"account", 1_000_000, nil, "", "Insufficient credits: this request needs up to $0.003 but the account has $0.001 available (short by $0.002)"},
		{"key", NanosPerUSD, ptr(2_500_000), keys.ResetDaily, `Key limit exceeded: this request needs up to $0.003 but key "k" has $0.0025 left of its $0.0025 daily limit (short by $0.0005)`},
		{"empty account", 0, nil, "", "short by $0.003"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, k := newEnv(t, tc.credits, tc.limit, tc.reset, Options{})
			_, aerr := e.l.Reserve(k, testReq(""))
			if aerr == nil || aerr.Status != 402 || !strings.Contains(aerr.Message, tc.want) {
				t.Fatalf("got %v, want 402 containing %q", aerr, tc.want)
			}
		})
	}
}

// An abandoned stream is settled with the usage generated so far, once.
func TestAbandonedStreamSettlesOnce(t *testing.T) {
	e, k := newEnv(t, NanosPerUSD, nil, "", Options{})
	r, aerr := e.l.Reserve(k, Request{ID: "gen-stream", Model: "acme/m", Price: testPrice, PromptTokens: 1000, MaxOutputTokens: 500, Streamed: true})
	if aerr != nil {
		t.Fatal(aerr)
	}
	r.FirstToken()
	r.Checkpoint(Usage{PromptTokens: 1000, CompletionTokens: 50})
	partial := Usage{PromptTokens: 1000, CompletionTokens: 120, Requests: 1}
	want := RatesOf(testPrice).Compute(partial).Total // 1000 + 240 + 1000 µ$
	var wg sync.WaitGroup
	gens := make([]*Generation, 4)
	for i := range gens { // the stream reader and the cancellation path race
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := r.Settle(Outcome{Status: StatusCancelled, Usage: partial})
			if err != nil {
				t.Error(err)
			}
			gens[i] = g
		}()
	}
	wg.Wait()
	for _, g := range gens[1:] {
		if g != gens[0] {
			t.Fatal("settlements returned different records")
		}
	}
	if g := gens[0]; g.Charged != want || g.Status != StatusCancelled || !g.Streamed || g.Charged != 2_240_000 {
		t.Fatalf("generation %+v", g)
	}
	if _, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 1000, CompletionTokens: 500}}); err != nil {
		t.Fatal(err)
	}
	if b := e.l.Balance(e.acct); b.Usage != want || b.Held != 0 {
		t.Fatalf("charged twice or hold left: %+v", b)
	}
	// Durable and still once after a restart.
	e.close()
	e2 := openEnv(t, e.path, Options{})
	if b := e2.l.Balance(e.acct); b.Usage != want || b.Balance != NanosPerUSD-want {
		t.Fatalf("after restart %+v", b)
	}
	g, err := e2.l.Generation("gen-stream")
	if err != nil || g.Charged != want {
		t.Fatalf("record after restart %+v %v", g, err)
	}
	mustAudit(t, e2.l)
}

// A cost above the hold is never charged: the hold is what the caller
// authorised. The excess is recorded as uncollected with an anomaly, and
// balances and key limits never go past zero.
func TestOverrunIsNeverCharged(t *testing.T) {
	for _, tc := range []struct {
		name        string
		credits     Nanos
		limit       *int64
		usage       Usage
		charged     Nanos
		uncollected Nanos
	}{
		{"within the hold", NanosPerUSD, nil, Usage{PromptTokens: 1000, CompletionTokens: 400}, 1_800_000, 0},
		{"balance would cover it", NanosPerUSD, nil, Usage{PromptTokens: 3000, CompletionTokens: 500}, testHold, 1_000_000},
		{"balance is the hold", testHold, nil, Usage{PromptTokens: 3000, CompletionTokens: 500}, testHold, 1_000_000},
		{"key limit is the hold", NanosPerUSD, ptr(testHold), Usage{PromptTokens: 3000, CompletionTokens: 500}, testHold, 1_000_000},
		// An upstream that reports a million tokens for max_tokens 500.
		{"lying upstream", NanosPerUSD, nil, Usage{PromptTokens: 1000, CompletionTokens: 1_000_000}, testHold, 2_001_000_000 - testHold},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, k := newEnv(t, tc.credits, tc.limit, "", Options{})
			r, aerr := e.l.Reserve(k, testReq("gen-x"))
			if aerr != nil {
				t.Fatal(aerr)
			}
			g, err := r.Settle(Outcome{Usage: tc.usage})
			if err != nil {
				t.Fatal(err)
			}
			if g.Charged != tc.charged || g.Uncollected != tc.uncollected {
				t.Fatalf("charged %s uncollected %s, want %s and %s", g.Charged, g.Uncollected, tc.charged, tc.uncollected)
			}
			if (g.Uncollected > 0) != (g.Anomaly != "") {
				t.Fatalf("anomaly %q with uncollected %s", g.Anomaly, g.Uncollected)
			}
			if b := e.l.Balance(e.acct); b.Balance < 0 || b.Balance != tc.credits-tc.charged {
				t.Fatalf("balance %+v", b)
			}
			mustAudit(t, e.l)
			anomalies, err := e.l.Anomalies()
			if err != nil || len(anomalies) != map[bool]int{true: 1, false: 0}[tc.uncollected > 0] {
				t.Fatalf("anomalies %q %v", anomalies, err)
			}
		})
	}
}

// The hold covers every choice: n=50 holds fifty times the output bound,
// and a fallback re-bounds the output for its own endpoint.
func TestHoldCoversChoicesAndFallbackBounds(t *testing.T) {
	e, k := newEnv(t, NanosPerUSD, nil, "", Options{})
	req := testReq("gen-n")
	req.Choices = 50
	r, aerr := e.l.Reserve(k, req)
	if aerr != nil {
		t.Fatal(aerr)
	}
	// 1000 prompt × $1/M + 50 × 500 × $2/M + $0.001.
	if want := Nanos(1_000_000 + 50_000_000 + 1_000_000); r.Hold() != want {
		t.Fatalf("hold %s want %s", r.Hold(), want)
	}
	// The fallback endpoint allows 2000 output tokens a choice but has a
	// context of 1500: each choice's bound is 1500.
	if aerr := r.Retarget(Target{Provider: "p2", Price: testPrice, MaxOutputTokens: 2000, ContextLength: 1500}); aerr != nil {
		t.Fatal(aerr)
	}
	if want := Nanos(1_000_000 + 50*1500*2_000 + 1_000_000); r.Hold() != want {
		t.Fatalf("hold after retarget %s want %s", r.Hold(), want)
	}
	// All fifty choices ran to their bound: charged in full.
	g, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 1000, CompletionTokens: 50 * 1500, Requests: 1}})
	if err != nil || g.Charged != 152_000_000 || g.Uncollected != 0 {
		t.Fatalf("%+v %v", g, err)
	}
	mustAudit(t, e.l)
}

// Fallbacks: a billed failed attempt is added; the hold follows the price.
func TestRetargetAndFailedAttempts(t *testing.T) {
	e, k := newEnv(t, 10_000_000, nil, "", Options{})
	r, aerr := e.l.Reserve(k, testReq("gen-fb"))
	if aerr != nil {
		t.Fatal(aerr)
	}
	r.AddFailedAttempt(Usage{PromptTokens: 1000, Requests: 1}) // billed: 1000 + 1000 µ$
	r.AddFailedAttempt(Usage{})                                // not billed
	dear := catalog.Price{Prompt: 10, Completion: 20}          // worst 10000 + 10000 µ$ + 2000 already = $0.022
	if aerr := r.Retarget(Target{Provider: "p2", Price: dear, MaxOutputTokens: 500}); aerr == nil || aerr.Status != 402 {
		t.Fatalf("retarget beyond balance: %v", aerr)
	}
	if r.Hold() != testHold {
		t.Fatalf("hold changed by a refused retarget: %s", r.Hold())
	}
	if aerr := r.Retarget(Target{Provider: "p3", Price: catalog.Price{Prompt: 2, Completion: 4}, MaxOutputTokens: 500}); aerr != nil {
		t.Fatal(aerr)
	}
	if want := Nanos(2_000_000 + 2_000_000 + 2_000_000); r.Hold() != want {
		t.Fatalf("hold %s want %s", r.Hold(), want)
	}
	g, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 100, CompletionTokens: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if g.Attempts != 3 || g.FailedCost != 2_000_000 || g.Cost.Total != 240_000 || g.Charged != 2_240_000 || g.Provider != "p3" {
		t.Fatalf("generation %+v", g)
	}
	mustAudit(t, e.l)
}

// Limit usage rolls over at UTC day, ISO week and month boundaries.
func TestLimitResetPeriods(t *testing.T) {
	for _, tc := range []struct {
		reset      string
		start, end string // end is the first instant of the next period
	}{
		{keys.ResetDaily, "2025-03-10T23:59:59Z", "2025-03-11T00:00:00Z"},
		{keys.ResetWeekly, "2025-03-16T23:59:59Z", "2025-03-17T00:00:00Z"}, // Sunday → Monday
		{keys.ResetMonthly, "2025-02-28T23:59:59Z", "2025-03-01T00:00:00Z"},
		{keys.ResetNone, "2025-02-28T23:59:59Z", "2030-01-01T00:00:00Z"},
	} {
		t.Run(tc.reset, func(t *testing.T) {
			var now atomic.Pointer[time.Time]
			set := func(s string) {
				v, _ := time.Parse(time.RFC3339, s)
				now.Store(&v)
			}
			set(tc.start)
			e, k := newEnv(t, NanosPerUSD, ptr(testHold), tc.reset, Options{Now: func() time.Time { return *now.Load() }})
			use := func(id string) error {
				r, aerr := e.l.Reserve(k, testReq(id))
				if aerr != nil {
					return aerr
				}
				_, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 1000, CompletionTokens: 500, Requests: 1}})
				return err
			}
			if err := use("a"); err != nil {
				t.Fatal(err)
			}
			if err := use("b"); err == nil {
				t.Fatal("limit not enforced within the period")
			}
			set(tc.end)
			err := use("c")
			if tc.reset == keys.ResetNone {
				if err == nil {
					t.Fatal("a lifetime limit reset")
				}
				return
			}
			if err != nil {
				t.Fatalf("limit did not reset at %s: %v", tc.end, err)
			}
			u := e.l.KeyUsage(k)
			if u.Total != 2*testHold || u.InPeriod != testHold || *u.Remaining != 0 {
				t.Fatalf("usage %+v", u)
			}
		})
	}
}

func TestPeriodStart(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	for _, tc := range []struct{ kind, t, want string }{
		{keys.ResetDaily, "2025-01-01T13:14:15+05:00", "2025-01-01T00:00:00Z"},
		{keys.ResetDaily, "2025-01-01T01:00:00+05:00", "2024-12-31T00:00:00Z"}, // UTC, not local
		{keys.ResetWeekly, "2025-01-01T10:00:00Z", "2024-12-30T00:00:00Z"},     // Wednesday → Monday
		{keys.ResetWeekly, "2024-12-30T00:00:00Z", "2024-12-30T00:00:00Z"},
		{keys.ResetMonthly, "2024-02-29T23:00:00Z", "2024-02-01T00:00:00Z"},
	} {
		if got := time.Unix(periodStart(tc.kind, at(tc.t)), 0).UTC(); !got.Equal(at(tc.want)) {
			t.Errorf("%s %s: %s, want %s", tc.kind, tc.t, got, tc.want)
		}
	}
}

// Period counters do not depend on the order charges are applied in.
func TestPeriodOrderIndependent(t *testing.T) {
	t1, _ := time.Parse(time.RFC3339, "2025-03-10T23:59:59Z")
	t2 := t1.Add(2 * time.Second)
	var a, b keyUsage
	a.add(5, t1)
	a.add(7, t2)
	b.add(7, t2)
	b.add(5, t1)
	if a != b || a.Day.Usage != 7 || a.Total != 12 {
		t.Fatalf("%+v != %+v", a, b)
	}
}

// waitGeneration polls until the record of id is durable (5 s at most).
func waitGeneration(l *Ledger, id string) (*Generation, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		g, err := l.Generation(id)
		if err == nil || time.Now().After(deadline) {
			return g, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A hold that nobody settles is settled by the janitor.
func TestJanitorSettlesForgottenHolds(t *testing.T) {
	e, k := newEnv(t, NanosPerUSD, nil, "", Options{RequestDeadline: 100 * time.Millisecond, JanitorInterval: 5 * time.Millisecond})
	r, aerr := e.l.Reserve(k, testReq("gen-lost"))
	if aerr != nil {
		t.Fatal(aerr)
	}
	r.Checkpoint(Usage{PromptTokens: 1000})
	g, err := waitGeneration(e.l, "gen-lost")
	if err != nil || g.Status != StatusExpired || g.Charged != 1_000_000 {
		t.Fatalf("%+v %v", g, err)
	}
	if b := e.l.Balance(e.acct); b.Held != 0 || b.Usage != 1_000_000 {
		t.Fatalf("%+v", b)
	}
	// The late handler's Settle is a no-op.
	if g2, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 1000, CompletionTokens: 500}}); err != nil || g2.Status != StatusExpired {
		t.Fatalf("%+v %v", g2, err)
	}
	mustAudit(t, e.l)
}

// A hold found at start belongs to a process that died: it is settled at
// once at its last checkpoint and its money is available again, long
// before the request deadline.
func TestRecoverySettlesDeadProcessHoldsAtOnce(t *testing.T) {
	e, k := newEnv(t, NanosPerUSD, nil, "", Options{})
	r, aerr := e.l.Reserve(k, testReq("gen-young"))
	if aerr != nil {
		t.Fatal(aerr)
	}
	r.Checkpoint(Usage{PromptTokens: 1000, CompletionTokens: 100})
	if err := e.l.Sync(); err != nil {
		t.Fatal(err)
	}
	// Simulate the crash: the process stops without settling or closing.
	e.l.closed.Store(true)
	e.l.w.close()
	close(e.l.stop)
	e.l.wg.Wait()
	e.l = nil
	path, acct := e.path, e.acct
	e.close()

	// A deadline of an hour: recovery must not wait for it.
	e2 := openEnv(t, path, Options{RequestDeadline: time.Hour})
	g, err := e2.l.Generation("gen-young")
	if err != nil || g.Status != StatusInterrupted || g.Charged != 1_200_000 {
		t.Fatalf("dead hold not settled at start: %+v %v", g, err)
	}
	if b := e2.l.Balance(acct); b.Held != 0 || b.Available != NanosPerUSD-1_200_000 {
		t.Fatalf("dead hold still blocks spending: %+v", b)
	}
	if e2.l.OpenHolds() != 0 {
		t.Fatalf("%d holds open after recovery", e2.l.OpenHolds())
	}
	mustAudit(t, e2.l)
}

func TestDuplicateIDAndClosedLedger(t *testing.T) {
	e, k := newEnv(t, NanosPerUSD, nil, "", Options{})
	if _, aerr := e.l.Reserve(k, testReq("gen-dup")); aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := e.l.Reserve(k, testReq("gen-dup")); aerr == nil || aerr.Status != http.StatusConflict {
		t.Fatalf("duplicate id: %v", aerr)
	}
	_ = e.l.Close()
	if _, aerr := e.l.Reserve(k, testReq("gen-late")); aerr == nil || aerr.Status != http.StatusServiceUnavailable {
		t.Fatalf("closed ledger: %v", aerr)
	}
	if _, err := e.l.TopUp(e.acct, 1, ""); !errors.Is(err, ErrClosed) {
		t.Fatalf("top-up on closed ledger: %v", err)
	}
}

// BenchmarkReserveSettle runs whole requests' ledger work, 16 in flight per
// CPU so settlements share group commits. ns/op is wall time per request
// (throughput); reserve-ns/op is the time spent in Reserve, the only part on
// the path before the upstream call.
func BenchmarkReserveSettle(b *testing.B) {
	e, k := newEnv(b, 1_000_000*NanosPerUSD, nil, "", Options{})
	var n, reserveNs atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := testReq(fmt.Sprintf("gen-%d", n.Add(1)))
			t0 := time.Now()
			r, aerr := e.l.Reserve(k, req)
			reserveNs.Add(int64(time.Since(t0)))
			if aerr != nil {
				b.Fatal(aerr)
			}
			if _, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 900, CompletionTokens: 300, Requests: 1}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(reserveNs.Load())/float64(b.N), "reserve-ns/op")
}

// Server-tool fees are charged with the generation and itemised on it; a
// fee beyond the available credit is recorded as uncollected, never
// overdrawn.
func TestFees(t *testing.T) {
	for _, tc := range []struct {
		name              string
		credits, fee      Nanos
		charged, uncolled Nanos
	}{
		{"fits", NanosPerUSD, 7_000_000, 120_000 + 7_000_000, 0},
		// The hold (3_000_000) is all there is: the fee gets what is left.
		{"beyond credit", testHold, 7_000_000, testHold, 120_000 + 7_000_000 - testHold},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, k := newEnv(t, tc.credits, nil, "", Options{})
			r, aerr := e.l.Reserve(k, testReq("gen-fee"))
			if aerr != nil {
				t.Fatal(aerr)
			}
			r.AddFees(Fee{Tool: "service:web_search", Calls: 2, Cost: tc.fee - 1_000_000}, Fee{Tool: "service:datetime", Calls: 1, Cost: 1_000_000})
			g, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 100, CompletionTokens: 10}})
			if err != nil {
				t.Fatal(err)
			}
			if g.Charged != tc.charged || g.Uncollected != tc.uncolled || g.FeesCost != tc.fee || len(g.Fees) != 2 || g.Fees[0].Calls != 2 {
				t.Fatalf("charged %s uncollected %s fees %s %+v", g.Charged, g.Uncollected, g.FeesCost, g.Fees)
			}
			if b := e.l.Balance(e.acct); b.Usage != tc.charged || b.Held != 0 || b.Balance < 0 {
				t.Fatalf("balance %+v", b)
			}
			mustAudit(t, e.l)
		})
	}
}

// HoldFees holds tool fees before the tools run: refused (402, nothing more
// held) when the credit cannot cover it; once held, the fees come out of it
// and are charged in full, and what was not used is released at Settle.
func TestHoldFees(t *testing.T) {
	e, k := newEnv(t, testHold+5_000_000, nil, "", Options{})
	r, aerr := e.l.Reserve(k, testReq("gen-holdfees"))
	if aerr != nil {
		t.Fatal(aerr)
	}
	if aerr := r.HoldFees(6_000_000); aerr == nil || aerr.Status != 402 {
		t.Fatalf("a fee hold past the credit: %v", aerr)
	}
	if r.Hold() != testHold {
		t.Fatalf("hold %s after a refused fee hold", r.Hold())
	}
	if aerr := r.HoldFees(4_000_000); aerr != nil {
		t.Fatal(aerr)
	}
	r.AddFees(Fee{Tool: "service:web_search", Calls: 1, Cost: 3_000_000})
	if r.Hold() != testHold+4_000_000 {
		t.Fatalf("hold %s: the fee should come out of the fee hold", r.Hold())
	}
	r.Note("a note")
	g, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 100, CompletionTokens: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if g.Charged != 120_000+3_000_000 || g.Uncollected != 0 || g.Anomaly != "a note" {
		t.Fatalf("charged %s uncollected %s anomaly %q", g.Charged, g.Uncollected, g.Anomaly)
	}
	if b := e.l.Balance(e.acct); b.Held != 0 || b.Usage != g.Charged {
		t.Fatalf("balance %+v", b)
	}
	mustAudit(t, e.l)
}

// Request.Fees is held with the tokens (an account that cannot cover it is
// refused before anything is sent), moves with them on a fallback
// (Retarget), and pays the fees added later before the hold grows.
func TestReserveHoldsFees(t *testing.T) {
	e, k := newEnv(t, testHold+5_000_000, nil, "", Options{})
	req := testReq("gen-fees-refused")
	req.Fees = 6_000_000
	if _, aerr := e.l.Reserve(k, req); aerr == nil || aerr.Status != 402 {
		t.Fatalf("a fee hold past the credit: %v", aerr)
	}
	req = testReq("gen-fees")
	req.Fees = 4_000_000
	if w := WorstCase(req); w != testHold+4_000_000 {
		t.Fatalf("worst case %s, want the tokens' and the fees'", w)
	}
	r, aerr := e.l.Reserve(k, req)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if r.Hold() != testHold+4_000_000 || r.FeesHeld() != 4_000_000 {
		t.Fatalf("hold %s, fees held %s", r.Hold(), r.FeesHeld())
	}
	if aerr := r.Retarget(Target{Provider: "p2", Price: testPrice, MaxOutputTokens: 500}); aerr != nil {
		t.Fatal(aerr)
	}
	if r.Hold() != testHold+4_000_000 {
		t.Fatalf("hold %s after a fallback: the fee hold must stay", r.Hold())
	}
	r.AddFees(Fee{Tool: "service:x", Calls: 1, Cost: 3_000_000})
	if r.FeesHeld() != 1_000_000 || r.Hold() != testHold+4_000_000 {
		t.Fatalf("fees held %s, hold %s: the fee comes out of the fee hold", r.FeesHeld(), r.Hold())
	}
	g, err := r.Settle(Outcome{Usage: Usage{PromptTokens: 100, CompletionTokens: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if g.Charged != 120_000+3_000_000 || g.Uncollected != 0 {
		t.Fatalf("charged %s uncollected %s", g.Charged, g.Uncollected)
	}
	if b := e.l.Balance(e.acct); b.Held != 0 || b.Usage != g.Charged {
		t.Fatalf("balance %+v", b)
	}
	mustAudit(t, e.l)
}
