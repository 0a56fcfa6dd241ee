package bench

import (
	"os"
	"testing"

	"github.com/xds-workbench/lab/experiments/leakcheck"
)

// TestMain fails the package when a sweep leaves a goroutine behind (control planes,
// backends, probes, the simulated and fan-out clients, Envoy's waiter).
func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m)) }
