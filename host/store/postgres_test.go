package store_test

import (
	"context"
	"os"
	"sync"
	"testing"

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
