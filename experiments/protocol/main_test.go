package protocol

import (
	"os"
	"testing"

	"github.com/xds-workbench/lab/experiments/leakcheck"
)

// TestMain fails the package when the tests leave a goroutine behind; newHarness also
// checks every test on its own (leakcheck.Verify).
func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m)) }
