package gcpserver

import (
	"os"
	"testing"

	"github.com/xds-workbench/lab/experiments/leakcheck"
)

// TestMain fails the package when a test leaves a goroutine behind (the output reader,
// the process waiter, the upstream).
func TestMain(m *testing.M) {
	code := leakcheck.Main(m)
	RemoveBuilt()
	os.Exit(code)
}
