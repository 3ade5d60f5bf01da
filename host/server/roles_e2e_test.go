package server_test

import (
	"testing"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/keys"
)

// A tenant — an account holding a management key that is not the
// operator's — cannot mint credits, raise its own limit, hand out more
// spending than its own limit, or touch gateway-wide modules; the operator
// can fund any account.
func TestTenantCannotMintOrRaiseLimits(t *testing.T) {
	g := start(t, gatewaytest.Options{})
	acct, err := g.Keys.CreateAccount("tenant")
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(5 * billing.NanosPerUSD)
	tenant, tk, err := g.Keys.Create(acct.ID, keys.Options{Name: "tenant-admin", Management: true, Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	as := func(key string) []string { return []string{"Authorization", "Bearer " + key} }
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
	}{
		{"mint credits", "POST", "/credits", `{"amount":2000000}`, 403},
		{"mint credits for another account", "POST", "/credits", `{"amount":1,"account_id":"` + g.AccountID + `"}`, 403},
		{"raise own limit", "PATCH", "/keys/" + tk.Hash, `{"limit":1000}`, 403},
		{"remove own limit", "PATCH", "/keys/" + tk.Hash, `{"limit":null}`, 403},
		{"change own period", "PATCH", "/keys/" + tk.Hash, `{"limit_reset":"daily"}`, 403},
		{"unlimited child key", "POST", "/keys", `{"name":"child"}`, 403},
		{"child above own limit", "POST", "/keys", `{"name":"child","limit":6}`, 403},
		{"operator child key", "POST", "/keys", `{"name":"child","limit":1,"operator":true}`, 403},
		{"child within own limit", "POST", "/keys", `{"name":"child","limit":5}`, 201},
		{"lower own limit", "PATCH", "/keys/" + tk.Hash, `{"limit":4}`, 200},
		{"global module", "POST", "/modules", `{"scope":"global","manifest":{"name":"x"},"wasm":"AGFzbQEAAAA="}`, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body, err := g.Request(tc.method, tc.path, tc.body, as(tenant)...)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, resp.StatusCode, body, tc.status)
			}
		})
	}
	if b := g.Ledger.Balance(acct.ID); b.Credits != 0 {
		t.Fatalf("the tenant minted %s", b.Credits)
	}
	// The operator funds the tenant's account.
	resp, body := post(t, g, "/credits", `{"amount":12.5,"account_id":"`+acct.ID+`"}`)
	if resp.StatusCode != 200 || g.Ledger.Balance(acct.ID).Credits != 12_500_000_000 {
		t.Fatalf("operator top-up: %d %s", resp.StatusCode, body.Raw)
	}
	resp, body = post(t, g, "/credits", `{"amount":1,"account_id":"acct_nope"}`)
	wantError(t, resp, body, 404, "no account")
}
