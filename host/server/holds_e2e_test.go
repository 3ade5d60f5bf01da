package server_test

import (
	"math/big"
	"testing"

	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// dollars reads an exact decimal amount of dollars as a rational, so sums
// and comparisons are exact.
func dollars(t *testing.T, r gjson.Result) *big.Rat {
	t.Helper()
	v, ok := new(big.Rat).SetString(r.Raw)
	if !ok {
		t.Fatalf("not an amount: %q", r.Raw)
	}
	return v
}

// newLimitedKey creates a key with a dollar limit and returns its secret.
func newLimitedKey(t *testing.T, g *gatewaytest.Gateway, limit string) string {
	t.Helper()
	resp, body := post(t, g, "/keys", `{"name":"limited","limit":`+limit+`}`)
	if resp.StatusCode != 201 {
		t.Fatalf("creating a key: %d %s", resp.StatusCode, body.Raw)
	}
	return body.Get("key").Str
}

// The hold covers every choice a request asks for: n=50 holds fifty times
// the output bound, so a key whose limit covers one choice but not fifty
// is refused before anything is generated, and a key that can pay gets
// every choice charged — nothing uncollected.
func TestHoldCoversEveryChoice(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	const req = `{"model":"test/chat","n":50,"max_tokens":10,"messages":[{"role":"user","content":"fifty answers please"}]}`

	small := newLimitedKey(t, g, "0.0005") // one choice fits (~$0.0001), fifty (~$0.0011) do not
	resp, body := post(t, g, "/chat/completions", req, "Authorization", "Bearer "+small)
	wantError(t, resp, body, 402, "Key limit exceeded")
	if g.Upstreams["alpha"].Count() != 0 {
		t.Fatal("a request the key cannot pay for reached the upstream")
	}

	resp, body = post(t, g, "/chat/completions", req)
	if resp.StatusCode != 200 || len(body.Get("choices").Array()) != 50 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	if ct := body.Get("usage.completion_tokens").Int(); ct != 500 {
		t.Fatalf("completion tokens %d, want 50 × 10", ct)
	}
	gen := generation(t, g, g.Key, body.Get("id").Str)
	if dollars(t, gen.Get("uncollected")).Sign() != 0 || gen.Get("upstream_anomaly").Exists() {
		t.Fatalf("fifty choices not charged in full: %s", gen.Raw)
	}
	if dollars(t, gen.Get("total_cost")).Cmp(dollars(t, body.Get("usage.cost"))) != 0 {
		t.Fatalf("generation charged %s, response said %s", gen.Get("total_cost").Raw, body.Get("usage.cost").Raw)
	}
}

// Usage an upstream reports beyond what the request could produce is never
// charged past the hold the caller authorised; the generation records the
// anomaly. Negative or nonsensical usage is treated as missing and counted.
func TestUpstreamUsageBeyondTheHold(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	// max_tokens 10, but the upstream says it generated five million tokens
	// ($10 at $2/M).
	g.Upstreams["alpha"].SetFaults(demo.Faults{Usage: `{"prompt_tokens":12,"completion_tokens":5000000,"total_tokens":5000012}`})
	resp, body := post(t, g, "/chat/completions", `{"model":"test/chat","max_tokens":10,"messages":[{"role":"user","content":"short please"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	gen := generation(t, g, g.Key, body.Get("id").Str)
	charged, held := dollars(t, gen.Get("total_cost")), dollars(t, gen.Get("held"))
	if charged.Cmp(held) > 0 || charged.Cmp(big.NewRat(1, 1000)) > 0 {
		t.Fatalf("charged %s for a max_tokens 10 request (held %s)", charged.FloatString(9), held.FloatString(9))
	}
	if gen.Get("upstream_anomaly").Str == "" || dollars(t, gen.Get("uncollected")).Sign() <= 0 {
		t.Fatalf("no anomaly recorded: %s", gen.Raw)
	}
	if dollars(t, body.Get("usage.cost")).Cmp(charged) != 0 {
		t.Fatalf("usage.cost %s, charged %s", body.Get("usage.cost").Raw, charged.FloatString(9))
	}

	// Negative counts: counted by the gateway instead of charging nothing.
	g.Upstreams["alpha"].SetFaults(demo.Faults{Usage: `{"prompt_tokens":-50,"completion_tokens":-100,"total_tokens":-150}`, Reply: "four words of reply"})
	resp, body = post(t, g, "/chat/completions", hello)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body.Raw)
	}
	u := body.Get("usage")
	if !u.Get("estimated").Bool() || u.Get("completion_tokens").Int() != 4 || u.Get("prompt_tokens").Int() <= 0 || dollars(t, u.Get("cost")).Sign() <= 0 {
		t.Fatalf("negative usage not replaced by a count: %s", u.Raw)
	}
}
