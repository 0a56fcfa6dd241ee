package bench

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/testenv"
)

// TestMain fails the package when a sweep leaves a goroutine behind (control planes,
// backends, probes, the simulated and fan-out clients, Envoy's waiter).
// A test binary re-executed as a grpc-go client (grpcclient.ReexecCommand) runs the
// client instead, and one re-executed as a stand-in tap (fakeTapEnv) runs that.
func TestMain(m *testing.M) {
	grpcclient.ChildMain()
	fakeTapMain()
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// fakeTapEnv makes this test binary a stand-in `lab tap` (TestCrashedParentLeavesNoTap).
const fakeTapEnv = "LAB_BENCH_FAKE_TAP"

// fakeTapMain, when fakeTapEnv is set, says where it listens as `lab tap` does and then
// waits for SIGTERM, whatever its stdin does: only a signal ends it, so a test that sees
// it gone after its parent's death proves Pdeathsig.
func fakeTapMain() {
	if os.Getenv(fakeTapEnv) != "1" {
		return
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Println("tapping ADS on 127.0.0.1:1 -> (a stand-in tap); step names from stdin, one a line")
	<-term
	os.Exit(0)
}
