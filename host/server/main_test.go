package server_test

import (
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// TestMain runs the suite on bbolt, or on PostgreSQL with
// SWITCHYARD_TEST_STORE=postgres (make test does both).
func TestMain(m *testing.M) { gatewaytest.Main(m) }

// The gateways of this run are on the store the run asked for.
func TestStoreUnderTest(t *testing.T) {
	g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	want := "bbolt"
	if gatewaytest.OnPostgres() {
		want = "postgres"
	}
	if got := g.DB.Kind(); got != want {
		t.Fatalf("the test gateway runs on %s, want %s", got, want)
	}
}
