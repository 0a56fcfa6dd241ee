package grpcclient

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

// childEnv marks a test binary re-executed to be a grpc client (ReexecCommand).
const childEnv = "LAB_GRPC_CLIENT_CHILD"

// ReexecCommand runs the grpc client as this test binary: a package whose tests start
// clients calls ChildMain first in its TestMain. Tests then need no lab binary built.
func ReexecCommand() Command {
	return Command{Path: os.Args[0], Env: []string{childEnv + "=1"}}
}

// ChildMain runs the client and exits when this process was started by ReexecCommand;
// otherwise it returns at once. Call it first in TestMain.
func ChildMain() {
	if os.Getenv(childEnv) != "1" {
		return
	}
	var o Options
	f := pflag.NewFlagSet("grpc-client", pflag.ContinueOnError)
	o.AddFlags(f)
	if err := f.Parse(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(RunMain(o))
}

// RunMain runs the client until SIGINT or SIGTERM and returns the exit code: what
// `lab grpc-client` and ChildMain both do.
func RunMain(o Options) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Serve(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
