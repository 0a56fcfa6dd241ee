package runner

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/scenario"
)

// TestMain fails the package when a run leaves a goroutine behind (servers, streams,
// HTTP clients, the simulated client's loop, Envoy's waiter). The test binary is also
// the grpc client the --client grpc runs start (grpcclient.ReexecCommand).
func TestMain(m *testing.M) {
	grpcclient.ChildMain()
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// teachingSteps is the built-in teaching scenario's steps.
func teachingSteps(t testing.TB) []scenario.Step {
	t.Helper()
	sc, err := scenario.Builtin("teaching")
	if err != nil {
		t.Fatal(err)
	}
	return sc.Steps
}
