package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/store/pgtest"
)

func migrateCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{"migrate"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// TestMigrateBoltToPostgres: a store made by syctl (an account, a key)
// plus buckets of every shape is copied into a real PostgreSQL; the keys
// package reads the account there, every pair arrived, and a second copy
// into the now non-empty database is refused unless -force.
func TestMigrateBoltToPostgres(t *testing.T) {
	dsn := pgtest.Start(t)
	path := newStore(t)
	code, acct, stderr := syctl(t, path, "account", "create", "-name", "acme")
	if code != 0 {
		t.Fatalf("account create: %d %s", code, stderr)
	}
	if code, _, stderr := syctl(t, path, "key", "create", "-account", acct, "-name", "ci"); code != 0 {
		t.Fatalf("key create: %d %s", code, stderr)
	}
	// Buckets of every shape: nested two deep, empty, binary keys, and
	// more pairs than one copy batch.
	want := map[string]string{}
	src, err := store.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	err = src.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("mig"))
		if err != nil {
			return err
		}
		for i := 0; i < 1200; i++ {
			k, v := fmt.Sprintf("gen-%06d", i), fmt.Sprintf("v%d", i)
			want["mig/"+k] = v
			if err := b.Put([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		n, err := b.CreateBucketIfNotExists([]byte("nested"))
		if err != nil {
			return err
		}
		d, err := n.CreateBucketIfNotExists([]byte("deep"))
		if err != nil {
			return err
		}
		want["mig/nested/deep/\x00\xff"] = "bin"
		if err := d.Put([]byte{0, 0xff}, []byte("bin")); err != nil {
			return err
		}
		_, err = tx.CreateBucketIfNotExists([]byte("empty"))
		return err
	})
	src.Close()
	if err != nil {
		t.Fatal(err)
	}

	code, out, stderr := migrateCmd("-to", dsn, "-from", path, "-batch", "100")
	if code != 0 {
		t.Fatalf("migrate: %d %s %s", code, out, stderr)
	}
	if !strings.Contains(out, fmt.Sprintf("schema: version 0 → %d", store.SchemaVersion)) || !strings.Contains(out, "copied "+path) {
		t.Errorf("migrate said %q", out)
	}

	dst, err := store.OpenPostgres(context.Background(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	got := map[string]string{}
	var walk func(prefix string, b store.Bucket)
	walk = func(prefix string, b store.Bucket) {
		b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(prefix+string(k)+"/", b.Bucket(k))
			} else if strings.HasPrefix(prefix, "mig/") {
				got[prefix+string(k)] = string(v)
			}
			return nil
		})
	}
	err = dst.View(func(tx store.Tx) error {
		if tx.Bucket([]byte("empty")) == nil {
			t.Error("the empty bucket was not copied")
		}
		walk("mig/", tx.Bucket([]byte("mig")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("copied %d pairs of mig, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%q = %q, want %q", k, got[k], v)
		}
	}
	// The gateway's own package reads what syctl wrote to bbolt.
	ks, err := keys.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	as, err := ks.Accounts()
	if err != nil || len(as) != 1 || as[0].ID != acct {
		t.Errorf("accounts on PostgreSQL: %v %v, want %s", as, err, acct)
	}

	// syctl works on the cluster's store as on the file: -db takes the DSN.
	if code, out, stderr := syctl(t, dsn, "audit"); code != 0 {
		t.Errorf("audit of the migrated store: %d %s %s", code, out, stderr)
	}
	if code, _, stderr := syctl(t, dsn, "credits", "topup", "-account", acct, "-amount", "5"); code != 0 {
		t.Errorf("top-up on PostgreSQL: %d %s", code, stderr)
	}
	if code, out, stderr := syctl(t, dsn, "audit"); code != 0 {
		t.Errorf("audit after a top-up on PostgreSQL: %d %s %s", code, out, stderr)
	}

	// Again: the target holds data.
	code, _, stderr = migrateCmd("-to", dsn, "-from", path)
	if code != 1 || !strings.Contains(stderr, "-force") {
		t.Errorf("second copy: %d %q, want a refusal naming -force", code, stderr)
	}
	code, out, stderr = migrateCmd("-to", dsn, "-from", path, "-force")
	if code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("-force: %d %q %s", code, out, stderr)
	}
	// Schema only, and a missing -from file.
	if code, out, _ := migrateCmd("-to", dsn); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("schema only: %d %q", code, out)
	}
	if code, _, stderr := migrateCmd("-to", dsn, "-from", path+".typo"); code != 1 || !strings.Contains(stderr, "does not exist") {
		t.Errorf("missing -from: %d %q", code, stderr)
	}
	if code, _, _ := migrateCmd(); code != 2 {
		t.Errorf("no -to: exit %d, want 2", code)
	}
}
