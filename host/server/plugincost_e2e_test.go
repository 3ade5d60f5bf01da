package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// Every charge a request can incur is held before the code that incurs it
// runs (issue 31, round 2 of the money holes): a plugin's chat
// sub-requests are held in an allowance — the manifest's max_sub_cost,
// else limits.max_sub_request_cost — before the plugin runs, and each
// sub-request must fit what is left of it. Before, a sub-request was held
// only when the plugin made it: the account paid for the plugins' work
// whatever the request's own hold did afterwards. The test plugin
// (subchat mode) answers with one chat sub-request of the same messages.
//   - an account that cannot cover the allowance gets 402 before the
//     plugin runs: no record, nothing charged (before: the sub-request ran
//     and was charged);
//   - under 12 concurrent requests an account funded for three
//     allowances never goes below zero, holds nothing at the end, and
//     the audit is clean.
func TestSubRequestsHeldBeforePlugins(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	wasmPath, mf := testPlugin(t)
	const allowance = billing.Nanos(10_000_000) // $0.01
	mf = strings.Replace(mf, `"kind": "plugin",`, `"kind": "plugin", "max_fee": 0, "max_sub_cost": 0.01,`, 1)
	if resp, body := publish(t, g, g.Key, wasmPath, mf, "global", true); resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
	const body = `{"model":"test/chat","max_tokens":50,"messages":[{"role":"user","content":"hello there"}],"plugins":[{"id":"testplugin","mode":"subchat","sub":[]}]}`
	// What one sub-request holds (the same messages, no max_tokens).
	_, probe := post(t, g, "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"hello there"}]}`)
	subHold := usd(t, generation(t, g, g.Key, probe.Get("id").Str).Get("held"))
	if subHold <= 0 || subHold >= allowance/2 {
		t.Fatalf("a sub-request holds %s; the test needs it under half of %s", subHold, allowance)
	}
	records := func(acct string) int {
		n := 0
		if err := g.Ledger.Generations(acct, func(*billing.Generation) bool { n++; return true }); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("short of the allowance", func(t *testing.T) {
		// Enough for the sub-request itself, not for what the plugin may
		// spend: refused before it runs.
		acct, key := newAccount(t, g, "subshort", int64(allowance/2))
		resp, out := post(t, g, "/chat/completions", body, "Authorization", "Bearer "+key)
		wantError(t, resp, out, http.StatusPaymentRequired, "sub-requests of up to")
		wantError(t, resp, out, http.StatusPaymentRequired, "nothing was charged")
		if err := g.Ledger.Sync(); err != nil {
			t.Fatal(err)
		}
		if b := g.Ledger.Balance(acct); b.Usage != 0 || b.Held != 0 || records(acct) != 0 {
			t.Fatalf("the refused request cost %s (held %s, %d records)", b.Usage, b.Held, records(acct))
		}
	})

	t.Run("within the allowance", func(t *testing.T) {
		acct, key := newAccount(t, g, "subrich", 1_000_000_000)
		resp, out := post(t, g, "/chat/completions", body, "Authorization", "Bearer "+key)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(out.Get("choices.0.message.content").Str, "sub-request 200") {
			t.Fatalf("%d %s", resp.StatusCode, out.Raw)
		}
		if err := g.Ledger.Sync(); err != nil {
			t.Fatal(err)
		}
		b := g.Ledger.Balance(acct)
		if b.Held != 0 || b.Usage <= 0 || b.Usage > allowance || records(acct) != 1 {
			t.Fatalf("used %s (held %s), %d records", b.Usage, b.Held, records(acct))
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		const credits = 3*allowance + allowance/2
		acct, key := newAccount(t, g, "subconc", int64(credits))
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		for range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, _, err := g.Request(http.MethodPost, "/chat/completions", body, "Authorization", "Bearer "+key)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					codes[-1]++
					return
				}
				codes[resp.StatusCode]++
			}()
		}
		wg.Wait()
		if codes[http.StatusOK] == 0 || codes[http.StatusOK]+codes[http.StatusPaymentRequired] != 12 {
			t.Fatalf("statuses %v", codes)
		}
		if err := g.Ledger.Sync(); err != nil {
			t.Fatal(err)
		}
		b := g.Ledger.Balance(acct)
		if b.Held != 0 || b.Usage > credits || b.Usage <= 0 || records(acct) != codes[http.StatusOK] {
			t.Fatalf("used %s of %s (held %s), %d records for %v", b.Usage, billing.Nanos(credits), b.Held, records(acct), codes)
		}
	})
	if problems, err := g.Ledger.Audit(); err != nil || len(problems) > 0 {
		t.Fatalf("audit: %v %v", err, problems)
	}
}

// A post_response hook's fee in a JSON server-tool loop is charged (issue
// 31): the loop's last turn settled before the hooks ran, and the fee was
// lost. It is held with the plugins' other fees before they run and
// settled on a record of its own, <id>-fees; the answer's usage.cost
// includes it, and the account's usage is the sum of the records.
func TestServerToolLoopPostFeeCharged(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	wasmPath, mf := testPlugin(t)
	mf = strings.Replace(mf, `"kind": "plugin",`, `"kind": "plugin", "max_fee": 0.01, "max_sub_cost": 0,`, 1)
	if resp, body := publish(t, g, g.Key, wasmPath, mf, "global", true); resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
	acct, key := newAccount(t, g, "loopfee", 1_000_000_000)
	req := toolsBody("What time is it in Oslo? tz:Europe/Oslo", "", `,"max_tokens":50,"plugins":[{"id":"testplugin","mode":"cost_both","cost":"0.004"}]`)
	resp, out := post(t, g, "/chat/completions", req, "Authorization", "Bearer "+key)
	if resp.StatusCode != http.StatusOK || out.Get("usage.server_tool_use_details.turns").Int() != 2 {
		t.Fatalf("%d %s", resp.StatusCode, out.Raw)
	}
	id := out.Get("id").Str
	const fees = billing.Nanos(8_000_000) // pre_request's and post_response's $0.004
	if got := usd(t, out.Get("usage.cost_details.tool_fees")); got != fees {
		t.Fatalf("tool_fees %s, want %s: %s", got, fees, out.Get("usage").Raw)
	}
	rec := generation(t, g, key, id+"-fees")
	if got := usd(t, rec.Get("tool_fees_cost")); got != 4_000_000 || usd(t, rec.Get("uncollected")) != 0 {
		t.Fatalf("the post_response fee's record: %s", rec.Raw)
	}
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	var sum billing.Nanos
	if err := g.Ledger.Generations(acct, func(r *billing.Generation) bool { sum += r.Charged; return true }); err != nil {
		t.Fatal(err)
	}
	b := g.Ledger.Balance(acct)
	if b.Held != 0 || b.Usage != sum || b.Usage != usd(t, out.Get("usage.cost")) {
		t.Fatalf("account used %s (held %s), records %s, answer %s", b.Usage, b.Held, sum, gjson.Get(out.Raw, "usage.cost").Raw)
	}
	if problems, err := g.Ledger.Audit(); err != nil || len(problems) > 0 {
		t.Fatalf("audit: %v %v", err, problems)
	}
}

// A router plugin's fee is held before the router runs (issue 31): it runs
// before the request's model is known, and its fee was held only after it
// ran, with the rest of the pipeline's. The test plugin, published as a
// router (manifest "router") that prices its stage at config "cost" under
// max_fee $0.01, is listed in the request's plugins:
//   - an account with less than the router's ceiling gets 402 before the
//     router runs and pays nothing (before: the router ran, and the fee it
//     reported was held and charged after the fact);
//   - an account with enough pays the model and the fee the router
//     reported, nothing stays held.
func TestRouterFeeHeldBeforeRouter(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	wasmPath, mf := testPlugin(t)
	mf = strings.Replace(mf, `"kind": "plugin",`, `"kind": "plugin", "max_fee": 0.01, "max_sub_cost": 0, "router": {"model": "test/router", "strategy": "test", "name": "Test router"},`, 1)
	if resp, body := publish(t, g, g.Key, wasmPath, mf, "global", true); resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
	const body = `{"model":"test/chat","max_tokens":50,"messages":[{"role":"user","content":"hello there"}],"plugins":[{"id":"testplugin","mode":"cost","cost":"0.004"}]}`

	t.Run("short of the ceiling", func(t *testing.T) {
		acct, key := newAccount(t, g, "routershort", 5_000_000) // $0.005: the fee reported fits, the ceiling does not
		resp, out := post(t, g, "/chat/completions", body, "Authorization", "Bearer "+key)
		wantError(t, resp, out, http.StatusPaymentRequired, "router plugin testplugin")
		wantError(t, resp, out, http.StatusPaymentRequired, "nothing was charged")
		if err := g.Ledger.Sync(); err != nil {
			t.Fatal(err)
		}
		n := 0
		if err := g.Ledger.Generations(acct, func(*billing.Generation) bool { n++; return true }); err != nil {
			t.Fatal(err)
		}
		if b := g.Ledger.Balance(acct); b.Usage != 0 || b.Held != 0 || n != 0 {
			t.Fatalf("the refused request cost %s (held %s, %d records)", b.Usage, b.Held, n)
		}
	})
	t.Run("funded", func(t *testing.T) {
		acct, key := newAccount(t, g, "routerrich", 1_000_000_000)
		resp, out := post(t, g, "/chat/completions", body, "Authorization", "Bearer "+key)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, out.Raw)
		}
		rec := generation(t, g, key, out.Get("id").Str)
		if got := usd(t, rec.Get("tool_fees_cost")); got != 4_000_000 {
			t.Fatalf("fees %s: %s", got, rec.Raw)
		}
		if err := g.Ledger.Sync(); err != nil {
			t.Fatal(err)
		}
		if b := g.Ledger.Balance(acct); b.Held != 0 || b.Usage != usd(t, rec.Get("total_cost")) {
			t.Fatalf("used %s (held %s), record %s", b.Usage, b.Held, rec.Raw)
		}
	})
	if problems, err := g.Ledger.Audit(); err != nil || len(problems) > 0 {
		t.Fatalf("audit: %v %v", err, problems)
	}
}
