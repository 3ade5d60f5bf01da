//go:build !wasip1

package cache_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// manage sends a management request with key and returns its status and
// body.
func manage(t *testing.T, g *gatewaytest.Gateway, key, method, path, body string) (int, gjson.Result) {
	t.Helper()
	resp, b, err := g.Request(method, path, body, "Authorization", "Bearer "+key)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, gjson.ParseBytes(b)
}

// The cache's per-account and per-key defaults (management API): an
// account's default turns the cache on for requests that do not name it;
// a request's own item overrides it member by member or turns it off; a
// key's default wins over its account's; another account is unaffected.
func TestKeyAndAccountDefaults(t *testing.T) {
	g := startGateway(t)
	acct, k1 := newAccount(t, g, "defaults")
	_, other := newAccount(t, g, "defaults-other")
	mgmt, _, err := g.Keys.CreateKey(acct, "admin", "", true)
	if err != nil {
		t.Fatal(err)
	}
	k2, rec2, err := g.Keys.CreateKey(acct, "second", "", false)
	if err != nil {
		t.Fatal(err)
	}
	_, otherRec, err := g.Keys.CreateKey(mustAccount(t, g, "defaults-third"), "theirs", "", false)
	if err != nil {
		t.Fatal(err)
	}
	plain := `{"model":"test/chat","temperature":0,"messages":[{"role":"user","content":"Which river runs through Lyon?"}]}`
	with := func(item string) string {
		return strings.Replace(plain, `"messages"`, `"plugins":[`+item+`],"messages"`, 1)
	}
	if a := ask(t, g, k1, plain); a.xcache != "" {
		t.Fatalf("no default yet, X-Cache %q", a.xcache)
	}

	// Setting it: a management key of the account, options checked
	// against the plugin's config_schema.
	for _, c := range []struct {
		key, body string
		status    int
	}{
		{k1, `{"response_cache":{"ttl":600}}`, 403},
		{mgmt, `{"response_cache":{"mode":"fuzzy"}}`, 400},
		{mgmt, `{"response_cache":{"id":"response-cache"}}`, 400},
		{mgmt, `{"cache":{}}`, 400},
		{mgmt, `{"response_cache":{"ttl":600}}`, 200},
	} {
		if st, b := manage(t, g, c.key, "PUT", "/accounts/me/response_cache", c.body); st != c.status {
			t.Fatalf("PUT %s: %d %s, want %d", c.body, st, b.Raw, c.status)
		}
	}
	if st, b := manage(t, g, mgmt, "GET", "/accounts/me/response_cache", ""); st != 200 || b.Get("data.response_cache.ttl").Int() != 600 {
		t.Fatalf("GET: %d %s", st, b.Raw)
	}

	// On without a plugins entry: a miss, then a hit without the upstream.
	up := g.Upstreams["alpha"]
	if a := ask(t, g, k1, plain); a.status != 200 || a.xcache != "MISS" {
		t.Fatalf("account default, first: %d %q %s", a.status, a.xcache, a.body.Raw)
	}
	calls := up.Count()
	if a := ask(t, g, k1, plain); a.xcache != "HIT" || up.Count() != calls {
		t.Fatalf("account default, second: %q (upstream %d -> %d)", a.xcache, calls, up.Count())
	}
	// Another account is unaffected: the cache does not run for it.
	if a := ask(t, g, other, plain); a.status != 200 || a.xcache != "" {
		t.Fatalf("other account: %d X-Cache %q", a.status, a.xcache)
	}
	// The request's own item wins: bypass, or off.
	if a := ask(t, g, k1, with(`{"id":"response-cache","bypass":true}`)); a.xcache != "MISS" || a.body.Get("service_metadata.cache.status").Str != "bypass" {
		t.Fatalf("bypass over the default: %q %s", a.xcache, a.body.Get("service_metadata.cache").Raw)
	}
	if a := ask(t, g, k1, with(`{"id":"response-cache","enabled":false}`)); a.xcache != "" {
		t.Fatalf("enabled false over the default: X-Cache %q", a.xcache)
	}
	// An option the request does not set is the default's: a request
	// naming the plugin with scope key still stores with ttl 600 — and
	// reads its key's partition, so it misses.
	if a := ask(t, g, k1, with(`{"id":"response-cache","scope":"key"}`)); a.xcache != "MISS" {
		t.Fatalf("scope key over the default: %q", a.xcache)
	}

	// A key's own default wins over its account's.
	keyPath := "/keys/" + rec2.Hash + "/response_cache"
	if st, b := manage(t, g, mgmt, "PUT", keyPath, `{"response_cache":{"enabled":false}}`); st != 200 || b.Get("data.source").Str != "key" {
		t.Fatalf("PUT key: %d %s", st, b.Raw)
	}
	if a := ask(t, g, k2, plain); a.xcache != "" {
		t.Fatalf("key turned off: X-Cache %q", a.xcache)
	}
	if st, b := manage(t, g, mgmt, "PUT", keyPath, `{"response_cache":{"scope":"key"}}`); st != 200 {
		t.Fatalf("PUT key: %d %s", st, b.Raw)
	}
	if a := ask(t, g, k2, plain); a.xcache != "MISS" {
		t.Fatalf("key default scope key, first: %q (the account's entry was read)", a.xcache)
	}
	if a := ask(t, g, k2, plain); a.xcache != "HIT" {
		t.Fatalf("key default scope key, second: %q", a.xcache)
	}
	// Back to the account's; another account's key is not found.
	if st, b := manage(t, g, mgmt, "PUT", keyPath, `{"response_cache":null}`); st != 200 || b.Get("data.source").Str != "account" || b.Get("data.effective.ttl").Int() != 600 {
		t.Fatalf("PUT key null: %d %s", st, b.Raw)
	}
	if st, _ := manage(t, g, mgmt, "PUT", "/keys/"+otherRec.Hash+"/response_cache", `{"response_cache":{}}`); st != 404 {
		t.Fatalf("another account's key: %d", st)
	}
	// The account's default removed: off again.
	if st, b := manage(t, g, mgmt, "PUT", "/accounts/me/response_cache", `{"response_cache":null}`); st != 200 || b.Get("data.response_cache").Type != gjson.Null {
		t.Fatalf("PUT null: %d %s", st, b.Raw)
	}
	if a := ask(t, g, k1, plain); a.xcache != "" {
		t.Fatalf("default removed: X-Cache %q", a.xcache)
	}
}

func mustAccount(t *testing.T, g *gatewaytest.Gateway, name string) string {
	t.Helper()
	a, err := g.Keys.CreateAccount(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Ledger.TopUp(a.ID, billing.Nanos(1e9), "test"); err != nil {
		t.Fatal(err)
	}
	return a.ID
}
