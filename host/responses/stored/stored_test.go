package stored

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/store/pgtest"
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
		testPrune(t, Store{DB: db})
		testBackfill(t, Store{DB: db})
	})
	t.Run("postgres", func(t *testing.T) {
		db, err := store.OpenPostgres(context.Background(), pgtest.Start(t), store.PostgresOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		testStore(t, Store{DB: db})
		testPrune(t, Store{DB: db})
		testBackfill(t, Store{DB: db})
	})
}

// Prune deletes what was stored before its time, in batches, and nothing
// after it; a record stored again or deleted by id leaves no index entry
// behind (the index holds exactly the records).
func testPrune(t *testing.T, s Store) {
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		rec := &Record{Input: []json.RawMessage{raw(`{"type":"message"}`)}, Response: raw(`{"id":"x"}`), Stored: base.Add(time.Duration(i) * time.Hour).UnixNano()}
		if err := s.Put("acct_p", fmt.Sprintf("resp_%d", i), rec); err != nil {
			t.Fatal(err)
		}
	}
	// resp_0 stored again later: it is no longer among the old ones.
	if err := s.Put("acct_p", "resp_0", &Record{Response: raw(`{"id":"x"}`), Stored: base.Add(10 * time.Hour).UnixNano()}); err != nil {
		t.Fatal(err)
	}
	if found, err := s.Delete("acct_p", "resp_4"); !found || err != nil {
		t.Fatalf("delete: %v %v", found, err)
	}
	n, err := s.Prune(base.Add(3*time.Hour), 1) // resp_1 and resp_2, one per transaction
	if err != nil || n != 2 {
		t.Fatalf("pruned %d, %v; want 2", n, err)
	}
	for id, kept := range map[string]bool{"resp_0": true, "resp_1": false, "resp_2": false, "resp_3": true, "resp_4": false} {
		if rec, err := s.Get("acct_p", id); err != nil || (rec != nil) != kept {
			t.Fatalf("%s after the prune: %v %v, want kept %v", id, rec, err, kept)
		}
	}
	if n, err := s.Prune(base.Add(100*time.Hour), 10); err != nil || n != 2 { // resp_0 and resp_3: no stale entry counted
		t.Fatalf("second prune: %d %v, want 2", n, err)
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

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func testStore(t *testing.T, s Store) {
	if rec, err := s.Get("acct", "resp_none"); rec != nil || err != nil {
		t.Fatalf("Get of nothing: %v %v", rec, err)
	}
	turn := func(id, prev, in, out string) {
		t.Helper()
		err := s.Put("acct", id, &Record{Previous: prev, Input: []json.RawMessage{raw(`{"id":"in-` + in + `","text":"` + in + `"}`)},
			Response: raw(`{"id":"` + id + `","output":[{"id":"out-` + out + `"}]}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	turn("r1", "", "a", "b")
	turn("r2", "r1", "c", "d")
	turn("r3", "r2", "e", "f")

	ids := func(items []json.RawMessage) string {
		var out []string
		for _, it := range items {
			var v struct{ ID string }
			_ = json.Unmarshal(it, &v)
			out = append(out, v.ID)
		}
		return strings.Join(out, ",")
	}
	items, found, err := s.History("acct", "r3")
	if err != nil || !found || ids(items) != "in-a,out-b,in-c,out-d,in-e,out-f" {
		t.Fatalf("history %s found %v err %v", ids(items), found, err)
	}
	if rec, _ := s.Get("acct", "r2"); rec == nil || rec.Previous != "r1" || string(rec.Input[0]) != `{"id":"in-c","text":"c"}` {
		t.Fatalf("Get r2: %+v", rec)
	}
	// Another account has none of them.
	if rec, _ := s.Get("other", "r1"); rec != nil {
		t.Fatal("another account read a record")
	}
	if _, found, _ := s.History("other", "r3"); found {
		t.Fatal("another account continued a conversation")
	}
	if found, _ := s.Delete("other", "r1"); found {
		t.Fatal("another account deleted a record")
	}
	// A deleted turn ends the history there.
	if found, err := s.Delete("acct", "r2"); !found || err != nil {
		t.Fatalf("Delete r2: %v %v", found, err)
	}
	if items, found, _ := s.History("acct", "r3"); !found || ids(items) != "in-e,out-f" {
		t.Fatalf("history after delete %s", ids(items))
	}
	if _, found, _ := s.History("acct", "r2"); found {
		t.Fatal("a deleted response still continues")
	}
}

// Records stored before the byTime index existed (no "stored") are
// indexed by their response's created_at, or the backfill's time when
// they have none, once: Prune then finds the old ones.
func testBackfill(t *testing.T, s Store) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	old := map[string]string{
		"acct_b\x00resp_old":    `{"input":[],"response":{"id":"resp_old","created_at":1759276800}}`, // 2025-10-01
		"acct_b\x00resp_nodate": `{"input":[],"response":{"id":"resp_nodate"}}`,
	}
	if err := s.DB.Update(func(tx store.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(table.Bucket)
		if err != nil {
			return err
		}
		for k, v := range old {
			if err := bk.Put([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("acct_b", "resp_new", &Record{Response: raw(`{"id":"resp_new"}`), Stored: now.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	n, err := s.Backfill(now, 1) // one record per transaction
	if err != nil || n != 2 {
		t.Fatalf("backfill indexed %d, %v; want the 2 old records", n, err)
	}
	if n, err := s.Backfill(now.Add(time.Hour), 10); err != nil || n != 0 {
		t.Fatalf("a second backfill indexed %d, %v; want none (it ran once)", n, err)
	}
	if n, err := s.Prune(now.Add(-24*time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want resp_old only", n, err)
	}
	for id, kept := range map[string]bool{"resp_old": false, "resp_nodate": true, "resp_new": true} {
		if rec, err := s.Get("acct_b", id); err != nil || (rec != nil) != kept {
			t.Errorf("%s after the prune: %v %v, want kept %v", id, rec, err, kept)
		}
	}
	if n, err := s.Prune(now.Add(time.Second), 10); err != nil || n != 2 {
		t.Fatalf("pruned %d, %v; want resp_nodate (indexed at the backfill) and resp_new", n, err)
	}
}
