package gcpserver

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/childproc/childproctest"
	"github.com/xds-workbench/lab/shared/loopback"
)

// serverBinEnv hands the helper parent the server its parent test built: it is built
// once, not once per process.
const serverBinEnv = "LAB_GCPSERVER_HELPER_BIN"

// TestHelperServerParent is not a test on its own: TestCrashedParentLeavesNoServer runs
// the test binary as a parent that starts the server, reports its pid, and waits to be
// killed. No Envoy: the server waits a minute for its first request, long enough.
func TestHelperServerParent(t *testing.T) {
	if !childproctest.IsHelper() {
		return // only meaningful as the child of TestCrashedParentLeavesNoServer
	}
	base, err := FreeBase(1)
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(base) })
	o := Options{
		Mode: ModeADS, Port: freePort(t), GatewayPort: freePort(t), ALSPort: freePort(t), UpstreamPort: freePort(t),
		BasePort: base, NodeID: "lab-gcp-orphan", Updates: 1, Requests: 1, HTTPListeners: 1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := Start(ctx, os.Getenv(serverBinEnv), o)
	require.NoError(t, err)
	childproctest.ReportChild(t, srv.proc.Pid(), srv.Exited(), func() string {
		return fmt.Sprintf("%v; output tail:\n%s", srv.ExitErr(), tail(srv.Lines(), 10))
	})
}

func TestCrashedParentLeavesNoServer(t *testing.T) {
	childproctest.CrashParent(t, "TestHelperServerParent", serverBinEnv+"="+serverBinary(t))
}
