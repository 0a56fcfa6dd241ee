package main

import (
	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/shared/scenario"
)

func newScenariosCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenarios [NAME|FILE]",
		Short: "List the built-in scenarios, or print one to copy and change",
		Long: `scenarios lists the built-in scenarios, one line each: name, steps, what it shows.
With a name it prints that scenario's file, the format a user's own scenario uses
(docs/scenarios.md); with a file it checks the file and lists its steps. Run one with
lab run --scenario NAME|FILE, or the whole pack with --scenario all.`,
		Example: `  lab scenarios
  lab scenarios warming-order > my-scenario.yaml
  lab scenarios my-scenario.yaml
  lab run --mode delta --scenario my-scenario.yaml`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: scenarioArgCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			show := "" // a scenario (built-in or file) to print instead of the list
			if len(args) == 1 {
				show = args[0]
			}
			return scenario.Print(cmd.OutOrStdout(), show)
		},
	}
	return cmd
}
