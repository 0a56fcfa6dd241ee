package main

import (
	"os"
	"testing"

	"github.com/xds-workbench/lab/experiments/grpcclient"
)

// TestMain lets this test binary be the grpc client that serve --client grpc starts in
// the tests (grpcclient.ReexecCommand).
func TestMain(m *testing.M) {
	grpcclient.ChildMain()
	os.Exit(m.Run())
}
