package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// A plugin's fees are held with the upstream's worst case before the
// request's plugins run (issue 31: they were charged after the fact, "as
// far as the credit allows", and a post_response hook's fee was never
// charged at all). The test plugin declares max_fee $0.01 and reports
// config "cost" from pre_request and post_response (mode cost_both):
//   - an account with credit for the model's hold but not for the fee gets
//     402 before any plugin runs, and pays nothing;
//   - an account with enough pays exactly the model's cost plus both fees,
//     as JSON, and the pre_request fee when streamed (a stream runs no
//     post_response);
//   - fees above max_fee are charged up to it in the request, no more;
//   - the ledger's audit is clean.
func TestPluginFeesHeldBeforePipeline(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	wasmPath, mf := testPlugin(t)
	mf = strings.Replace(mf, `"kind": "plugin",`, `"kind": "plugin", "max_fee": 0.01,`, 1)
	if resp, body := publish(t, g, g.Key, wasmPath, mf, "global", true); resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d %s", resp.StatusCode, body.Raw)
	}
	const maxFee = billing.Nanos(10_000_000) // $0.01
	chat := func(stream bool, plugins string) string {
		s := `{"model":"test/chat","max_tokens":50,"messages":[{"role":"user","content":"hello there"}]`
		if stream {
			s += `,"stream":true,"stream_options":{"include_usage":true}`
		}
		if plugins != "" {
			s += `,"plugins":` + plugins
		}
		return s + `}`
	}
	priced := func(cost string) string {
		return `[{"id":"testplugin","mode":"cost_both","cost":"` + cost + `"}]`
	}
	// What the model's hold is for this body, measured on a request
	// without plugins (same prompt and max_tokens).
	_, probe := post(t, g, "/chat/completions", chat(false, ""))
	modelHold := usd(t, generation(t, g, g.Key, probe.Get("id").Str).Get("held"))
	if modelHold <= 0 {
		t.Fatalf("probe held %s", modelHold)
	}

	t.Run("short of the fee", func(t *testing.T) {
		for _, stream := range []bool{false, true} {
			acct, key := newAccount(t, g, "short"+map[bool]string{false: "json", true: "stream"}[stream], int64(modelHold+maxFee/2))
			resp, body := post(t, g, "/chat/completions", chat(stream, priced("0.005")), "Authorization", "Bearer "+key)
			wantError(t, resp, body, http.StatusPaymentRequired, "plugins may charge up to")
			wantError(t, resp, body, http.StatusPaymentRequired, "nothing was charged")
			if err := g.Ledger.Sync(); err != nil {
				t.Fatal(err)
			}
			if b := g.Ledger.Balance(acct); b.Usage != 0 || b.Held != 0 {
				t.Fatalf("stream=%v: the refused request cost %s (held %s)", stream, b.Usage, b.Held)
			}
			n := 0
			if err := g.Ledger.Generations(acct, func(*billing.Generation) bool { n++; return true }); err != nil || n != 0 {
				t.Fatalf("stream=%v: %d records of a refused request (%v)", stream, n, err)
			}
		}
	})

	for _, tc := range []struct {
		name   string
		stream bool
		cost   string
		fees   billing.Nanos
	}{
		{"json", false, "0.004", 8_000_000},            // both hooks' fees
		{"json above max_fee", false, "0.007", maxFee}, // 0.007 + 0.003 of the second
		{"stream", true, "0.004", 4_000_000},           // pre_request's only
	} {
		t.Run(tc.name, func(t *testing.T) {
			acct, key := newAccount(t, g, "rich"+strings.ReplaceAll(tc.name, " ", ""), 1_000_000_000)
			resp, raw, err := g.Request(http.MethodPost, "/chat/completions", chat(tc.stream, priced(tc.cost)), "Authorization", "Bearer "+key)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%v %d %s", err, resp.StatusCode, raw)
			}
			id := gjson.GetBytes(raw, "id").Str
			if tc.stream {
				id = gjson.Get(strings.TrimPrefix(strings.SplitN(string(raw), "\n", 2)[0], "data: "), "id").Str
			}
			rec := generation(t, g, key, id)
			if got := usd(t, rec.Get("tool_fees_cost")); got != tc.fees {
				t.Fatalf("fees charged %s, want %s: %s", got, tc.fees, rec.Raw)
			}
			if err := g.Ledger.Sync(); err != nil {
				t.Fatal(err)
			}
			b := g.Ledger.Balance(acct)
			total := usd(t, rec.Get("total_cost"))
			if b.Usage != total || b.Held != 0 || total <= tc.fees || usd(t, rec.Get("uncollected")) != 0 {
				t.Fatalf("account used %s (held %s), record %s", b.Usage, b.Held, rec.Raw)
			}
			if !tc.stream {
				if c := usd(t, gjson.GetBytes(raw, "usage.cost")); c != total || usd(t, gjson.GetBytes(raw, "usage.cost_details.tool_fees")) != tc.fees {
					t.Fatalf("usage %s, record total %s", gjson.GetBytes(raw, "usage").Raw, total)
				}
			}
		})
	}
	if problems, err := g.Ledger.Audit(); err != nil || len(problems) > 0 {
		t.Fatalf("audit: %v %v", err, problems)
	}
}
