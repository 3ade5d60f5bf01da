//go:build !wasip1

package webtest_test

import (
	"testing"

	"github.com/switchyard/switchyard/host/gatewaytest"
)

// TestMain gives every test gateway a copy of one store seeded for the
// package (gatewaytest.Main), instead of seeding each.
func TestMain(m *testing.M) { gatewaytest.Main(m) }
