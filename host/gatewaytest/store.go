package gatewaytest

import (
	"fmt"
	"os"
	"testing"

	"github.com/switchyard/switchyard/host/store/pgtest"
)

// newStoreDSN, when set (Main with SWITCHYARD_TEST_STORE=postgres), gives
// every test gateway a fresh database on one PostgreSQL instead of a bbolt
// file: the same tests then run on the cluster store.
var newStoreDSN func() (string, error)

// Main is a package's TestMain: it runs the tests on bbolt, or with
// SWITCHYARD_TEST_STORE=postgres on a throwaway PostgreSQL (one server for
// the package, a database per gateway). `make test` runs the gateway's
// suite both ways.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	switch os.Getenv("SWITCHYARD_TEST_STORE") {
	case "", "bbolt":
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
	newStoreDSN = s.CreateDB
	return m.Run()
}

// OnPostgres reports whether the test gateways of this run use PostgreSQL.
func OnPostgres() bool { return newStoreDSN != nil }
