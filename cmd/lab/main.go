// Command lab is the xDS Delta-vs-SotW workbench: it serves Envoy over ADS in either
// protocol, drives scenarios against real Envoy or a simulated client, and compares runs.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
}
