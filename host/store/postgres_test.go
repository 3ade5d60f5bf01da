package store_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/store/pgtest"
	"github.com/switchyard/switchyard/host/store/storetest"
)

// One PostgreSQL server for the package's tests (a fresh database each);
// tests that stop it start their own.
var (
	pgOnce   sync.Once
	pgServer *pgtest.Server
	pgErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pgServer != nil {
		pgServer.Close()
	}
	os.Exit(code)
}

func sharedPG(t testing.TB) *pgtest.Server {
	t.Helper()
	if pgtest.Skip() {
		t.Skip("SWITCHYARD_SKIP_PG=1: skipping the PostgreSQL tests")
	}
	pgOnce.Do(func() { pgServer, pgErr = pgtest.Launch() })
	if pgErr != nil {
		t.Fatal(pgErr)
	}
	return pgServer
}

func openPG(t testing.TB, dsn string) *store.Postgres {
	t.Helper()
	db, err := store.OpenPostgres(context.Background(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestPostgresContract(t *testing.T) {
	s := sharedPG(t)
	storetest.Run(t, func(t *testing.T) store.DB { return openPG(t, s.NewDB(t)) })
	storetest.RunShared(t, func(t *testing.T) (store.DB, store.DB) {
		dsn := s.NewDB(t)
		return openPG(t, dsn), openPG(t, dsn)
	})
}

// An Update that prefetches what it reads costs two round trips (BEGIN,
// the lock and the reads; the writes and the COMMIT) however many keys it
// reads, where reading them one by one costs one each.
func TestPostgresPrefetchRoundTrips(t *testing.T) {
	db := openPG(t, sharedPG(t).NewDB(t))
	const n = 20
	var refs []store.Ref
	if err := db.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		for i := range n {
			k := []byte(fmt.Sprint("k", i))
			refs = append(refs, store.Ref{Bucket: []byte("b"), Key: k})
			if err := b.Put(k, []byte("0")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	trips := func(prefetch bool) int64 {
		before := db.RoundTrips()
		if err := db.Update(func(tx store.Tx) error {
			if prefetch {
				store.Prefetch(tx, refs)
			}
			b := tx.Bucket([]byte("b"))
			for _, r := range refs {
				v := b.Get(r.Key)
				if err := b.Put(r.Key, append(v, '1')); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return db.RoundTrips() - before
	}
	if got := trips(false); got < n {
		t.Errorf("%d reads one by one took %d round trips; the counter is wrong", n, got)
	}
	if got := trips(true); got != 2 {
		t.Errorf("%d prefetched reads took %d round trips, want 2", n, got)
	}
	if err := db.View(func(tx store.Tx) error {
		if v := tx.Bucket([]byte("b")).Get([]byte("k7")); string(v) != "011" {
			t.Errorf("k7 = %q after two increments, want 011", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresOutage: with the server stopped, transactions fail with
// ErrUnavailable — also a View whose fn, seeing nil, would have said "not
// found" — and when it is back the same handle serves again and the
// subscribers are told to Resync.
func TestPostgresOutage(t *testing.T) {
	if pgtest.Skip() {
		t.Skip("SWITCHYARD_SKIP_PG=1")
	}
	s := pgtest.New(t)
	db, err := store.OpenPostgres(context.Background(), s.NewDB(t), store.PostgresOptions{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put := func(k, v string) error {
		return db.Update(func(tx store.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			return b.Put([]byte(k), []byte(v))
		})
	}
	if err := put("k", "v"); err != nil {
		t.Fatal(err)
	}
	notes := make(chan string, 64)
	defer db.Subscribe("t", func(p string) { notes <- p })()

	// Lost in the middle of a transaction: later reads are nil, and the
	// View fails whatever fn returned.
	var first, second []byte
	err = db.View(func(tx store.Tx) error {
		b := tx.Bucket([]byte("b"))
		first = b.Get([]byte("k"))
		s.Stop()
		second = b.Get([]byte("k"))
		return nil // what a caller that took nil for "not found" returns
	})
	if string(first) != "v" || second != nil {
		t.Errorf("reads around the outage: %q then %q, want v then nil", first, second)
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("View across the outage: %v, want ErrUnavailable", err)
	}
	for _, c := range []struct {
		name string
		fn   func() error
	}{
		{"View", func() error {
			return db.View(func(tx store.Tx) error { tx.Bucket([]byte("b")).Get([]byte("k")); return nil })
		}},
		{"Update", func() error { return put("k2", "v2") }},
	} {
		if err := c.fn(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s while stopped: %v, want ErrUnavailable", c.name, err)
		}
	}
	// Subscribed while the server is down: returns (after the timeout),
	// and is listening once it is back.
	late := make(chan string, 64)
	defer db.Subscribe("late", func(p string) { late <- p })()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	// The listener reconnects and says notifications may have been lost.
	select {
	case p := <-notes:
		if p != store.Resync {
			t.Errorf("first notification after the restart: %q, want Resync", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no Resync 30 s after the restart")
	}
	// The same handle serves again, and listens again.
	if err := put("k2", "v2"); err != nil {
		t.Fatalf("Update after the restart: %v", err)
	}
	err = db.Update(func(tx store.Tx) error { return tx.Notify("t", "back") })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-notes:
		if p != "back" {
			t.Errorf("after the restart got %q, want back", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notification after the restart")
	}
	if err := db.Update(func(tx store.Tx) error { return tx.Notify("late", "hello") }); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{store.Resync, "hello"} {
		select {
		case p := <-late:
			if p != want {
				t.Errorf("late subscriber got %q, want %q", p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("late subscriber: no %q", want)
		}
	}
	var got string
	if err := db.View(func(tx store.Tx) error { got = string(tx.Bucket([]byte("b")).Get([]byte("k2"))); return nil }); err != nil || got != "v2" {
		t.Errorf("View after the restart: %q, %v", got, err)
	}
}

// TestOpenConfig: store.Open picks PostgreSQL from the configuration, with
// ${VAR} in the DSN taken from the environment.
func TestOpenConfig(t *testing.T) {
	s := sharedPG(t)
	dsn := s.NewDB(t)
	// The database name comes from the environment.
	i := strings.LastIndex(dsn, "/")
	j := strings.Index(dsn, "?")
	t.Setenv("SY_TEST_PGDB", dsn[i+1:j])
	db, err := store.Open(store.Config{Driver: "postgres", DSN: dsn[:i+1] + "${SY_TEST_PGDB}" + dsn[j:]}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Kind() != "postgres" || !db.Shared() {
		t.Errorf("Kind %q Shared %v", db.Kind(), db.Shared())
	}
	if err := db.Update(func(tx store.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("b")); return err }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  store.Config
		want string
	}{
		{"unset variable", store.Config{Driver: "postgres", DSN: "postgres://u:${SY_TEST_UNSET_VAR}@127.0.0.1/db"}, "SY_TEST_UNSET_VAR"},
		{"no dsn", store.Config{Driver: "postgres"}, "store.dsn"},
		{"unknown driver", store.Config{Driver: "mysql"}, "unknown driver"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := store.Open(c.cfg, t.TempDir()); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open: %v, want an error naming %q", err, c.want)
			}
		})
	}
	// A server that is not there: ErrUnavailable, promptly.
	if _, err := store.Open(store.Config{Driver: "postgres", DSN: "postgres://u@127.0.0.1:1/db?connect_timeout=2"}, t.TempDir()); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open of a closed port: %v, want ErrUnavailable", err)
	}
}

// A panic in fn does not leave the connection (inside its transaction)
// in the pool: the store keeps working.
func TestPostgresPanicInTx(t *testing.T) {
	db := openPG(t, sharedPG(t).NewDB(t))
	for i := 0; i < 20; i++ { // more than the pool's connections
		func() {
			defer func() { recover() }()
			db.Update(func(tx store.Tx) error {
				b, _ := tx.CreateBucketIfNotExists([]byte("b"))
				b.Get([]byte("k")) // begun: holds the write lock
				panic("boom")
			})
		}()
	}
	if err := db.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresOutageUnderLoad: goroutines increment a counter on two
// handles while the server stops and starts. Every failure is
// ErrUnavailable; nothing acknowledged is lost (the counter is at least
// the number of Updates that returned nil, and at most that plus the
// failed ones, whose COMMIT may have landed before its answer was lost);
// both handles serve again once the server is back.
func TestPostgresOutageUnderLoad(t *testing.T) {
	if pgtest.Skip() {
		t.Skip("SWITCHYARD_SKIP_PG=1")
	}
	s := pgtest.New(t)
	dsn := s.NewDB(t)
	var dbs []*store.Postgres
	for i := 0; i < 2; i++ {
		db, err := store.OpenPostgres(context.Background(), dsn, store.PostgresOptions{Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs = append(dbs, db)
	}
	if err := dbs[0].Update(func(tx store.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("n")); return err }); err != nil {
		t.Fatal(err)
	}
	incr := func(db store.DB) error {
		return db.Update(func(tx store.Tx) error {
			b := tx.Bucket([]byte("n"))
			if b == nil {
				return errors.New("bucket n missing")
			}
			var n uint64
			if v := b.Get([]byte("count")); v != nil {
				n = binary.BigEndian.Uint64(v)
			}
			return b.Put([]byte("count"), binary.BigEndian.AppendUint64(nil, n+1))
		})
	}
	var (
		mu           sync.Mutex
		ok, failed   int
		wrong        []error
		stop         = make(chan struct{})
		wg           sync.WaitGroup
		okCh, failCh = make(chan struct{}, 1), make(chan struct{}, 1)
		signal       = func(ch chan struct{}) {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	)
	for w := 0; w < 6; w++ {
		db := dbs[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5000; i++ { // bounded whatever happens
				select {
				case <-stop:
					return
				default:
				}
				err := incr(db)
				mu.Lock()
				switch {
				case err == nil:
					ok++
					signal(okCh)
				case errors.Is(err, store.ErrUnavailable):
					failed++
					signal(failCh)
				default:
					wrong = append(wrong, err)
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(10 * time.Millisecond) // a client backing off
				}
			}
		}()
	}
	// waitFor waits until cond holds (bounded).
	waitFor := func(what string, ch chan struct{}, cond func() bool) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			mu.Lock()
			done := cond()
			mu.Unlock()
			if done {
				return
			}
			select {
			case <-ch:
			case <-deadline:
				close(stop)
				wg.Wait()
				t.Fatalf("%s: not within 60 s (ok %d, failed %d)", what, ok, failed)
			}
		}
	}
	waitFor("successes before the outage", okCh, func() bool { return ok >= 50 })
	s.Stop()
	waitFor("failures during the outage", failCh, func() bool { return failed >= 12 })
	mu.Lock()
	okBefore := ok
	mu.Unlock()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor("successes after the restart", okCh, func() bool { return ok >= okBefore+50 })
	close(stop)
	wg.Wait()
	for _, err := range wrong {
		t.Errorf("a failure that is not ErrUnavailable: %v", err)
	}
	for i, db := range dbs {
		if err := incr(db); err != nil {
			t.Fatalf("handle %d after the restart: %v", i, err)
		}
		ok++
	}
	var count uint64
	if err := dbs[0].View(func(tx store.Tx) error {
		count = binary.BigEndian.Uint64(tx.Bucket([]byte("n")).Get([]byte("count")))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d acknowledged, %d failed with ErrUnavailable, counter %d", ok, failed, count)
	if count < uint64(ok) || count > uint64(ok+failed) {
		t.Errorf("counter %d, want between %d acknowledged and %d (acknowledged + failed)", count, ok, ok+failed)
	}
}

// TestCopyBothWays: store.Copy moves every bucket, nested ones and empty
// ones included, from PostgreSQL to bbolt and back, key for key.
func TestCopyBothWays(t *testing.T) {
	pg := openPG(t, sharedPG(t).NewDB(t))
	err := pg.Update(func(tx store.Tx) error {
		for _, name := range []string{"a", "b\x00", "\xff"} {
			b, err := tx.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return err
			}
			for i := 0; i < 300; i++ {
				if err := b.Put([]byte{byte(i), byte(i >> 8), 0xff}, []byte(name)); err != nil {
					return err
				}
			}
			n, err := b.CreateBucketIfNotExists([]byte("nested"))
			if err != nil {
				return err
			}
			if _, err := n.CreateBucketIfNotExists([]byte("empty")); err != nil {
				return err
			}
			if err := n.Put([]byte("k"), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dump := func(db store.DB) string {
		var sb strings.Builder
		var walk func(prefix string, b store.Bucket)
		walk = func(prefix string, b store.Bucket) {
			b.ForEach(func(k, v []byte) error {
				if v == nil {
					fmt.Fprintf(&sb, "%q/\n", prefix+string(k))
					walk(prefix+string(k)+"/", b.Bucket(k))
				} else {
					fmt.Fprintf(&sb, "%q=%q\n", prefix+string(k), v)
				}
				return nil
			})
		}
		if err := db.View(func(tx store.Tx) error {
			names, err := store.TopLevel(tx)
			for _, n := range names {
				fmt.Fprintf(&sb, "%q/\n", n)
				walk(string(n)+"/", tx.Bucket(n))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	want := dump(pg)
	bolt := openBolt(t)
	st, err := store.Copy(bolt, pg, 100)
	if err != nil {
		t.Fatal(err)
	}
	if st.Buckets != 9 || st.Keys != 903 {
		t.Errorf("copied %+v, want 9 buckets and 903 keys", st)
	}
	if got := dump(bolt); got != want {
		t.Errorf("PostgreSQL → bbolt differs:\n%.2000s\nwant\n%.2000s", got, want)
	}
	back := openPG(t, sharedPG(t).NewDB(t))
	if _, err := store.Copy(back, bolt, 50); err != nil {
		t.Fatal(err)
	}
	if got := dump(back); got != want {
		t.Errorf("bbolt → PostgreSQL differs")
	}
}

// TestMigrate: a database at an older schema version is brought up to
// date (and a newer one refused); the data stays.
func TestMigrate(t *testing.T) {
	dsn := sharedPG(t).NewDB(t)
	ctx := context.Background()
	db := openPG(t, dsn)
	if err := db.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	if from, err := store.Migrate(ctx, dsn); err != nil || from != store.SchemaVersion {
		t.Fatalf("Migrate of an up-to-date database: from %d, %v", from, err)
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := db.Pool().Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	// Back to version 1 (undo migration 2), then forward.
	exec("ALTER TABLE sy_pairs RESET (fillfactor); UPDATE sy_schema SET version = 1")
	if from, err := store.Migrate(ctx, dsn); err != nil || from != 1 {
		t.Fatalf("Migrate from version 1: from %d, %v", from, err)
	}
	var opts []string
	if err := db.Pool().QueryRow(ctx, "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE relname = 'sy_pairs'").Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(opts) != "[fillfactor=85]" {
		t.Errorf("after migrating from 1: sy_pairs options %v", opts)
	}
	var v string
	if err := db.View(func(tx store.Tx) error { v = string(tx.Bucket([]byte("b")).Get([]byte("k"))); return nil }); err != nil || v != "v" {
		t.Errorf("data after migrating: %q %v", v, err)
	}
	// A database from a newer build is refused, not misread.
	exec(fmt.Sprintf("UPDATE sy_schema SET version = %d", store.SchemaVersion+1))
	if _, err := store.Migrate(ctx, dsn); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Migrate of a newer schema: %v", err)
	}
	if _, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{}); err == nil {
		t.Error("OpenPostgres of a newer schema succeeded")
	}
}

// A run of deletes travels as one statement (queueOps): it deletes exactly
// the keys named — absent and repeated ones included — never a nested
// bucket's marker, and reads in the same transaction and after it agree.
func TestPostgresDeleteRun(t *testing.T) {
	db, name := bucketWithNested(t, "k05")
	if err := db.Update(func(tx store.Tx) error {
		b := tx.Bucket(name)
		for i := range 30 {
			if i == 5 {
				continue
			}
			if err := b.Put(fmt.Appendf(nil, "k%02d", i), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	keys := func(tx store.Tx) string {
		var ks []string
		_ = tx.Bucket(name).ForEach(func(k, _ []byte) error { ks = append(ks, string(k)); return nil })
		return strings.Join(ks, ",")
	}
	const want = "k00,k01,k02,k03,k04,k05,k20,k21,k22,k23,k24,k25,k26,k27,k28,k29"
	if err := db.Update(func(tx store.Tx) error {
		b := tx.Bucket(name)
		// k05 names the nested bucket, k99 nothing, k07 twice.
		for _, k := range []string{"k05", "k06", "k07", "k07", "k08", "k99", "k09", "k10", "k11", "k12", "k13", "k14", "k15", "k16", "k17", "k18", "k19"} {
			if err := b.Delete([]byte(k)); err != nil {
				return err
			}
		}
		if got := keys(tx); got != want {
			t.Errorf("in the transaction: %s, want %s", got, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx store.Tx) error {
		if got := keys(tx); got != want {
			t.Errorf("after it: %s, want %s", got, want)
		}
		if tx.Bucket(name).Bucket([]byte("k05")) == nil {
			t.Error("the nested bucket k05 was deleted")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A run of puts travels as one statement: the last put of a key wins, an
// empty (or nil) value stays a value, not a nested bucket, and a put on a
// nested bucket's name still fails the transaction, leaving nothing of it.
func TestPostgresPutRun(t *testing.T) {
	db, name := bucketWithNested(t, "sub")
	if err := db.Update(func(tx store.Tx) error {
		b := tx.Bucket(name)
		for _, kv := range [][2]string{{"a", "1"}, {"b", "1"}, {"a", "2"}, {"c", ""}, {"a", "3"}} {
			if err := b.Put([]byte(kv[0]), []byte(kv[1])); err != nil {
				return err
			}
		}
		return b.Put([]byte("d"), nil)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx store.Tx) error {
		b := tx.Bucket(name)
		for k, want := range map[string]string{"a": "3", "b": "1", "c": "", "d": ""} {
			if v := b.Get([]byte(k)); v == nil || string(v) != want {
				t.Errorf("%s = %q (nil: %t), want %q", k, v, v == nil, want)
			}
		}
		if b.Bucket([]byte("c")) != nil || b.Bucket([]byte("d")) != nil {
			t.Error("an empty value became a nested bucket")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A lone put right before a run of deletes stays a put.
	if err := db.Update(func(tx store.Tx) error {
		b := tx.Bucket(name)
		if err := b.Put([]byte("e"), []byte("kept")); err != nil {
			return err
		}
		for i := range 10 {
			if err := b.Delete(fmt.Appendf(nil, "gone%d", i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx store.Tx) error {
		if v := tx.Bucket(name).Get([]byte("e")); string(v) != "kept" {
			t.Errorf("a put followed by a run of deletes: e = %q, want kept", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	err := db.Update(func(tx store.Tx) error {
		b := tx.Bucket(name)
		for _, k := range []string{"x", "sub", "y"} {
			if err := b.Put([]byte(k), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		t.Fatal("a put on the nested bucket's name in a run committed")
	}
	if err := db.View(func(tx store.Tx) error {
		b := tx.Bucket(name)
		if b.Get([]byte("x")) != nil || b.Bucket([]byte("sub")) == nil {
			t.Error("the failed transaction left writes behind or lost the nested bucket")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// bucketWithNested is a fresh database with a bucket "b" holding a nested
// bucket named nested (a key that runs of writes must not treat as a value).
func bucketWithNested(t *testing.T, nested string) (*store.Postgres, []byte) {
	t.Helper()
	db := openPG(t, sharedPG(t).NewDB(t))
	name := []byte("b")
	if err := db.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists(name)
		if err != nil {
			return err
		}
		_, err = b.CreateBucketIfNotExists([]byte(nested))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return db, name
}
