package gatewaytest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/native"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/store/pgtest"
	"github.com/switchyard/switchyard/host/wasm"
)

// newStoreDSN, when set (Main with SWITCHYARD_TEST_STORE=postgres), gives
// every test gateway a fresh database on one PostgreSQL instead of a bbolt
// file: the same tests then run on the cluster store. dropStoreDSN drops
// it when the gateway closes.
var (
	newStoreDSN  func() (string, error)
	dropStoreDSN func(string) error
)

// boltTemplate, when set (Main on bbolt), is a bbolt file holding the
// seeded first-party modules, copied to a test gateway's data directory
// as its store.
var boltTemplate string

// Main is a package's TestMain: it runs the tests on bbolt, or with
// SWITCHYARD_TEST_STORE=postgres on a throwaway PostgreSQL (one server for
// the package, a database per gateway). `make test` runs the gateway's
// suite both ways.
//
// Either way every test gateway's store starts as a copy of one seeded
// once for the package (seededStore): a gateway started on an empty store
// stores the 65 MB of first-party modules, and that was most of the time
// of a suite that starts a gateway per test — 6–14 s a start on
// PostgreSQL, 8–9 s on bbolt under the race detector (whose every copy of
// those binaries is instrumented), against about a second from a copy.
// The start on an empty store is still what the gateway package's tests
// and every package without this Main run.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	switch os.Getenv("SWITCHYARD_TEST_STORE") {
	case "", "bbolt":
		dir, err := os.MkdirTemp("", "switchyard-seeded-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "switchyard.db")
		if err := seedStore(store.Config{Path: path}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		boltTemplate = path
		return m.Run()
	case "postgres":
	default:
		fmt.Fprintln(os.Stderr, "SWITCHYARD_TEST_STORE must be bbolt or postgres")
		return 2
	}
	s, err := pgtest.Launch()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	template, err := s.CreateDB()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := seedStore(store.Config{Driver: "postgres", DSN: template}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	newStoreDSN = func() (string, error) { return s.CreateDBFrom(template) }
	dropStoreDSN = s.DropDB
	return m.Run()
}

// OnPostgres reports whether the test gateways of this run use PostgreSQL.
func OnPostgres() bool { return newStoreDSN != nil }

// seedStore fills an empty store with the first-party modules of
// build/wasm, the way a gateway's start seeds them
// (modules.Registry.Seed): a gateway started on a copy finds them stored
// and unchanged, and writes none. The store is closed when it returns (a
// PostgreSQL template must have no connections).
func seedStore(cfg store.Config) error {
	db, err := store.Open(cfg, "")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	e := wasm.NewEngine(wasm.Config{CacheDir: cacheDir(), Natives: native.Hooks()})
	defer e.Close(ctx)
	reg, err := modules.Open(db, e, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer reg.Close()
	if err := reg.Seed(ctx, filepath.Join(Root(), "build", "wasm")); err != nil {
		return fmt.Errorf("gatewaytest: seeding the template store: %w", err)
	}
	return nil
}

// copyBoltTemplate copies boltTemplate to the bbolt file of cfg unless it
// exists (a gateway restarted on its data directory keeps its store).
func copyBoltTemplate(cfg *config.Config) error {
	if boltTemplate == "" || (cfg.Store.Driver != "" && cfg.Store.Driver != "bbolt") {
		return nil
	}
	path := cfg.Store.Path
	if path == "" {
		path = filepath.Join(cfg.DataDir, "switchyard.db")
	}
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if os.IsExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	src, err := os.Open(boltTemplate)
	if err != nil {
		dst.Close()
		return err
	}
	defer src.Close()
	_, err = io.Copy(dst, src) // copy_file_range: the kernel copies
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// cacheDir is the compilation cache every test gateway shares: compiling a
// Go guest takes about half a second, loading it from the cache
// milliseconds.
func cacheDir() string { return filepath.Join(os.TempDir(), "switchyard-test-wazero-cache") }
