package bench

import (
	"os"
	"testing"

	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/leakcheck"
)

// TestMain fails the package when a sweep leaves a goroutine behind (control planes,
// backends, probes, the simulated and fan-out clients, Envoy's waiter).
// A test binary re-executed as a grpc-go client (grpcclient.ReexecCommand) runs the
// client instead.
func TestMain(m *testing.M) {
	grpcclient.ChildMain()
	os.Exit(leakcheck.Main(m))
}
