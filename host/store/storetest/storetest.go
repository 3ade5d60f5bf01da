// Package storetest is the store contract's test (host/store's doc
// comment): every implementation runs the same subtests, so callers see
// one behaviour whichever store the configuration picks.
package storetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/store"
)

// Run runs the contract's subtests; open returns a fresh, empty store
// (closed by the caller's cleanup).
func Run(t *testing.T, open func(t *testing.T) store.DB) {
	tests := []struct {
		name string
		fn   func(t *testing.T, db store.DB)
	}{
		{"Buckets", testBuckets},
		{"NestedBuckets", testNestedBuckets},
		{"GetPutDelete", testGetPutDelete},
		{"BadKeys", testBadKeys},
		{"CursorOrderAndPages", testCursor},
		{"CursorDelete", testCursorDelete},
		{"ForEachAndKeyN", testForEachKeyN},
		{"ReadYourWrites", testReadYourWrites},
		{"Prefetch", testPrefetch},
		{"Rollback", testRollback},
		{"ViewCannotWrite", testViewCannotWrite},
		{"ValuesValidDuringTx", testValuesValid},
		{"ConcurrentUpdates", func(t *testing.T, db store.DB) { testCounter(t, db, db) }},
		{"Notify", func(t *testing.T, db store.DB) { testNotify(t, db, db) }},
		{"NotifyPayloadLimit", testNotifyLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// RunShared runs the subtests of a store shared by processes: open
// returns two handles (two "instances") on one fresh store.
func RunShared(t *testing.T, open func(t *testing.T) (a, b store.DB)) {
	t.Run("ConcurrentUpdatesTwoInstances", func(t *testing.T) {
		a, b := open(t)
		testCounter(t, a, b)
	})
	t.Run("NotifyOtherInstance", func(t *testing.T) {
		a, b := open(t)
		testNotify(t, a, b)
	})
	t.Run("OtherInstanceDeletesBucket", func(t *testing.T) {
		a, b := open(t)
		testBucketDeletedElsewhere(t, a, b)
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func put(t *testing.T, db store.DB, bucket string, kv ...string) {
	t.Helper()
	must(t, db.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(bucket))
		if err != nil {
			return err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if err := b.Put([]byte(kv[i]), []byte(kv[i+1])); err != nil {
				return err
			}
		}
		return nil
	}))
}

// get reads key of bucket in a View; ok is false when the bucket or key
// is missing.
func get(t *testing.T, db store.DB, bucket, key string) (string, bool) {
	t.Helper()
	var v []byte
	var ok bool
	must(t, db.View(func(tx store.Tx) error {
		if b := tx.Bucket([]byte(bucket)); b != nil {
			if g := b.Get([]byte(key)); g != nil {
				v, ok = bytes.Clone(g), true
			}
		}
		return nil
	}))
	return string(v), ok
}

func testBuckets(t *testing.T, db store.DB) {
	must(t, db.View(func(tx store.Tx) error {
		if tx.Bucket([]byte("a")) != nil {
			t.Error("Bucket of a fresh store is not nil")
		}
		return nil
	}))
	if err := db.Update(func(tx store.Tx) error { return tx.DeleteBucket([]byte("a")) }); !errors.Is(err, store.ErrBucketNotFound) {
		t.Errorf("DeleteBucket of a missing bucket: %v, want ErrBucketNotFound", err)
	}
	put(t, db, "a", "k", "1")
	put(t, db, "b", "k", "2")
	// CreateBucketIfNotExists again returns the same bucket, data kept.
	put(t, db, "a", "k2", "3")
	for _, c := range []struct{ b, k, want string }{{"a", "k", "1"}, {"a", "k2", "3"}, {"b", "k", "2"}} {
		if v, ok := get(t, db, c.b, c.k); !ok || v != c.want {
			t.Errorf("%s/%s = %q, %v; want %q", c.b, c.k, v, ok, c.want)
		}
	}
	must(t, db.Update(func(tx store.Tx) error { return tx.DeleteBucket([]byte("a")) }))
	if _, ok := get(t, db, "a", "k"); ok {
		t.Error("a deleted bucket's key is still there")
	}
	must(t, db.View(func(tx store.Tx) error {
		if tx.Bucket([]byte("a")) != nil {
			t.Error("a deleted bucket is still there")
		}
		return nil
	}))
	if v, ok := get(t, db, "b", "k"); !ok || v != "2" {
		t.Errorf("deleting a took b's key: %q %v", v, ok)
	}
	// Recreated: empty.
	put(t, db, "a")
	must(t, db.View(func(tx store.Tx) error {
		if k, _ := tx.Bucket([]byte("a")).Cursor().First(); k != nil {
			t.Errorf("a recreated bucket holds %q", k)
		}
		return nil
	}))
}

func testNestedBuckets(t *testing.T, db store.DB) {
	must(t, db.Update(func(tx store.Tx) error {
		root, err := tx.CreateBucketIfNotExists([]byte("root"))
		if err != nil {
			return err
		}
		must(t, root.Put([]byte("a"), []byte("va")))
		must(t, root.Put([]byte("c"), []byte("vc")))
		n, err := root.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		must(t, n.Put([]byte("x"), []byte("vx")))
		deep, err := n.CreateBucketIfNotExists([]byte("deep"))
		if err != nil {
			return err
		}
		return deep.Put([]byte("y"), []byte("vy"))
	}))
	must(t, db.View(func(tx store.Tx) error {
		root := tx.Bucket([]byte("root"))
		if root.Bucket([]byte("nope")) != nil {
			t.Error("a missing nested bucket is not nil")
		}
		if v := root.Get([]byte("b")); v != nil {
			t.Errorf("Get of a nested bucket's name = %q, want nil", v)
		}
		// The nested bucket is a key of its parent, in order, value nil.
		var got []string
		c := root.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			got = append(got, fmt.Sprintf("%s=%v", k, v != nil))
		}
		if want := "a=true b=false c=true"; strings.Join(got, " ") != want {
			t.Errorf("cursor over a bucket with a nested one: %s, want %s", strings.Join(got, " "), want)
		}
		if v := root.Bucket([]byte("b")).Bucket([]byte("deep")).Get([]byte("y")); string(v) != "vy" {
			t.Errorf("deep/y = %q", v)
		}
		return nil
	}))
	// A top-level bucket and a nested one of the same name are distinct.
	put(t, db, "b", "x", "top")
	if v, _ := get(t, db, "b", "x"); v != "top" {
		t.Errorf("top-level b/x = %q", v)
	}
	// Deleting a nested bucket removes what is under it, and only that.
	must(t, db.Update(func(tx store.Tx) error { return tx.Bucket([]byte("root")).DeleteBucket([]byte("b")) }))
	must(t, db.View(func(tx store.Tx) error {
		root := tx.Bucket([]byte("root"))
		if root.Bucket([]byte("b")) != nil {
			t.Error("deleted nested bucket still there")
		}
		if k, _ := root.Cursor().Seek([]byte("b")); string(k) != "c" {
			t.Errorf("after deleting nested b, Seek(b) = %q, want c", k)
		}
		if string(root.Get([]byte("a"))) != "va" {
			t.Error("deleting a nested bucket took its parent's key")
		}
		return nil
	}))
	if v, _ := get(t, db, "b", "x"); v != "top" {
		t.Errorf("deleting root/b took top-level b/x: %q", v)
	}
	must(t, db.Update(func(tx store.Tx) error {
		n, err := tx.Bucket([]byte("root")).CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		if n.Bucket([]byte("deep")) != nil || n.Get([]byte("x")) != nil {
			t.Error("a recreated nested bucket kept its old content")
		}
		return nil
	}))
	nestedNameConflicts(t, db)
}

// nestedNameConflicts: testNestedBuckets's root holds the key a and the
// nested bucket b; neither name may turn into the other kind.
func nestedNameConflicts(t *testing.T, db store.DB) {
	// A nested bucket's name cannot take a value: the Update fails (bbolt
	// at the Put, PostgreSQL at the commit) and leaves nothing behind.
	err := db.Update(func(tx store.Tx) error {
		root := tx.Bucket([]byte("root"))
		if err := root.Put([]byte("a"), []byte("changed")); err != nil {
			return err
		}
		return root.Put([]byte("b"), []byte("value over a bucket"))
	})
	if err == nil {
		t.Error("Put over a nested bucket's name succeeded")
	}
	// Delete of a nested bucket's name does not delete the bucket.
	_ = db.Update(func(tx store.Tx) error { return tx.Bucket([]byte("root")).Delete([]byte("b")) })
	must(t, db.View(func(tx store.Tx) error {
		root := tx.Bucket([]byte("root"))
		if root.Bucket([]byte("b")) == nil {
			t.Error("the nested bucket is gone after a Put or Delete of its name")
		}
		if v := root.Get([]byte("a")); string(v) != "va" {
			t.Errorf("a failed Update left a = %q", v)
		}
		return nil
	}))
	// A bucket's name that is a key with a value cannot become a bucket.
	if err := db.Update(func(tx store.Tx) error {
		_, err := tx.Bucket([]byte("root")).CreateBucketIfNotExists([]byte("a"))
		return err
	}); err == nil {
		t.Error("CreateBucketIfNotExists over a key with a value succeeded")
	}
}

func testGetPutDelete(t *testing.T, db store.DB) {
	cases := []struct {
		name   string
		key    []byte
		value  []byte
		wantGV []byte
	}{
		{"plain", []byte("k"), []byte("v"), []byte("v")},
		{"binary key", []byte{0, 0xff, 1}, []byte{0, 1, 2}, []byte{0, 1, 2}},
		{"nil value is empty", []byte("nil"), nil, []byte{}},
		{"empty value", []byte("empty"), []byte{}, []byte{}},
		{"large value", []byte("large"), bytes.Repeat([]byte("x"), 1<<20), bytes.Repeat([]byte("x"), 1<<20)},
		{"max key", bytes.Repeat([]byte("k"), store.MaxKeySize), []byte("v"), []byte("v")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			must(t, db.Update(func(tx store.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("b"))
				if err != nil {
					return err
				}
				return b.Put(c.key, c.value)
			}))
			must(t, db.View(func(tx store.Tx) error {
				v := tx.Bucket([]byte("b")).Get(c.key)
				if v == nil || !bytes.Equal(v, c.wantGV) {
					t.Errorf("Get = %.20q (nil %v), want %.20q", v, v == nil, c.wantGV)
				}
				return nil
			}))
			must(t, db.Update(func(tx store.Tx) error { return tx.Bucket([]byte("b")).Put(c.key, []byte("over")) }))
			if v, _ := get(t, db, "b", string(c.key)); v != "over" {
				t.Errorf("after overwrite: %q", v)
			}
			must(t, db.Update(func(tx store.Tx) error { return tx.Bucket([]byte("b")).Delete(c.key) }))
			if _, ok := get(t, db, "b", string(c.key)); ok {
				t.Error("deleted key still there")
			}
			// Deleting an absent key is not an error.
			must(t, db.Update(func(tx store.Tx) error { return tx.Bucket([]byte("b")).Delete(c.key) }))
		})
	}
	if _, ok := get(t, db, "b", "never"); ok {
		t.Error("Get of an absent key is not nil")
	}
}

func testBadKeys(t *testing.T, db store.DB) {
	cases := []struct {
		name string
		key  []byte
		want error
	}{
		{"empty", []byte{}, store.ErrKeyRequired},
		{"nil", nil, store.ErrKeyRequired},
		{"too large", bytes.Repeat([]byte("k"), store.MaxKeySize+1), store.ErrKeyTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := db.Update(func(tx store.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("b"))
				if err != nil {
					return err
				}
				return b.Put(c.key, []byte("v"))
			})
			if !errors.Is(err, c.want) {
				t.Errorf("Put: %v, want %v", err, c.want)
			}
		})
	}
}

// cursorKeys are keys that test byte order: 0x00 and 0xff bytes,
// prefixes of each other, and enough of them for several pages.
func cursorKeys() [][]byte {
	keys := [][]byte{
		{0x00}, {0x00, 0x00}, {0x00, 0xff}, {0x01}, {0x7f}, {0x80}, {0xfe}, {0xff}, {0xff, 0x00}, {0xff, 0xff},
		[]byte("a"), []byte("a\x00"), []byte("ab"), []byte("abc"), []byte("b"), []byte("B"),
	}
	for i := 0; i < 600; i++ {
		keys = append(keys, fmt.Appendf(nil, "gen-%08d", i*7))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100; i++ {
		k := make([]byte, 1+r.IntN(12))
		for j := range k {
			k[j] = byte(r.IntN(256))
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
	out := keys[:0]
	for i, k := range keys {
		if i == 0 || !bytes.Equal(k, keys[i-1]) {
			out = append(out, k)
		}
	}
	return out
}

func valueOf(k []byte) []byte { return append([]byte("v:"), k...) }

func testCursor(t *testing.T, db store.DB) {
	keys := cursorKeys()
	must(t, db.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("c"))
		if err != nil {
			return err
		}
		// In shuffled order: the store orders them.
		r := rand.New(rand.NewPCG(3, 4))
		for _, i := range r.Perm(len(keys)) {
			if err := b.Put(keys[i], valueOf(keys[i])); err != nil {
				return err
			}
		}
		return nil
	}))
	check := func(t *testing.T, what string, k, v []byte, i int) {
		t.Helper()
		if i < 0 || i >= len(keys) {
			if k != nil {
				t.Fatalf("%s: %x, want the end", what, k)
			}
			return
		}
		if !bytes.Equal(k, keys[i]) || !bytes.Equal(v, valueOf(keys[i])) {
			t.Fatalf("%s: %x=%q, want %x (index %d)", what, k, v, keys[i], i)
		}
	}
	for _, w := range []struct {
		name string
		walk func(*testing.T, store.Cursor, [][]byte, cursorCheck)
	}{{"forward", cursorForward}, {"backward", cursorBackward}, {"seek", cursorSeek}, {"zigzag across pages", cursorZigzag}} {
		t.Run(w.name, func(t *testing.T) {
			must(t, db.View(func(tx store.Tx) error {
				w.walk(t, tx.Bucket([]byte("c")).Cursor(), keys, check)
				return nil
			}))
		})
	}
	t.Run("empty bucket", func(t *testing.T) { cursorEmpty(t, db) })
}

// cursorCheck fails t unless the cursor's k, v are keys[i] and its value
// (i out of range: the end, k nil).
type cursorCheck func(t *testing.T, what string, k, v []byte, i int)

func cursorForward(t *testing.T, c store.Cursor, keys [][]byte, check cursorCheck) {
	i := 0
	for k, v := c.First(); k != nil; k, v = c.Next() {
		check(t, "Next", k, v, i)
		i++
	}
	if i != len(keys) {
		t.Fatalf("forward saw %d keys, want %d", i, len(keys))
	}
}

func cursorBackward(t *testing.T, c store.Cursor, keys [][]byte, check cursorCheck) {
	i := len(keys) - 1
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		check(t, "Prev", k, v, i)
		i--
	}
	if i != -1 {
		t.Fatalf("backward stopped at %d", i)
	}
}

func cursorSeek(t *testing.T, c store.Cursor, keys [][]byte, check cursorCheck) {
	for i, k := range keys {
		kk, v := c.Seek(k)
		check(t, fmt.Sprintf("Seek(%x)", k), kk, v, i)
		// Between k and the next key: lands on the next.
		kk, v = c.Seek(append(bytes.Clone(k), 0x00))
		check(t, fmt.Sprintf("Seek(%x 00)", k), kk, v, i+1)
	}
	k, _ := c.Seek([]byte{0xff, 0xff, 0xff})
	if k != nil {
		t.Errorf("Seek past the end = %x", k)
	}
	// The newest-first idiom: Seek beyond the range, nothing there,
	// Prev lands on the last key.
	k, v := c.Prev()
	check(t, "Prev after Seek past the end", k, v, len(keys)-1)
	k, v = c.Prev()
	check(t, "and Prev again", k, v, len(keys)-2)
	// Seek to the first key after a prefix, then Prev: the prefix's
	// last key.
	k, v = c.Seek([]byte("gen-\xff"))
	for i := range keys {
		if bytes.Compare(keys[i], []byte("gen-\xff")) >= 0 {
			check(t, "Seek(gen-ff)", k, v, i)
			k, v = c.Prev()
			check(t, "Prev after Seek(gen-ff)", k, v, i-1)
			break
		}
	}
}

func cursorZigzag(t *testing.T, c store.Cursor, keys [][]byte, check cursorCheck) {
	// Forward 300, back 200, forward 100, back to the start: each
	// turn crosses page boundaries in the other direction.
	k, v := c.First()
	i := 0
	check(t, "First", k, v, i)
	for _, steps := range []int{300, -200, 100, -200} {
		for n := 0; n < max(steps, -steps); n++ {
			if steps > 0 {
				k, v = c.Next()
				i++
			} else {
				k, v = c.Prev()
				i--
			}
			check(t, fmt.Sprintf("step %d of %d", n, steps), k, v, i)
		}
	}
	k, v = c.Last()
	check(t, "Last", k, v, len(keys)-1)
	for n := 0; n < 150; n++ {
		k, v = c.Prev()
	}
	check(t, "Last then 150 Prev", k, v, len(keys)-151)
	for n := 0; n < 150; n++ {
		k, v = c.Next()
	}
	check(t, "and 150 Next", k, v, len(keys)-1)
	if k, _ = c.Next(); k != nil {
		t.Errorf("Next past the end = %x", k)
	}
}

func cursorEmpty(t *testing.T, db store.DB) {
	must(t, db.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("empty"))
		if err != nil {
			return err
		}
		c := b.Cursor()
		if k, _ := c.First(); k != nil {
			t.Errorf("First of an empty bucket = %x", k)
		}
		if k, _ := c.Last(); k != nil {
			t.Errorf("Last of an empty bucket = %x", k)
		}
		if k, _ := c.Seek([]byte("a")); k != nil {
			t.Errorf("Seek in an empty bucket = %x", k)
		}
		return nil
	}))
}

func testCursorDelete(t *testing.T, db store.DB) {
	const n = 400
	key := func(i int) []byte { return binary.BigEndian.AppendUint32([]byte("k"), uint32(i)) }
	must(t, db.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("d"))
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := b.Put(key(i), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	}))
	// The pruning pattern: walk and delete what matches (every third
	// key), then Seek on from the deleted key.
	must(t, db.Update(func(tx store.Tx) error {
		c := tx.Bucket([]byte("d")).Cursor()
		for k, _ := c.First(); k != nil; {
			i := int(binary.BigEndian.Uint32(k[1:]))
			if i%3 == 0 {
				if err := c.Delete(); err != nil {
					return err
				}
				k, _ = c.Seek(k)
				continue
			}
			k, _ = c.Next()
		}
		return nil
	}))
	var got []int
	must(t, db.View(func(tx store.Tx) error {
		return tx.Bucket([]byte("d")).ForEach(func(k, _ []byte) error {
			got = append(got, int(binary.BigEndian.Uint32(k[1:])))
			return nil
		})
	}))
	var want []int
	for i := 0; i < n; i++ {
		if i%3 != 0 {
			want = append(want, i)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after deleting every third key: %d keys %v…, want %d", len(got), got[:min(10, len(got))], len(want))
	}
}

func testForEachKeyN(t *testing.T, db store.DB) {
	must(t, db.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("f"))
		if err != nil {
			return err
		}
		for i := 0; i < 300; i++ {
			if err := b.Put(fmt.Appendf(nil, "%04d", i), []byte("v")); err != nil {
				return err
			}
		}
		n, err := b.CreateBucketIfNotExists([]byte("nested"))
		if err != nil {
			return err
		}
		for i := 0; i < 5; i++ {
			if err := n.Put(fmt.Appendf(nil, "%d", i), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	}))
	must(t, db.View(func(tx store.Tx) error {
		b := tx.Bucket([]byte("f"))
		var keys, buckets int
		last := ""
		err := b.ForEach(func(k, v []byte) error {
			if string(k) <= last {
				t.Errorf("ForEach out of order: %q after %q", k, last)
			}
			last = string(k)
			if v == nil {
				buckets++
			} else {
				keys++
			}
			return nil
		})
		if err != nil || keys != 300 || buckets != 1 {
			t.Errorf("ForEach: %d keys, %d buckets, %v; want 300, 1", keys, buckets, err)
		}
		stop := errors.New("stop")
		seen := 0
		if err := b.ForEach(func(k, v []byte) error { seen++; return stop }); err != stop || seen != 1 {
			t.Errorf("ForEach with an error: %v after %d calls", err, seen)
		}
		// 300 keys, the nested bucket's own key and its 5 keys.
		if n := b.KeyN(); n != 306 {
			t.Errorf("KeyN = %d, want 306", n)
		}
		if n := b.Bucket([]byte("nested")).KeyN(); n != 5 {
			t.Errorf("nested KeyN = %d, want 5", n)
		}
		return nil
	}))
}

func testReadYourWrites(t *testing.T, db store.DB) {
	put(t, db, "r", "a", "1", "b", "2", "c", "3", "d", "4")
	must(t, db.Update(func(tx store.Tx) error {
		b := tx.Bucket([]byte("r"))
		must(t, b.Put([]byte("b"), []byte("2'")))
		must(t, b.Delete([]byte("c")))
		must(t, b.Put([]byte("bb"), []byte("new")))
		if v := b.Get([]byte("b")); string(v) != "2'" {
			t.Errorf("Get after Put = %q", v)
		}
		if v := b.Get([]byte("c")); v != nil {
			t.Errorf("Get after Delete = %q", v)
		}
		if v := b.Get([]byte("a")); string(v) != "1" {
			t.Errorf("Get of an untouched key = %q", v)
		}
		walk := func(c store.Cursor) string {
			var s []string
			for k, v := c.First(); k != nil; k, v = c.Next() {
				s = append(s, string(k)+"="+string(v))
			}
			return strings.Join(s, " ")
		}
		if got, want := walk(b.Cursor()), "a=1 b=2' bb=new d=4"; got != want {
			t.Errorf("cursor over buffered writes: %s, want %s", got, want)
		}
		// A write while a cursor is open shows at its later positions.
		c := b.Cursor()
		k, _ := c.First()
		must(t, b.Put([]byte("ab"), []byte("mid")))
		k, v := c.Next()
		if string(k) != "ab" || string(v) != "mid" {
			t.Errorf("Next after a Put ahead of the cursor = %s=%s, want ab=mid", k, v)
		}
		// Buckets created in the transaction are visible in it.
		n, err := b.CreateBucketIfNotExists([]byte("sub"))
		must(t, err)
		must(t, n.Put([]byte("x"), []byte("y")))
		if v := b.Bucket([]byte("sub")).Get([]byte("x")); string(v) != "y" {
			t.Errorf("nested bucket created in the tx: x = %q", v)
		}
		if k, v := b.Cursor().Seek([]byte("sub")); string(k) != "sub" || v != nil {
			t.Errorf("cursor over a bucket created in the tx: %q %q", k, v)
		}
		return nil
	}))
	// (KeyN inside an Update is not part of the contract: bbolt counts
	// committed pages only.)
	must(t, db.View(func(tx store.Tx) error {
		if n := tx.Bucket([]byte("r")).KeyN(); n != 7 {
			t.Errorf("KeyN = %d, want 7 (a ab b bb d sub sub/x)", n)
		}
		return nil
	}))
	if v, _ := get(t, db, "r", "ab"); v != "mid" {
		t.Errorf("committed: ab = %q", v)
	}
}

// Prefetch changes how many round trips reads cost, never what they
// return: present, absent, nested-bucket and missing-bucket refs, writes
// before and after it, in Updates and Views.
func testPrefetch(t *testing.T, db store.DB) {
	put(t, db, "p", "a", "1", "b", "2", "c", "3")
	must(t, db.Update(func(tx store.Tx) error {
		_, err := tx.Bucket([]byte("p")).CreateBucketIfNotExists([]byte("sub"))
		return err
	}))
	refs := func(keys ...string) []store.Ref {
		var r []store.Ref
		for _, k := range keys {
			r = append(r, store.Ref{Bucket: []byte("p"), Key: []byte(k)})
		}
		return append(r, store.Ref{Bucket: []byte("nope"), Key: []byte("a")})
	}
	must(t, db.Update(func(tx store.Tx) error {
		b := tx.Bucket([]byte("p"))
		must(t, b.Put([]byte("a"), []byte("1'")))
		store.Prefetch(tx, refs("a", "b", "c", "missing", "sub"))
		for k, want := range map[string]string{"a": "1'", "b": "2", "c": "3", "missing": "", "sub": ""} {
			if v := b.Get([]byte(k)); string(v) != want || (want == "" && v != nil) {
				t.Errorf("after Prefetch, Get(%s) = %q, want %q", k, v, want)
			}
		}
		must(t, b.Put([]byte("b"), []byte("2'")))
		must(t, b.Delete([]byte("c")))
		must(t, b.Put([]byte("missing"), []byte("now")))
		for k, want := range map[string]string{"b": "2'", "c": "", "missing": "now"} {
			if v := b.Get([]byte(k)); string(v) != want || (want == "" && v != nil) {
				t.Errorf("a write after Prefetch: Get(%s) = %q, want %q", k, v, want)
			}
		}
		if tx.Bucket([]byte("nope")) != nil {
			t.Error("Prefetch of a missing bucket created it")
		}
		return nil
	}))
	must(t, db.View(func(tx store.Tx) error {
		store.Prefetch(tx, refs("a", "b", "c", "missing"))
		b := tx.Bucket([]byte("p"))
		for k, want := range map[string]string{"a": "1'", "b": "2'", "c": "", "missing": "now"} {
			if v := b.Get([]byte(k)); string(v) != want || (want == "" && v != nil) {
				t.Errorf("View after Prefetch: Get(%s) = %q, want %q", k, v, want)
			}
		}
		return nil
	}))
}

func testRollback(t *testing.T, db store.DB) {
	put(t, db, "keep", "k", "v")
	boom := errors.New("boom")
	err := db.Update(func(tx store.Tx) error {
		b := tx.Bucket([]byte("keep"))
		must(t, b.Put([]byte("k"), []byte("changed")))
		must(t, b.Put([]byte("new"), []byte("x")))
		nb, err := tx.CreateBucketIfNotExists([]byte("created"))
		must(t, err)
		must(t, nb.Put([]byte("a"), []byte("b")))
		// A read in the middle sends the buffered writes: they must
		// still go away.
		if v := b.Get([]byte("k")); string(v) != "changed" {
			t.Errorf("in the tx: %q", v)
		}
		b.Cursor().First()
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	if v, _ := get(t, db, "keep", "k"); v != "v" {
		t.Errorf("after rollback k = %q", v)
	}
	if _, ok := get(t, db, "keep", "new"); ok {
		t.Error("after rollback a new key is there")
	}
	must(t, db.View(func(tx store.Tx) error {
		if tx.Bucket([]byte("created")) != nil {
			t.Error("after rollback a created bucket is there")
		}
		return nil
	}))
	// The deleted bucket comes back too.
	_ = db.Update(func(tx store.Tx) error {
		must(t, tx.DeleteBucket([]byte("keep")))
		return boom
	})
	if v, _ := get(t, db, "keep", "k"); v != "v" {
		t.Errorf("after a rolled back DeleteBucket: %q", v)
	}
	// And the bucket still takes writes (no stale bucket left behind).
	put(t, db, "keep", "k2", "v2")
	if v, _ := get(t, db, "keep", "k2"); v != "v2" {
		t.Errorf("after rollbacks: k2 = %q", v)
	}
}

func testViewCannotWrite(t *testing.T, db store.DB) {
	put(t, db, "v", "k", "1")
	put(t, db, "v2")
	cases := []struct {
		name string
		fn   func(tx store.Tx) error
	}{
		{"Put", func(tx store.Tx) error { return tx.Bucket([]byte("v")).Put([]byte("k"), []byte("2")) }},
		{"Delete", func(tx store.Tx) error { return tx.Bucket([]byte("v")).Delete([]byte("k")) }},
		{"CreateBucket", func(tx store.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("x")); return err }},
		{"CreateNested", func(tx store.Tx) error {
			_, err := tx.Bucket([]byte("v")).CreateBucketIfNotExists([]byte("x"))
			return err
		}},
		{"DeleteBucket", func(tx store.Tx) error { return tx.DeleteBucket([]byte("v2")) }},
		{"CursorDelete", func(tx store.Tx) error {
			c := tx.Bucket([]byte("v")).Cursor()
			c.First()
			return c.Delete()
		}},
		{"Notify", func(tx store.Tx) error { return tx.Notify("t", "p") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var werr error
			err := db.View(func(tx store.Tx) error {
				if tx.Writable() {
					t.Error("a View is Writable")
				}
				werr = c.fn(tx)
				return nil
			})
			if !errors.Is(werr, store.ErrTxNotWritable) {
				t.Errorf("%s in a View: %v, want ErrTxNotWritable", c.name, werr)
			}
			if err != nil {
				t.Errorf("View: %v", err)
			}
		})
	}
	if v, _ := get(t, db, "v", "k"); v != "1" {
		t.Errorf("k = %q after the refused writes", v)
	}
	must(t, db.View(func(tx store.Tx) error {
		if tx.Bucket([]byte("v2")) == nil || tx.Bucket([]byte("x")) != nil {
			t.Error("a refused bucket write happened")
		}
		return nil
	}))
}

func testValuesValid(t *testing.T, db store.DB) {
	put(t, db, "vv", "a", "AAAA", "b", "BBBB")
	check := func(tx store.Tx) {
		b := tx.Bucket([]byte("vv"))
		a := b.Get([]byte("a"))
		k, v := b.Cursor().First()
		// More reads (and, in an Update, writes) do not disturb them.
		for i := 0; i < 50; i++ {
			b.Get([]byte("b"))
			b.Cursor().Last()
			if tx.Writable() {
				must(t, b.Put(fmt.Appendf(nil, "x%d", i), bytes.Repeat([]byte{'z'}, 100)))
			}
		}
		if string(a) != "AAAA" || string(k) != "a" || string(v) != "AAAA" {
			t.Errorf("values changed during the tx: %q %q %q", a, k, v)
		}
	}
	must(t, db.View(func(tx store.Tx) error { check(tx); return nil }))
	must(t, db.Update(func(tx store.Tx) error { check(tx); return nil }))
}

// testCounter: many goroutines (half on a, half on b) increment one
// counter with read-modify-write Updates; none is lost.
func testCounter(t *testing.T, a, b store.DB) {
	const workers, each = 8, 25
	put(t, a, "n")
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		db := a
		if w%2 == 1 {
			db = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := db.Update(func(tx store.Tx) error {
					bk := tx.Bucket([]byte("n"))
					var n uint64
					if v := bk.Get([]byte("count")); v != nil {
						n = binary.BigEndian.Uint64(v)
					}
					return bk.Put([]byte("count"), binary.BigEndian.AppendUint64(nil, n+1))
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, db := range []store.DB{a, b} {
		v, _ := get(t, db, "n", "count")
		if got := binary.BigEndian.Uint64([]byte(v)); got != workers*each {
			t.Errorf("counter = %d, want %d", got, workers*each)
		}
	}
}

// recv waits for a notification (bounded: a lost one fails, it does not
// hang the suite).
func recv(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case p := <-ch:
		return p
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no notification in 10 s", what)
		return ""
	}
}

// testNotify: a publishes; subscribers on a and on b get what committed,
// in order, and nothing that rolled back.
func testNotify(t *testing.T, a, b store.DB) {
	chA, chB := make(chan string, 16), make(chan string, 16)
	cancelA := a.Subscribe("topic", func(p string) { chA <- p })
	defer cancelA()
	cancelB := b.Subscribe("topic", func(p string) { chB <- p })
	defer cancelB()
	other := make(chan string, 16)
	defer b.Subscribe("other", func(p string) { other <- p })()

	must(t, a.Update(func(tx store.Tx) error {
		must(t, tx.Notify("topic", "one"))
		// Not before the commit.
		select {
		case p := <-chA:
			t.Errorf("delivered before commit: %q", p)
		case p := <-chB:
			t.Errorf("delivered before commit: %q", p)
		default:
		}
		return nil
	}))
	for _, c := range []struct {
		name string
		ch   chan string
	}{{"same handle", chA}, {"other handle", chB}} {
		if p := recv(t, c.ch, c.name); p != "one" {
			t.Errorf("%s got %q, want one", c.name, p)
		}
	}
	// Rolled back: never delivered. The next committed one comes first.
	_ = a.Update(func(tx store.Tx) error {
		must(t, tx.Notify("topic", "rolled back"))
		return errors.New("no")
	})
	must(t, a.Update(func(tx store.Tx) error {
		must(t, tx.Notify("topic", "two"))
		must(t, tx.Notify("topic", "three"))
		return tx.Notify("other", "o")
	}))
	for _, ch := range []chan string{chA, chB} {
		if p := recv(t, ch, "two"); p != "two" {
			t.Errorf("after a rollback got %q, want two", p)
		}
		if p := recv(t, ch, "three"); p != "three" {
			t.Errorf("got %q, want three", p)
		}
	}
	if p := recv(t, other, "other"); p != "o" {
		t.Errorf("other topic got %q", p)
	}
	// Unsubscribed: no more for A's subscriber.
	cancelA()
	must(t, a.Update(func(tx store.Tx) error { return tx.Notify("topic", "four") }))
	if p := recv(t, chB, "four"); p != "four" {
		t.Errorf("got %q, want four", p)
	}
	must(t, a.Update(func(tx store.Tx) error { return tx.Notify("other", "sync") }))
	recv(t, other, "sync")
	select {
	case p := <-chA:
		t.Errorf("an unsubscribed function got %q", p)
	default:
	}
}

func testNotifyLimit(t *testing.T, db store.DB) {
	ch := make(chan string, 4)
	defer db.Subscribe("big", func(p string) { ch <- p })()
	long := "t" + strings.Repeat("o", 100) + "pic" // longer than an identifier
	chLong := make(chan string, 4)
	defer db.Subscribe(long, func(p string) { chLong <- p })()
	max := strings.Repeat("é", store.MaxNotifyPayload/2)
	must(t, db.Update(func(tx store.Tx) error {
		if err := tx.Notify("big", max+"x"); err == nil {
			t.Error("a payload over MaxNotifyPayload was accepted")
		}
		if err := tx.Notify(long, "long"); err != nil {
			return err
		}
		return tx.Notify("big", max)
	}))
	if p := recv(t, ch, "big"); p != max {
		t.Errorf("payload of %d bytes came back as %d bytes", len(max), len(p))
	}
	if p := recv(t, chLong, "long topic"); p != "long" {
		t.Errorf("long topic got %q", p)
	}
}

// testBucketDeletedElsewhere: b caches a bucket, a deletes it (and
// recreates one of the same name); b sees the new one, never the old.
func testBucketDeletedElsewhere(t *testing.T, a, b store.DB) {
	put(t, a, "shared", "k", "old")
	if v, _ := get(t, b, "shared", "k"); v != "old" {
		t.Fatalf("b reads %q", v)
	}
	must(t, a.Update(func(tx store.Tx) error { return tx.DeleteBucket([]byte("shared")) }))
	if _, ok := get(t, b, "shared", "k"); ok {
		t.Error("b still reads a bucket a deleted")
	}
	put(t, a, "shared", "k", "new")
	put(t, b, "shared", "k2", "from b")
	if v, _ := get(t, a, "shared", "k2"); v != "from b" {
		t.Errorf("a reads %q of b's write to the recreated bucket", v)
	}
	if v, _ := get(t, b, "shared", "k"); v != "new" {
		t.Errorf("b reads %q", v)
	}
}

// Shared presents db as a shared store (Shared reports true), so that
// several users of one store in a test process behave as the instances of
// a cluster do on PostgreSQL: caches follow notifications, money is
// leased. The bbolt store's notifications reach every subscriber of the
// process, as PostgreSQL's reach every instance.
func Shared(db store.DB) store.DB { return sharedDB{db} }

type sharedDB struct{ store.DB }

func (sharedDB) Shared() bool { return true }
