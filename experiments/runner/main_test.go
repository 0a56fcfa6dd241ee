package runner

import (
	"os"
	"testing"

	"github.com/xds-workbench/lab/experiments/leakcheck"
)

// TestMain fails the package when a run leaves a goroutine behind (servers, streams,
// HTTP clients, the simulated client's loop, Envoy's waiter).
func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m)) }
