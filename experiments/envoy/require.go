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
		t.Skipf("no Envoy, skipping (run `make envoy` to install Envoy): %v", err)
	}
	return b
}
