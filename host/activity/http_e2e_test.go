package activity_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

const hello = `{"model":"test/chat","messages":[{"role":"user","content":"hello there"}]}`

func get(t *testing.T, g *gatewaytest.Gateway, path, key string) (int, gjson.Result) {
	t.Helper()
	resp, b, err := g.Request(http.MethodGet, path, "", "Authorization", "Bearer "+key)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, gjson.ParseBytes(b)
}

// Requests served through the gateway are listed newest first, page by
// page, with the record GET /generation returns, and totalled per day; an
// account sees its own only. All of it right after the responses: the
// longest commit window the configuration allows keeps their settlements
// in memory, and the reads must not miss them.
func TestGenerationsAndActivityOverHTTP(t *testing.T) {
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, Mutate: func(c *config.Config) {
		c.SettleCommitWindow = config.Duration(time.Second)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	other, err := g.Keys.CreateAccount("other")
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _, err := g.Keys.CreateKey(other.ID, "other-admin", "", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Ledger.TopUp(other.ID, 10*billing.NanosPerUSD, "test"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 5 {
		resp, b, err := g.Request(http.MethodPost, "/chat/completions", hello)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("chat: %v %d %s", err, resp.StatusCode, b)
		}
		id := resp.Header.Get("X-Generation-Id")
		ids = append(ids, id)
		st, one := get(t, g, "/generation?id="+id, g.Key)
		if st != 200 || one.Get("data.id").Str != id || one.Get("data.total_cost").Float() != gjson.GetBytes(b, "usage.cost").Float() {
			t.Fatalf("GET /generation right after the response: %d %s (the response: %s)", st, one.Raw, b)
		}
	}
	resp, b, err := g.Request(http.MethodPost, "/chat/completions", hello, "Authorization", "Bearer "+otherKey)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("other chat: %v %s", err, b)
	}
	otherID := resp.Header.Get("X-Generation-Id")

	var listed []string
	cursor := ""
	for range 10 {
		st, page := get(t, g, "/generations?limit=2&cursor="+url.QueryEscape(cursor), g.Key)
		if st != 200 {
			t.Fatalf("GET /generations: %d %s", st, page.Raw)
		}
		for _, rec := range page.Get("data").Array() {
			listed = append(listed, rec.Get("id").Str)
			_, one := get(t, g, "/generation?id="+rec.Get("id").Str, g.Key)
			// GET /generation's is the record with OpenRouter's fields
			// added, its token counts under "tokens" (its usage is the cost).
			rec.ForEach(func(k, v gjson.Result) bool {
				name := k.Str
				if name == "usage" {
					name = "tokens"
				}
				if got := one.Get("data." + name); got.Raw != v.Raw && (name == "tokens" || name == "finish_reason" || got.String() != v.String()) {
					t.Fatalf("listed record's %s %s differs from GET /generation's %s (%s)", k.Str, v.Raw, got.Raw, one.Raw)
				}
				return true
			})
		}
		if cursor = page.Get("next_cursor").Str; cursor == "" {
			break
		}
	}
	// The bootstrap account's own five, newest first; not the other's.
	for i, id := range ids {
		if j := len(ids) - 1 - i; j >= len(listed) || listed[j] != id {
			t.Fatalf("listed %v, want the reverse of %v", listed, ids)
		}
	}
	if len(listed) != len(ids) {
		t.Fatalf("listed %d records, want %d (another account's must not show)", len(listed), len(ids))
	}
	st, page := get(t, g, "/generations", otherKey)
	if st != 200 || len(page.Get("data").Array()) != 1 || page.Get("data.0.id").Str != otherID {
		t.Fatalf("other account's listing: %d %s", st, page.Raw)
	}
	st, page = get(t, g, "/generations?model=test/embed", g.Key)
	if st != 200 || len(page.Get("data").Array()) != 0 {
		t.Fatalf("filtered listing: %d %s", st, page.Raw)
	}

	today := time.Now().UTC().Format(time.DateOnly)
	st, act := get(t, g, "/activity?group_by=model", g.Key)
	if st != 200 {
		t.Fatalf("GET /activity: %d %s", st, act.Raw)
	}
	rows := act.Get("data").Array()
	if len(rows) != 1 || rows[0].Get("date").Str != today || rows[0].Get("model").Str != "test/chat" || rows[0].Get("requests").Int() != 5 {
		t.Fatalf("activity: %s", act.Raw)
	}
	var cost billing.Nanos
	for _, id := range ids {
		rec, err := g.Ledger.Generation(id)
		if err != nil {
			t.Fatal(err)
		}
		cost += rec.Charged
	}
	if rows[0].Get("cost").Str != cost.USD() || cost == 0 {
		t.Fatalf("activity cost %s, the records' %s", rows[0].Get("cost").Str, cost.USD())
	}
	st, act = get(t, g, "/activity", otherKey)
	if st != 200 || len(act.Get("data").Array()) != 1 || act.Get("data.0.requests").Int() != 1 || act.Get("data.0.key").Str == "" {
		t.Fatalf("other account's activity: %d %s", st, act.Raw)
	}

	for _, bad := range []string{"/generations?limit=0", "/generations?status=nope", "/generations?cursor=%21", "/generations?from=yesterday",
		"/activity?group_by=provider", "/activity?from=2026-02-01&to=2026-01-01"} {
		if st, body := get(t, g, bad, g.Key); st != 400 || body.Get("error.message").Str == "" {
			t.Errorf("%s: %d %s, want 400 with a message", bad, st, body.Raw)
		}
	}
}
