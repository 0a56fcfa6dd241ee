package envoy

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/childproc/childproctest"
	"github.com/xds-workbench/lab/shared/loopback"
)

// TestHelperEnvoyParent is not a test on its own: TestCrashedParentLeavesNoEnvoy runs the
// test binary as a parent that starts Envoy, reports its pid, and waits to be killed.
func TestHelperEnvoyParent(t *testing.T) {
	if !childproctest.IsHelper() {
		return // only meaningful as the child of TestCrashedParentLeavesNoEnvoy
	}
	bin, err := Find("")
	require.NoError(t, err)
	unused, err := loopback.FreePort()
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(unused) })
	p, err := Start(context.Background(), Options{
		Binary:     bin,
		ConfigPath: writeFile(t, "envoy.yaml", fmt.Sprintf(adsBootstrap, unused)),
	})
	require.NoError(t, err)
	childproctest.ReportChild(t, p.Pid(), p.Exited(), func() string {
		return fmt.Sprintf("%v; %s", p.ExitErr(), p.diagnostics())
	})
}

func TestCrashedParentLeavesNoEnvoy(t *testing.T) {
	requireEnvoy(t)
	childproctest.CrashParent(t, "TestHelperEnvoyParent")
}
