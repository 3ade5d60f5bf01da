package main

import (
	"strings"
	"testing"
)

func TestSetResponseCache(t *testing.T) {
	db := newStore(t)
	_, acct, _ := syctl(t, db, "account", "create", "-name", "acme")
	code, out, stderr := syctl(t, db, "key", "create", "-account", acct, "-name", "ci")
	if code != 0 {
		t.Fatalf("key create: %d %s", code, stderr)
	}
	hash := strings.Fields(strings.Split(out, "\n")[1])[1] // "hash HASH (the secret …)"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"account", "set-response-cache", "-account", acct, "-options", `{"mode": "semantic", "ttl": 600}`}, 0, `response_cache={"mode":"semantic","ttl":600}`},
		{[]string{"-json", "account", "list"}, 0, `"ttl": 600`},
		{[]string{"key", "set-response-cache", "-options", `{"enabled":false}`, hash}, 0, `response_cache={"enabled":false}`},
		{[]string{"-json", "key", "show", hash}, 0, `"enabled": false`},
		{[]string{"key", "set-response-cache", "-none", hash}, 0, "response_cache=none"},
		{[]string{"account", "set-response-cache", "-account", acct, "-none"}, 0, "response_cache=none"},
		{[]string{"account", "set-response-cache", "-account", acct, "-options", `[1]`}, 1, ""},
		{[]string{"account", "set-response-cache", "-account", acct, "-options", `{"id":"x"}`}, 1, ""},
		{[]string{"account", "set-response-cache", "-account", "acct_nope", "-options", `{}`}, 1, ""},
		{[]string{"account", "set-response-cache", "-account", acct, "-options", `{}`, "-none"}, 2, ""},
		{[]string{"key", "set-response-cache", "-options", `{}`, "nohash"}, 1, ""},
	} {
		code, out, stderr := syctl(t, db, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: %d %q %s; want %d containing %q", tc.args, code, out, stderr, tc.code, tc.want)
		}
	}
}
