package bench

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/testenv"
)

// TestMain fails the package when a sweep leaves a goroutine behind (control planes,
// backends, probes, the simulated and fan-out clients, Envoy's waiter).
// A test binary re-executed as a grpc-go client (grpcclient.ReexecCommand) runs the
// client instead.
func TestMain(m *testing.M) {
	grpcclient.ChildMain()
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}
