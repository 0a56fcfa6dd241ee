// Package envoytest finds a real Envoy for a test, or ends the test the way package
// testenv says: skipped under -short, skipped with the install hint without Envoy,
// failed under CI=true without Envoy. It keeps "testing" out of package envoy, whose
// own tests use testenv directly (they cannot import this package, which imports theirs).
package envoytest

import (
	"testing"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/testenv"
)

// Require returns the Envoy binary for a test that runs a real Envoy: under -short the
// test is skipped (make test-fast is unit and bufconn tests only); without Envoy it is
// skipped with the install hint, or fails under CI=true.
func Require(t testing.TB) envoy.Binary {
	t.Helper()
	testenv.SkipIfShort(t, testenv.NeedsEnvoy)
	return find(t)
}

// find is Require after the -short check, apart so that its test runs under -short too.
func find(t testing.TB) envoy.Binary {
	t.Helper()
	b, err := envoy.Find("")
	if err != nil {
		testenv.Missing(t, "no Envoy", err, testenv.EnvoyNotFound)
	}
	return b
}
