package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/switchyard/switchyard/host/store/pgtest"
)

// The server starts, serves a fresh database, stops (clients refused) and
// starts again on the same DSN.
func TestServerStopStart(t *testing.T) {
	s := pgtest.New(t)
	dsn := s.NewDB(t)
	ping := func() error {
		c, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		var n int
		return c.QueryRow(context.Background(), "SELECT 1").Scan(&n)
	}
	if err := ping(); err != nil {
		t.Fatalf("fresh database: %v", err)
	}
	s.Stop()
	if err := ping(); err == nil {
		t.Fatal("a stopped server answered")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}
