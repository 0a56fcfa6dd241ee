package main

import (
	"runtime/debug"

	"github.com/spf13/cobra"
)

// newRootCmd assembles the CLI. Each subcommand lives in its own file with its flags.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "lab",
		Short:         "xDS Delta-vs-SotW workbench for Envoy",
		SilenceUsage:  true,
		SilenceErrors: true,
		// lab --version prints what lab version prints (the template calls it at print
		// time: the Envoy probe runs only when asked).
		Version: mainVersion(),
	}
	root.SetVersionTemplate("{{labVersionReport}}")
	// pflag's parse errors, reworded like every other error: "--flag VALUE: ...".
	root.SetFlagErrorFunc(rewordFlagError)
	root.AddCommand(
		// subcommands are added here, one line each
		newServeCmd(),
		newBootstrapCmd(),
		newInventoryCmd(),
		newCompareCmd(),
		newRunCmd(),
		newReportCmd(),
		newScenariosCmd(),
		newBenchCmd(),
		newSweepCmd(),
		newChurnCmd(),
		newVersionCmd(),
		newTapCmd(),
		newGRPCClientCmd(),
	)
	registerCompletions(root)
	return root
}

func init() {
	cobra.AddTemplateFunc("labVersionReport", func() string { return versionReport("") })
}

// mainVersion is the lab module's version ("(devel)" when the build does not say).
func mainVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
