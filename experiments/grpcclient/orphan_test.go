package grpcclient

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/childproc/childproctest"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
)

// TestHelperClientParent is not a test on its own: TestCrashedParentLeavesNoClient runs
// the test binary as a parent that starts a grpc-go client, reports its pid, and waits
// to be killed.
func TestHelperClientParent(t *testing.T) {
	if !childproctest.IsHelper() {
		return // only meaningful as the child of TestCrashedParentLeavesNoClient
	}
	// No control plane: the client need only run, not converge.
	unused, err := loopback.FreePort()
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(unused) })
	c, err := Start(context.Background(), StartOptions{Command: ReexecCommand(), XDSAddr: loopback.Addr(unused), NodeID: resources.NodeID})
	require.NoError(t, err)
	childproctest.ReportChild(t, c.Pid(), c.Exited(), func() string {
		return fmt.Sprintf("%v; %s", c.ExitErr(), c.diagnostics())
	})
}

func TestCrashedParentLeavesNoClient(t *testing.T) {
	childproctest.CrashParent(t, "TestHelperClientParent")
}
