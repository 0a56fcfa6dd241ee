// Package grpcclienttest gives a test the command that runs grpc-go's client as a
// process, or skips the test under -short: a grpc-go process is not a unit or bufconn
// test, so make test-fast leaves it to make test.
package grpcclienttest

import (
	"testing"

	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/testenv"
)

// Command returns grpcclient.ReexecCommand (this test binary, re-executed as the client:
// its TestMain must call grpcclient.ChildMain first), after skipping t under -short.
func Command(t testing.TB) grpcclient.Command {
	t.Helper()
	testenv.SkipIfShort(t, testenv.NeedsGRPCClient)
	return grpcclient.ReexecCommand()
}
