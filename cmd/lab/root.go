package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/version"
	"github.com/xds-workbench/lab/shared/suggest"
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
		// A mistyped command is refused by unknownCommand, with the suggestion rule every
		// other name has (shared/suggest), not cobra's own.
		DisableSuggestions: true,
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
	cobra.AddTemplateFunc("labVersionReport", func() string { return version.Report("") })
}

// mainVersion is the lab module's version ("(devel)" when the build does not say).
func mainVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// unknownCommand refuses a first word that names no command of root, in the style of
// every refusal ("serv: unknown command; did you mean serve? (see lab --help)"), or
// returns nil and leaves the command line to cobra.
func unknownCommand(root *cobra.Command, args []string) error {
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		return nil // a shell asking for completions: cobra adds that command when it executes
	}
	// Likewise help and completion: add them now, to find and suggest them too.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	cmd, rest, err := root.Find(args)
	if err == nil || cmd != root {
		return nil
	}
	word := ""
	for _, a := range rest {
		if !strings.HasPrefix(a, "-") { // the root's own flags take no value
			word = a
			break
		}
	}
	if word == "" {
		return nil
	}
	var names []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() || c.Name() == "help" {
			names = append(names, c.Name())
			names = append(names, c.Aliases...)
		}
	}
	return fmt.Errorf("%s: unknown command%s (see %s --help)", showValue(word), suggest.Hint(word, names, ""), root.CommandPath())
}

// interruptible is the command's context, cancelled by SIGINT or SIGTERM (every command
// that runs until interrupted, or cleans up when it is).
func interruptible(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
}
