package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/activity"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
)

// syctl prune deletes the records older than -older-than, says how many,
// and leaves the ledger consistent; nonsense ages are refused.
func TestPrune(t *testing.T) {
	db := newStore(t)
	bdb, err := store.OpenBolt(db)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := keys.Open(bdb)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ks.CreateAccount("acme")
	if err != nil {
		t.Fatal(err)
	}
	_, k, err := ks.Create(a.ID, keys.Options{Name: "k", LimitReset: keys.ResetNone})
	if err != nil {
		t.Fatal(err)
	}
	// Four records 100 days old and two of yesterday, settled by a ledger
	// whose clock says so.
	now := time.Now().UTC()
	var at time.Time
	l, err := billing.Open(bdb, activity.Indexing(billing.Options{Now: func() time.Time { return at }}))
	if err != nil {
		t.Fatal(err)
	}
	at = now.Add(-100 * 24 * time.Hour)
	if _, err := l.TopUp(a.ID, billing.NanosPerUSD, "test"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, age := range []time.Duration{100, 100, 100, 100, 1, 1} {
		at = now.Add(-age * 24 * time.Hour)
		r, aerr := l.Reserve(k, billing.Request{ID: billing.IDAt(at) + fmt.Sprintf("%014d", i), Model: "acme/m", Provider: "p",
			Price: catalog.Price{Prompt: 1, Completion: 2}, PromptTokens: 100, MaxOutputTokens: 10})
		if aerr != nil {
			t.Fatal(aerr)
		}
		if _, err := r.Settle(billing.Outcome{Usage: billing.Usage{PromptTokens: 50, CompletionTokens: 5}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	_ = l.Close()
	_ = bdb.Close()

	for _, tc := range []struct {
		args []string
		code int
		out  string // in stdout, or stderr when code != 0
	}{
		{[]string{"prune"}, 1, "-older-than is required"},
		{[]string{"prune", "-older-than", "1s"}, 1, "1s is too short: keep generation records at least 1h"},
		{[]string{"prune", "-older-than", "-3d"}, 1, "is negative"},
		{[]string{"prune", "-older-than", "0"}, 1, "0 would delete every record"},
		{[]string{"prune", "-older-than", "ninety"}, 1, "want a whole number of days"},
		{[]string{"prune", "-older-than", "90d", "-batch", "0"}, 1, "-batch must be from 1 to 1000"},
		{[]string{"prune", "-older-than", "90d", "-batch", "3"}, 0, "pruned 4 generation records created before"},
		{[]string{"generation", "show", ids[0]}, 1, ""},
		{[]string{"generation", "show", ids[4]}, 0, ids[4]},
		{[]string{"audit"}, 0, "ledger consistent"},
		{[]string{"prune", "-older-than", "90d"}, 0, "pruned 0 generation records"},
		{[]string{"-json", "prune", "-older-than", "12h"}, 0, `"pruned": 2`},
	} {
		code, out, stderr := syctl(t, db, tc.args...)
		got := out
		if tc.code != 0 {
			got = stderr
		}
		if code != tc.code || !strings.Contains(got, tc.out) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d with %q", tc.args, code, out, stderr, tc.code, tc.out)
		}
	}
}
