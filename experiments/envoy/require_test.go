package envoy

import (
	"testing"

	"github.com/xds-workbench/lab/experiments/testenv"
)

// requireEnvoy is envoytest.Require for this package's own tests, which cannot import
// envoytest: it imports this package.
func requireEnvoy(t testing.TB) Binary {
	t.Helper()
	testenv.SkipIfShort(t, testenv.NeedsEnvoy)
	b, err := Find("")
	if err != nil {
		testenv.Missing(t, "no Envoy", err, testenv.EnvoyNotFound)
	}
	return b
}
