package server_test

import (
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// TestMain runs the suite on bbolt, or on PostgreSQL with
// SWITCHYARD_TEST_STORE=postgres (make test does both).
func TestMain(m *testing.M) { gatewaytest.Main(m) }
