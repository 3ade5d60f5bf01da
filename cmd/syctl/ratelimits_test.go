package main

import (
	"strings"
	"testing"
)

func TestSetRateLimits(t *testing.T) {
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
		{[]string{"key", "set-rate-limits", "-rpm", "5", "-concurrent", "2", hash}, 0, "requests_per_minute=5 tokens_per_minute=0 concurrent=2"},
		{[]string{"-json", "key", "show", hash}, 0, `"requests_per_minute": 5`},
		{[]string{"key", "set-rate-limits", "-tpm", "-1", hash}, 1, ""},
		{[]string{"key", "set-rate-limits", "-rpm", "5", "nohash"}, 1, ""},
		{[]string{"key", "set-rate-limits", hash}, 0, "no key limits"},
		{[]string{"account", "set-rate-limits", "-account", acct, "-tpm", "100000"}, 0, "tokens_per_minute=100000"},
		{[]string{"-json", "account", "list"}, 0, `"tokens_per_minute": 100000`},
		{[]string{"account", "set-rate-limits", "-account", "acct_nope", "-rpm", "1"}, 1, ""},
		{[]string{"account", "set-rate-limits", "-account", acct}, 0, "configured defaults"},
		{[]string{"account", "set-rate-limits"}, 1, ""},
	} {
		code, out, stderr := syctl(t, db, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: %d %q %s; want %d containing %q", tc.args, code, out, stderr, tc.code, tc.want)
		}
	}
}
