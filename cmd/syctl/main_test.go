package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testCache is the compilation cache the other packages' tests share, so
// the module commands do not compile the adapter again on every run.
var testCache = filepath.Join(os.TempDir(), "switchyard-test-wazero-cache")

func syctl(t *testing.T, db string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"-db", db, "-cache", testCache}, args...), &out, &errb)
	return code, strings.TrimSpace(out.String()), errb.String()
}

// newStore is a path for a new store, created by syctl -create.
func newStore(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "sy.db")
	if code, _, stderr := syctl(t, db, "-create", "audit"); code != 0 {
		t.Fatalf("create store: %d %s", code, stderr)
	}
	return db
}

// TestMissingStore: a mistyped -db is an error naming the path, not a new
// empty store.
func TestMissingStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "typo.db")
	code, _, stderr := syctl(t, db, "account", "list")
	if code != 1 || !strings.Contains(stderr, db+" does not exist") || !strings.Contains(stderr, "-create") {
		t.Fatalf("missing store: %d %q", code, stderr)
	}
	if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("syctl created %s: %v", db, err)
	}
	if code, _, stderr := syctl(t, db, "-create", "account", "list"); code != 0 {
		t.Fatalf("-create: %d %s", code, stderr)
	}
	if code, _, stderr := syctl(t, db, "account", "list"); code != 0 {
		t.Fatalf("existing store: %d %s", code, stderr)
	}
}

func TestOperations(t *testing.T) {
	db := newStore(t)
	code, acct, stderr := syctl(t, db, "account", "create", "-name", "acme")
	if code != 0 || !strings.HasPrefix(acct, "acct_") {
		t.Fatalf("account create: %d %q %s", code, acct, stderr)
	}
	code, out, stderr := syctl(t, db, "-json", "key", "create", "-account", acct, "-name", "ci", "-limit", "2.5", "-reset", "weekly")
	if code != 0 {
		t.Fatalf("key create: %d %s", code, stderr)
	}
	var created struct {
		Key  string `json:"key"`
		Data struct {
			Hash  string `json:"hash"`
			Limit int64  `json:"limit"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Data.Limit != 2_500_000_000 || !strings.HasPrefix(created.Key, "sk-sy-v1-") {
		t.Fatalf("%v %s", err, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"credits", "topup", "-account", acct, "-amount", "12.5"}, 0, "credits=$12.5"},
		{[]string{"credits", "show", "-account", acct}, 0, "balance=$12.5"},
		{[]string{"credits", "topup", "-account", acct, "-amount", "-1"}, 1, ""},
		{[]string{"credits", "topup", "-account", "acct_nope", "-amount", "1"}, 1, ""},
		{[]string{"key", "list"}, 0, created.Data.Hash},
		{[]string{"key", "disable", created.Data.Hash}, 0, "disabled=true"},
		{[]string{"key", "list"}, 0, "HASH"}, // header only: disabled keys hidden
		{[]string{"key", "list", "-all"}, 0, created.Data.Hash},
		{[]string{"key", "enable", created.Data.Hash}, 0, "disabled=false"},
		{[]string{"key", "show", created.Data.Hash}, 0, `"ci"`},
		{[]string{"account", "list"}, 0, "$12.5"},
		{[]string{"audit"}, 0, "ledger consistent"},
		{[]string{"key", "delete", created.Data.Hash}, 0, "deleted"},
		{[]string{"key", "show", created.Data.Hash}, 1, ""},
		{[]string{"key", "create", "-account", "acct_nope", "-name", "x"}, 1, ""},
		{[]string{"generation", "show", "gen-nope"}, 1, ""},
		{[]string{"bogus"}, 2, ""},
		{[]string{"key", "show"}, 2, ""},
	} {
		code, out, stderr := syctl(t, db, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: %d %q %s; want %d containing %q", tc.args, code, out, stderr, tc.code, tc.want)
		}
	}
	t.Setenv("SWITCHYARD_DB", "")
	if code := run([]string{"audit"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
		t.Errorf("without -db: exit %d, want 2", code)
	}
}
