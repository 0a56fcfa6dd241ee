// Command lab is the xDS Delta-vs-SotW workbench: it serves Envoy over ADS in either
// protocol, drives scenarios against real Envoy or a simulated client, and compares runs.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/xds-workbench/lab/experiments/runner"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		// An interrupted run exits like a shell's SIGINT, matching its run.exit.
		if errors.Is(err, runner.ErrInterrupted) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}
