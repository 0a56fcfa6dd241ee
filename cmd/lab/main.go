// Command lab is the xDS Delta-vs-SotW workbench: it serves Envoy over ADS in either
// protocol, drives scenarios against real Envoy or a simulated client, and compares runs.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/runner"
)

func main() {
	// A closed standard output (lab run | head) must not kill a run before it has written
	// its evidence. Unless SIGPIPE is notified, Go dies of it on a write to a broken fd 1
	// or 2; notified, the write returns EPIPE and the progress writer drops the rest
	// (os/signal, "SIGPIPE"). The channel is never read: Notify does not block on it. A
	// handler, unlike an ignored signal, is reset on exec, so Envoy is unaffected.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	os.Exit(execute(newRootCmd(), os.Args[1:], os.Stderr))
}

// execute runs root on args and prints its error as one line naming the command that
// failed, "lab <command>: ...". It returns the exit code: 130 for an interrupted run
// (like a shell's SIGINT, matching its run.exit), 1 for any other error.
func execute(root *cobra.Command, args []string, stderr io.Writer) int {
	if err := unknownCommand(root, args); err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", root.CommandPath(), err)
		return 1
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	path := root.CommandPath()
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %s\n", path, strings.ReplaceAll(err.Error(), "\n", " "))
	if errors.Is(err, runner.ErrInterrupted) {
		return 130
	}
	return 1
}
