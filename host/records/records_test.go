package records

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/store"
)

// Put replaces a record and its index entry; Delete and Prune leave no
// index entry behind; another account never sees a record. (Both stores
// run these operations through host/content's and host/responses/stored's
// tests.)
func TestTable(t *testing.T) {
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb := Table{Bucket: []byte("t"), ByTime: []byte("t_by_time")}
	at := func(h int) int64 { return time.Date(2026, 11, 1, h, 0, 0, 0, time.UTC).UnixNano() }
	put := func(account, id string, h int) {
		t.Helper()
		if err := tb.Put(db, account, id, at(h), []byte(`{"stored":`+itoa(at(h))+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "1", 1)
	put("a", "1", 5) // stored again, later
	put("a", "2", 2)
	put("b", "3", 3)
	get := func(account, id string) (v []byte) {
		_ = db.View(func(tx store.Tx) error { v = tb.Get(tx, account, id); return nil })
		return v
	}
	if get("b", "1") != nil || get("a", "1") == nil || get("a", strings.Repeat("x", MaxID+1)) != nil {
		t.Fatal("a record is found by its own account and id only")
	}
	if found, err := tb.Delete(db, "a", "2"); err != nil || !found {
		t.Fatalf("delete: %v %v", found, err)
	}
	if found, err := tb.Delete(db, "a", "2"); err != nil || found {
		t.Fatalf("delete again: %v %v", found, err)
	}
	// Before 04:00: only b/3 (a/1 moved to 05:00, a/2 is deleted).
	if n, err := tb.Prune(db, time.Unix(0, at(4)), 1); err != nil || n != 1 {
		t.Fatalf("prune: %d %v, want 1", n, err)
	}
	if get("b", "3") != nil || get("a", "1") == nil {
		t.Fatal("prune deleted the wrong records")
	}
	entries := 0
	_ = db.View(func(tx store.Tx) error {
		return tx.Bucket(tb.ByTime).ForEach(func(k, _ []byte) error { entries++; return nil })
	})
	if entries != 1 {
		t.Fatalf("%d index entries, want 1 (a/1 at 05:00)", entries)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
