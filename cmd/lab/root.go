package main

import "github.com/spf13/cobra"

// newRootCmd assembles the CLI. Each subcommand lives in its own file with its flags.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "lab",
		Short:         "xDS Delta-vs-SotW workbench for Envoy",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// pflag's parse errors, reworded like every other error: "--flag VALUE: ...".
	root.SetFlagErrorFunc(rewordFlagError)
	root.AddCommand(
		// subcommands are added here, one line each
		newServeCmd(),
		newBootstrapCmd(),
		newInventoryCmd(),
		newCompareCmd(),
		newRunCmd(),
		newScenariosCmd(),
		newBenchCmd(),
		newSweepCmd(),
	)
	return root
}
