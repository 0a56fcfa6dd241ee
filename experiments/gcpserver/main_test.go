package gcpserver

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/xds-workbench/lab/experiments/testenv"
)

// TestMain fails the package when a test leaves a goroutine behind (the output reader,
// the process waiter, the upstream), then removes the server binary the tests built.
// goleak.VerifyTestMain would exit before that removal, so the check is goleak.Find.
func TestMain(m *testing.M) {
	opts := testenv.LeakOptions() // the baseline is taken before the tests run
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	RemoveBuilt()
	os.Exit(code)
}
