package protocol

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/xds-workbench/lab/experiments/testenv"
)

// TestMain fails the package when the tests leave a goroutine behind; newHarness also
// checks every test on its own (testenv.VerifyNoLeaks).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testenv.LeakOptions()...) }
