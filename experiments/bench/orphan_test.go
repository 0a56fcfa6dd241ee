package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/childproc/childproctest"
)

// TestHelperTapParent is not a test on its own: TestCrashedParentLeavesNoTap runs the
// test binary as a parent that starts a tap subprocess (a stand-in, fakeTapMain), reports
// its pid, and waits to be killed.
func TestHelperTapParent(t *testing.T) {
	if !childproctest.IsHelper() {
		return // only meaningful as the child of TestCrashedParentLeavesNoTap
	}
	t.Setenv(fakeTapEnv, "1") // the subprocess inherits it
	dir := t.TempDir()
	outPath := filepath.Join(dir, "xds.tap.out")
	bt, err := startTapProcess([]string{os.Args[0]}, "127.0.0.1:1", filepath.Join(dir, "xds.tap.log"), outPath)
	require.NoError(t, err)
	childproctest.ReportChild(t, bt.pid(), bt.proc.Exited(), func() string {
		out, _ := os.ReadFile(outPath)
		return fmt.Sprintf("%v; output:\n%s", bt.proc.ExitErr(), out)
	})
}

// TestCrashedParentLeavesNoTap: a SIGKILLed `lab bench` leaves no `lab tap` behind.
func TestCrashedParentLeavesNoTap(t *testing.T) {
	childproctest.CrashParent(t, "TestHelperTapParent")
}
