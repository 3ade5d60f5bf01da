package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"time"

	"github.com/switchyard/switchyard/host/store"
)

// migrate: syctl migrate -to DSN [-from FILE] [-force]. It brings the
// PostgreSQL schema to this build's version and, with -from, copies every
// bucket of a bbolt store into it (docs/cluster.md): the way from one
// machine to cluster mode. Run it with the gateways stopped.
func runMigrate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("syctl migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	to := fs.String("to", "", "PostgreSQL DSN (postgres://…; ${VAR} is taken from the environment)")
	from := fs.String("from", "", "bbolt store file to copy into PostgreSQL (optional)")
	force := fs.Bool("force", false, "copy even if the target already holds data (its keys are overwritten)")
	batch := fs.Int("batch", 5000, "pairs per PostgreSQL transaction while copying")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *to == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: syctl migrate -to postgres://… [-from FILE] [-force]")
		return 2
	}
	if err := migrateTo(*to, *from, *force, *batch, stdout); err != nil {
		fmt.Fprintln(stderr, "syctl migrate:", err)
		return 1
	}
	return 0
}

func migrateTo(to, from string, force bool, batch int, out io.Writer) error {
	dsn, err := store.ExpandEnv(to)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	was, err := store.Migrate(ctx, dsn)
	if err != nil {
		return err
	}
	if was == store.SchemaVersion {
		fmt.Fprintf(out, "schema: version %d, up to date\n", was)
	} else {
		fmt.Fprintf(out, "schema: version %d → %d\n", was, store.SchemaVersion)
	}
	if from == "" {
		return nil
	}
	// A mistyped path must not become an empty bbolt file copied as "nothing".
	if _, err := os.Stat(from); errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("%s does not exist", from)
	}
	src, err := store.OpenBolt(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{})
	if err != nil {
		return err
	}
	defer dst.Close()
	var existing [][]byte
	if err := dst.View(func(tx store.Tx) error {
		existing, err = store.TopLevel(tx)
		return err
	}); err != nil {
		return err
	}
	if len(existing) > 0 && !force {
		return fmt.Errorf("the target already holds data (%d buckets, %q first): refusing to copy into it; pass -force to copy anyway (keys present in both are overwritten)", len(existing), existing[0])
	}
	st, err := store.Copy(dst, src, batch)
	if err != nil {
		return fmt.Errorf("copy (%d buckets, %d keys written before the failure): %w", st.Buckets, st.Keys, err)
	}
	// Check: every top-level bucket holds as many keys on both sides.
	srcN, err := keyCounts(src)
	if err != nil {
		return err
	}
	dstN, err := keyCounts(dst)
	if err != nil {
		return err
	}
	for name, n := range srcN {
		if dstN[name] < n {
			return fmt.Errorf("verify: bucket %q has %d keys in %s but %d in PostgreSQL", name, n, from, dstN[name])
		}
	}
	fmt.Fprintf(out, "copied %s: %d buckets, %d keys\n", from, st.Buckets, st.Keys)
	return nil
}

// keyCounts is KeyN of every top-level bucket.
func keyCounts(db store.DB) (map[string]int, error) {
	n := map[string]int{}
	err := db.View(func(tx store.Tx) error {
		names, err := store.TopLevel(tx)
		if err != nil {
			return err
		}
		for _, name := range names {
			n[string(name)] = tx.Bucket(name).KeyN()
		}
		return nil
	})
	return n, err
}
