package serve

import (
	"os"
	"testing"

	"github.com/xds-workbench/lab/experiments/grpcclient"
)

// TestMain lets this test binary be the grpc client that serve with ClientGRPC starts in
// the tests (grpcclienttest.Command re-executes it).
func TestMain(m *testing.M) {
	grpcclient.ChildMain()
	os.Exit(m.Run())
}
