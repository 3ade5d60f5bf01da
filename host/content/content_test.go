package content

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/store/pgtest"
	"github.com/tidwall/gjson"
)

// The same behaviour on both stores: bbolt, and PostgreSQL (pgtest; set
// SWITCHYARD_SKIP_PG=1 to skip it).
func TestStore(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) {
		db, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		testStore(t, Store{DB: db})
	})
	t.Run("postgres", func(t *testing.T) {
		db, err := store.OpenPostgres(context.Background(), pgtest.Start(t), store.PostgresOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		testStore(t, Store{DB: db})
	})
}

// Records are partitioned by account, and Prune deletes exactly those
// stored before its time, in batches, leaving no index entry behind.
func testStore(t *testing.T, s Store) {
	text := "hi"
	if err := s.Put("acct_a", "gen-1", &Record{Input: json.RawMessage(`{"messages":[]}`), Completion: &text}); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.Get("acct_a", "gen-1"); err != nil || rec == nil || *rec.Completion != "hi" {
		t.Fatalf("own account: %+v %v", rec, err)
	}
	if rec, err := s.Get("acct_b", "gen-1"); err != nil || rec != nil {
		t.Fatalf("another account read it: %+v %v", rec, err)
	}
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		if err := s.Put("acct_p", fmt.Sprintf("gen-%d", i), &Record{Input: json.RawMessage(`{"messages":[]}`), Stored: base.Add(time.Duration(i) * time.Hour).UnixNano()}); err != nil {
			t.Fatal(err)
		}
	}
	// gen-0 stored again later: no longer among the old ones.
	if err := s.Put("acct_p", "gen-0", &Record{Stored: base.Add(10 * time.Hour).UnixNano()}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Prune(base.Add(3*time.Hour), 1); err != nil || n != 2 { // gen-1 and gen-2, one per transaction
		t.Fatalf("pruned %d, %v; want 2", n, err)
	}
	for id, kept := range map[string]bool{"gen-0": true, "gen-1": false, "gen-2": false, "gen-3": true, "gen-4": true} {
		if rec, err := s.Get("acct_p", id); err != nil || (rec != nil) != kept {
			t.Fatalf("%s after the prune: %v %v, want kept %v", id, rec, err, kept)
		}
	}
	if n, err := s.Prune(base.Add(100*time.Hour), 10); err != nil || n != 3 {
		t.Fatalf("second prune: %d %v, want 3 (no stale entry counted)", n, err)
	}
	if err := s.DB.View(func(tx store.Tx) error {
		return tx.Bucket(table.ByTime).ForEach(func(k, _ []byte) error {
			if strings.Contains(string(k), "acct_p\x00") {
				t.Errorf("index entry left: %q", k)
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
}

func testService(t *testing.T, max int) *Service {
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	on := true
	return &Service{Store: Store{DB: db}, Account: func(string) *bool { return &on }, Log: slog.Default(), max: max}
}

// A chat stream split anywhere — inside a line, inside a character — is
// collected whole, and stored when [DONE] passes, before Close.
func TestCollectorStream(t *testing.T) {
	stream := ": keep-alive\n\n" +
		`data: {"choices":[{"index":0,"delta":{"role":"assistant","reasoning":"think "}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"reasoning":"hard"}}]}` + "\r\n\r\n" +
		`data: {"choices":[{"index":0,"delta":{"content":"Grüße, "}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":"world"},"finish_reason":"stop"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	for _, step := range []int{1, 3, 7, 64, len(stream)} {
		s := testService(t, 1<<20)
		c := s.Collector("acct", "gen-s", []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), false)
		for i := 0; i < len(stream); i += step {
			_, _ = c.Write([]byte(stream[i:min(i+step, len(stream))]))
		}
		rec, err := s.Store.Get("acct", "gen-s")
		if err != nil || rec == nil {
			t.Fatalf("step %d: not stored at [DONE]: %v", step, err)
		}
		if *rec.Completion != "Grüße, world" || *rec.Reasoning != "think hard" || rec.Truncated || rec.Error != nil {
			t.Fatalf("step %d: %+v", step, rec)
		}
		if got := string(rec.Input); got != `{"messages":[{"role":"user","content":"hi"}]}` {
			t.Fatalf("input %s", got)
		}
		_ = c.Close()
	}
}

// A stream that ends without [DONE] is stored at Close, with its error.
func TestCollectorInterrupted(t *testing.T) {
	s := testService(t, 1<<20)
	c := s.Collector("acct", "gen-i", []byte(`{"messages":[]}`), false)
	_, _ = c.Write([]byte(`data: {"choices":[{"delta":{"content":"par"}}]}` + "\n\n" + `data: {"error":{"code":502,"message":"upstream failed"}}` + "\n\n"))
	if rec, _ := s.Store.Get("acct", "gen-i"); rec != nil {
		t.Fatal("stored before the stream ended")
	}
	_ = c.Close()
	rec, _ := s.Store.Get("acct", "gen-i")
	if rec == nil || *rec.Completion != "par" || rec.Error == nil || rec.Error.Status != 502 || rec.Reasoning != nil {
		t.Fatalf("%+v", rec)
	}
}

// Content over the bound: the output is cut on a character boundary and
// the oldest messages give way; a prompt is cut short.
func TestCollectorBound(t *testing.T) {
	s := testService(t, 4096)
	long := strings.Repeat("é", 3000) // 6000 bytes
	msgs := `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 5000) + `"},{"role":"user","content":"last"}]}`
	c := s.Collector("acct", "gen-b", []byte(msgs), false)
	c.JSON([]byte(`{"choices":[{"message":{"role":"assistant","content":"` + long + `"}}]}`))
	rec, _ := s.Store.Get("acct", "gen-b")
	if rec == nil || !rec.Truncated || len(*rec.Completion) > 4096 || !strings.HasPrefix(long, *rec.Completion) {
		t.Fatalf("output not cut: %v", rec)
	}
	if n := len(gjson.GetBytes(rec.Input, "messages").Array()); n != 0 {
		t.Fatalf("input kept %d messages with no room", n)
	}

	c = s.Collector("acct", "gen-b2", []byte(msgs), false)
	c.JSON([]byte(`{"choices":[{"message":{"role":"assistant","content":"short"}}]}`))
	rec, _ = s.Store.Get("acct", "gen-b2")
	if m := gjson.GetBytes(rec.Input, "messages").Array(); !rec.Truncated || len(m) != 1 || m[0].Get("content").Str != "last" {
		t.Fatalf("want only the last message kept: %s", rec.Input)
	}

	c = s.Collector("acct", "gen-p", []byte(`{"messages":[{"role":"user","content":"`+strings.Repeat("\\\"", 4000)+`"}]}`), true)
	c.JSON([]byte(`{"choices":[{"message":{"content":"ok"}}]}`))
	rec, _ = s.Store.Get("acct", "gen-p")
	if p := gjson.GetBytes(rec.Input, "prompt"); !rec.Truncated || p.Type != gjson.String || len(rec.Input)+2 > 4096 || !strings.HasPrefix(p.Str, `""`) {
		t.Fatalf("prompt: %d bytes %.40s", len(rec.Input), rec.Input)
	}
}

// A line longer than the bound is skipped, not buffered without end.
func TestCollectorHugeLine(t *testing.T) {
	s := testService(t, 4096)
	c := s.Collector("acct", "gen-h", []byte(`{"messages":[]}`), false)
	_, _ = c.Write([]byte(`data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n"))
	for range 100 {
		_, _ = c.Write([]byte(`data: {"choices":[{"delta":{"content":"` + strings.Repeat("x", 1000)))
	}
	if len(c.line) > 4096+64<<10 {
		t.Fatalf("buffered %d bytes", len(c.line))
	}
	_, _ = c.Write([]byte("\"}}]}\n\n" + `data: {"choices":[{"delta":{"content":"b"}}]}` + "\n\ndata: [DONE]\n\n"))
	rec, _ := s.Store.Get("acct", "gen-h")
	if rec == nil || *rec.Completion != "ab" || !rec.Truncated {
		t.Fatalf("%+v", rec)
	}
}

// Off for the account: no collector at all.
func TestDisabled(t *testing.T) {
	s := testService(t, 4096)
	off := false
	s.Account = func(string) *bool { return nil }
	if s.Collector("a", "g", nil, false) != nil {
		t.Fatal("collected with storage off by default")
	}
	s.Default = true
	if s.Collector("a", "g", nil, false) == nil {
		t.Fatal("operator default on: not collected")
	}
	s.Account = func(string) *bool { return &off }
	if s.Collector("a", "g", nil, false) != nil {
		t.Fatal("the account's own off did not win over the default")
	}
	var nilc *Collector
	nilc.JSON(nil)
	_, _ = nilc.Write([]byte("x"))
	_ = nilc.Close()
}
