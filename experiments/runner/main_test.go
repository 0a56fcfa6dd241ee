package runner

import (
	"os"
	"testing"

	"github.com/xds-workbench/lab/experiments/leakcheck"
	"github.com/xds-workbench/lab/shared/scenario"
)

// TestMain fails the package when a run leaves a goroutine behind (servers, streams,
// HTTP clients, the simulated client's loop, Envoy's waiter).
func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m)) }

// teachingSteps is the built-in teaching scenario's steps.
func teachingSteps(t testing.TB) []scenario.Step {
	t.Helper()
	sc, err := scenario.Builtin("teaching")
	if err != nil {
		t.Fatal(err)
	}
	return sc.Steps
}
