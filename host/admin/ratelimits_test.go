package admin

import (
	"strconv"
	"testing"

	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/ratelimit"
	"github.com/tidwall/gjson"
)

// TestRateLimitRoles: keys carry rate limits through POST/PATCH/GET; a
// tenant cannot hand out or take looser limits than its own key's; only the
// operator sets an account's limits.
func TestRateLimitRoles(t *testing.T) {
	f := start(t)
	acctB := f.otherK.AccountID
	// A tenant (account B) whose management key is limited.
	tenantLim := ratelimit.Limits{RequestsPerMinute: 60, TokensPerMinute: 10000, Concurrent: 2}
	tenant, tenantK, err := f.ks.Create(acctB, keys.Options{Name: "limited-admin", Management: true, RateLimits: tenantLim})
	if err != nil {
		t.Fatal(err)
	}
	var created string // hash of the operator's rate-limited key
	var inherited string
	f.run(t, []tcase{
		{"operator creates a limited key", "POST", "/keys", f.mgmt,
			`{"name":"rl","rate_limits":{"requests_per_minute":5,"concurrent":1}}`, 201, func(t *testing.T, r gjson.Result) {
				want(t, r, "data.rate_limits.requests_per_minute", "5")
				want(t, r, "data.rate_limits.tokens_per_minute", "0")
				want(t, r, "data.rate_limits.concurrent", "1")
				created = r.Get("data.hash").String()
			}},
		{"a key without limits shows null", "GET", "/key", f.mgmt, "", 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.rate_limits", "null")
		}},
		{"negative is 400 naming the field", "POST", "/keys", f.mgmt, `{"name":"x","rate_limits":{"concurrent":-1}}`, 400, func(t *testing.T, r gjson.Result) {
			want(t, r, "error.message", "rate_limits: must be null or an object with non-negative integers requests_per_minute, tokens_per_minute and concurrent (0 = unlimited)")
		}},
		{"unknown member is 400", "POST", "/keys", f.mgmt, `{"name":"x","rate_limits":{"requests_per_hour":1}}`, 400, nil},
		{"tenant: a key without rate_limits inherits the tenant's", "POST", "/keys", tenant, `{"name":"child"}`, 201, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.rate_limits.requests_per_minute", "60")
			want(t, r, "data.rate_limits.tokens_per_minute", "10000")
			want(t, r, "data.rate_limits.concurrent", "2")
			inherited = r.Get("data.hash").String()
		}},
		{"tenant: tighter is fine", "POST", "/keys", tenant, `{"name":"c2","rate_limits":{"requests_per_minute":10,"tokens_per_minute":100,"concurrent":1}}`, 201, nil},
		{"tenant: higher is 403", "POST", "/keys", tenant, `{"name":"c3","rate_limits":{"requests_per_minute":61,"tokens_per_minute":100,"concurrent":1}}`, 403, func(t *testing.T, r gjson.Result) {
			want(t, r, "error.message", "rate_limits.requests_per_minute: 61 is more than your own key's limit of 60")
		}},
		{"tenant: unlimited (null) is 403", "POST", "/keys", tenant, `{"name":"c4","rate_limits":null}`, 403, nil},
		{"tenant: a missing dimension is 403", "POST", "/keys", tenant, `{"name":"c5","rate_limits":{"requests_per_minute":1,"tokens_per_minute":1}}`, 403, func(t *testing.T, r gjson.Result) {
			want(t, r, "error.message", "rate_limits.concurrent: your own key's has a limit of 2, so this key needs one of at most that (0 means unlimited)")
		}},
	})
	f.run(t, []tcase{
		{"tenant cannot raise its own", "PATCH", "/keys/" + tenantK.Hash, tenant, `{"rate_limits":{"requests_per_minute":100,"tokens_per_minute":10000,"concurrent":2}}`, 403, nil},
		{"tenant cannot clear its own", "PATCH", "/keys/" + tenantK.Hash, tenant, `{"rate_limits":null}`, 403, nil},
		{"tenant may lower its own", "PATCH", "/keys/" + tenantK.Hash, tenant, `{"rate_limits":{"requests_per_minute":30,"tokens_per_minute":10000,"concurrent":2}}`, 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.rate_limits.requests_per_minute", "30")
		}},
		{"tenant cannot loosen another key past its own", "PATCH", "/keys/" + inherited, tenant, `{"rate_limits":{"requests_per_minute":60,"tokens_per_minute":10000,"concurrent":2}}`, 403, nil},
		{"operator may raise and clear", "PATCH", "/keys/" + created, f.mgmt, `{"rate_limits":null}`, 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.rate_limits", "null")
		}},
		// Account limits.
		{"tenant reads its account's limits", "GET", "/accounts/me/rate_limits", tenant, "", 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.account_id", acctB)
			want(t, r, "data.rate_limits", "null")
			// Nothing configured: a tenant gets the built-in defaults.
			want(t, r, "data.effective.requests_per_minute", strconv.FormatInt(ratelimit.BuiltinAccount.RequestsPerMinute, 10))
		}},
		{"tenant cannot read another account's", "GET", "/accounts/" + f.acctA + "/rate_limits", tenant, "", 404, nil},
		{"ordinary key cannot read", "GET", "/accounts/me/rate_limits", f.user, "", 403, isForbidden},
		{"tenant cannot set its account's", "PUT", "/accounts/" + acctB + "/rate_limits", tenant, `{"requests_per_minute":1000}`, 403, nil},
		{"operator sets another account's", "PUT", "/accounts/" + acctB + "/rate_limits", f.mgmt, `{"requests_per_minute":1000,"concurrent":8}`, 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.rate_limits.requests_per_minute", "1000")
			want(t, r, "data.effective.concurrent", "8")
		}},
		{"the tenant sees them", "GET", "/accounts/me/rate_limits", f.other, "", 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.rate_limits.requests_per_minute", "1000")
		}},
		{"unknown account is 404", "PUT", "/accounts/acct_nope/rate_limits", f.mgmt, `{"requests_per_minute":1}`, 404, nil},
		{"bad body is 400", "PUT", "/accounts/" + acctB + "/rate_limits", f.mgmt, `{"requests_per_minute":"many"}`, 400, nil},
		{"operator clears them", "PUT", "/accounts/" + acctB + "/rate_limits", f.mgmt, `null`, 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.rate_limits", "null")
		}},
	})
	if got := f.ks.RateLimits(acctB); got != (ratelimit.Limits{}) {
		t.Fatalf("account B's limits after clearing: %+v", got)
	}
}
