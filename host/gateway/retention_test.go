package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/store/pgtest"
	"github.com/tidwall/gjson"
)

// With retention.generations set, records older than it are deleted: GET
// /generation of one answers 404 saying why, the listing no longer shows
// it, while the day's activity totals, the account's usage and the audit
// are unchanged, and the metric counts what was pruned.
func TestRetentionOverHTTP(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { testRetentionOverHTTP(t, "") })
	t.Run("postgres", func(t *testing.T) { testRetentionOverHTTP(t, pgtest.Start(t)) })
}

func testRetentionOverHTTP(t *testing.T, dsn string) {
	var clock atomic.Pointer[time.Time]
	began := time.Now()
	clock.Store(&began)
	g, err := gatewaytest.Start(gatewaytest.Options{
		Quiet:    true,
		StoreDSN: dsn,
		Now:      func() time.Time { return *clock.Load() },
		Mutate: func(c *config.Config) {
			c.Retention.Generations = config.Duration(90 * 24 * time.Hour)
			c.Metrics.Listen = "127.0.0.1:0"
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.GW.Pruner == nil {
		t.Fatal("retention.generations is set but the gateway runs no pruner")
	}
	get := func(path string) (int, gjson.Result) {
		t.Helper()
		resp, b, err := g.Request(http.MethodGet, path, "")
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, gjson.ParseBytes(b)
	}
	var ids []string
	var cost billing.Nanos
	for range 3 {
		resp, b, err := g.Request(http.MethodPost, "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"hello there"}]}`)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("chat: %v %s", err, b)
		}
		ids = append(ids, resp.Header.Get("X-Generation-Id"))
	}
	if err := g.Ledger.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		st, rec := get("/generation?id=" + id)
		if st != 200 {
			t.Fatalf("GET /generation before pruning: %d %s", st, rec.Raw)
		}
		n, err := billing.ParseUSD(rec.Get("data.total_cost").Raw)
		if err != nil {
			t.Fatalf("total_cost %s: %v", rec.Get("data.total_cost").Raw, err)
		}
		cost += n
	}
	_, creditsBefore := get("/credits")
	today := began.UTC().Format(time.DateOnly)

	// 91 days on, a round deletes them (the pruner's own rounds run every
	// few minutes; the test runs one now).
	later := began.Add(91 * 24 * time.Hour)
	clock.Store(&later)
	res, skipped, err := g.GW.Pruner.Round()
	if err != nil || skipped || res.Pruned != len(ids) {
		t.Fatalf("round: %+v skipped=%v %v, want %d pruned", res, skipped, err, len(ids))
	}
	for _, id := range ids {
		st, body := get("/generation?id=" + id)
		msg := body.Get("error.message").Str
		if st != 404 || body.Get("error.code").Int() != 404 || !strings.Contains(msg, "older than the retention period of generation records (90d)") ||
			!strings.Contains(msg, id) || !strings.Contains(msg, "has been deleted") {
			t.Fatalf("GET /generation of a pruned id: %d %s", st, body.Raw)
		}
	}
	if st, body := get("/generation?id=gen-nope"); st != 404 || !strings.Contains(body.Get("error.message").Str, `no generation with id "gen-nope"`) {
		t.Fatalf("GET /generation of an unknown id: %d %s", st, body.Raw)
	}
	if st, page := get("/generations"); st != 200 || len(page.Get("data").Array()) != 0 {
		t.Fatalf("listing after pruning: %d %s", st, page.Raw)
	}
	st, act := get("/activity?group_by=model&from=" + today + "&to=" + today)
	rows := act.Get("data").Array()
	if st != 200 || len(rows) != 1 || rows[0].Get("requests").Int() != int64(len(ids)) || rows[0].Get("cost").Str != cost.USD() {
		t.Fatalf("activity after pruning: %d %s, want %d requests costing %s", st, act.Raw, len(ids), cost.USD())
	}
	if _, credits := get("/credits"); credits.Raw != creditsBefore.Raw {
		t.Fatalf("credits changed: %s, was %s", credits.Raw, creditsBefore.Raw)
	}
	if p, err := g.Ledger.Audit(); err != nil || len(p) > 0 {
		t.Fatalf("audit: %v %v", p, err)
	}
	resp, err := http.Get(g.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "switchyard_generations_pruned_total 3\n") {
		t.Fatalf("metrics lack the pruned count:\n%s", b)
	}
}

// The gateway's own pruner deletes stored generation content past
// retention.content and stored Responses API responses past
// retention.responses, on the gateway's clock, and nothing younger: GET
// /generation/content and GET /responses/{id} answer 404 for what it
// deleted, 200 for what it kept. The test runs one round now, as the
// pruner's loop does at start and every few minutes.
func TestRecordPrunersOverHTTP(t *testing.T) {
	var clock atomic.Pointer[time.Time]
	began := time.Now()
	clock.Store(&began)
	content, responses := config.Duration(10*24*time.Hour), config.Duration(20*24*time.Hour)
	g, err := gatewaytest.Start(gatewaytest.Options{
		Quiet: true,
		Now:   func() time.Time { return *clock.Load() },
		Mutate: func(c *config.Config) {
			c.Content.Store = true
			c.Retention.Content, c.Retention.Responses = &content, &responses
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	status := func(path string) int {
		t.Helper()
		resp, b, err := g.Request(http.MethodGet, path, "")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 && resp.StatusCode != 404 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return resp.StatusCode
	}
	resp, b, err := g.Request(http.MethodPost, "/chat/completions", `{"model":"test/chat","messages":[{"role":"user","content":"keep me a while"}]}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("chat: %v %s", err, b)
	}
	gen := "/generation/content?id=" + resp.Header.Get("X-Generation-Id")
	resp, b, err = g.Request(http.MethodPost, "/responses", `{"model":"test/chat","input":"keep me too"}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("responses: %v %s", err, b)
	}
	stored := "/responses/" + gjson.GetBytes(b, "id").Str
	if status(gen) != 200 || status(stored) != 200 {
		t.Fatal("the content and the response were not stored")
	}

	for _, step := range []struct {
		days             int
		pruned           map[string]int
		content, storedR int
	}{
		{9, map[string]int{"generation content": 0, "stored responses": 0}, 200, 200},
		{11, map[string]int{"generation content": 2, "stored responses": 0}, 404, 200}, // the chat's and the response's generation
		{21, map[string]int{"generation content": 0, "stored responses": 1}, 404, 404},
	} {
		later := began.Add(time.Duration(step.days) * 24 * time.Hour)
		clock.Store(&later)
		pruned := g.GW.PruneRecords()
		for what, n := range step.pruned {
			if pruned[what] != n {
				t.Errorf("day %d: pruned %v, want %v", step.days, pruned, step.pruned)
			}
		}
		if got := status(gen); got != step.content {
			t.Errorf("day %d: GET %s = %d, want %d", step.days, gen, got, step.content)
		}
		if got := status(stored); got != step.storedR {
			t.Errorf("day %d: GET %s = %d, want %d", step.days, stored, got, step.storedR)
		}
	}
}
