package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/activity"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/store"
)

// syctl generations and activity page and total an account's records, and
// only that account's.
func TestGenerationsAndActivity(t *testing.T) {
	db := newStore(t)
	var accts []string
	for _, name := range []string{"acme", "other"} {
		code, id, stderr := syctl(t, db, "account", "create", "-name", name)
		if code != 0 {
			t.Fatalf("account create: %s", stderr)
		}
		accts = append(accts, id)
	}
	day := time.Date(2026, 4, 2, 12, 0, 0, 0, time.UTC)
	bdb, err := store.OpenBolt(db)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx store.Tx) error {
		for i, a := range []string{accts[0], accts[0], accts[0], accts[1]} {
			g := &billing.Generation{ID: fmt.Sprintf("gen-%d", i), AccountID: a, KeyHash: "k", Model: "v/m", Provider: "p",
				Status: billing.StatusSuccess, Usage: billing.Usage{PromptTokens: 10, CompletionTokens: 5},
				Charged: 2500, CreatedAt: day.Add(time.Duration(i) * time.Minute)}
			if err := billing.PutGenerationIn(tx, g); err != nil {
				return err
			}
			if err := activity.Index(tx, g); err != nil {
				return err
			}
		}
		return nil
	})
	bdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Next string `json:"next_cursor"`
	}
	code, out, stderr := syctl(t, db, "-json", "generations", "-account", accts[0], "-limit", "2")
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Data) != 2 || page.Data[0].ID != "gen-2" || page.Next == "" {
		t.Fatalf("first page: %d %s %s", code, out, stderr)
	}
	code, out, stderr = syctl(t, db, "-json", "generations", "-account", accts[0], "-limit", "2", "-cursor", page.Next)
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Data) != 1 || page.Data[0].ID != "gen-0" || page.Next != "" {
		t.Fatalf("second page: %d %s %s", code, out, stderr)
	}
	code, out, _ = syctl(t, db, "generations", "-account", accts[1])
	if code != 0 || !strings.Contains(out, "gen-3") || strings.Contains(out, "gen-0") {
		t.Fatalf("other account's generations: %s", out)
	}
	code, out, stderr = syctl(t, db, "-json", "activity", "-account", accts[0], "-from", "2026-04-01", "-to", "2026-04-03", "-group-by", "model")
	want := `{"data":[{"date":"2026-04-02","model":"v/m","key":"","requests":3,"prompt_tokens":30,"completion_tokens":15,"cost":"0.0000075"}]}`
	var got, exp any
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || json.Unmarshal([]byte(want), &exp) != nil {
		t.Fatalf("activity: %d %s %s", code, out, stderr)
	}
	if b, _ := json.Marshal(got); string(b) != func() string { e, _ := json.Marshal(exp); return string(e) }() {
		t.Fatalf("activity: %s, want %s", b, want)
	}
	for _, bad := range [][]string{{"generations"}, {"generations", "-account", accts[0], "-status", "bogus"},
		{"activity", "-account", accts[0], "-group-by", "provider"}, {"generations", "-account", accts[0], "-cursor", "!"}} {
		if code, _, _ := syctl(t, db, bad...); code == 0 {
			t.Errorf("%v: exit 0", bad)
		}
	}
	if code, out, _ := syctl(t, db, "account", "set-log-content", "-account", accts[0], "-on"); code != 0 || !strings.Contains(out, "log_content=true") {
		t.Fatalf("set-log-content: %d %s", code, out)
	}
	for args, want := range map[string]string{"-on": "store_content=true", "-default": "store_content=default"} {
		if code, out, _ := syctl(t, db, "account", "set-store-content", "-account", accts[0], args); code != 0 || !strings.Contains(out, want) {
			t.Fatalf("set-store-content %s: %d %s", args, code, out)
		}
	}
	if code, _, _ := syctl(t, db, "account", "set-store-content", "-account", accts[0], "-on", "-off"); code != 2 {
		t.Fatalf("set-store-content -on -off: exit %d, want 2 (usage)", code)
	}
}
