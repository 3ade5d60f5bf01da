package stored

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

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
