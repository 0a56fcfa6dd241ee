package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/shared/scenario"
)

// scenariosOptions are the arguments of `lab scenarios`.
type scenariosOptions struct {
	// show names a scenario (built-in or file) to print instead of the list.
	show string
}

func newScenariosCmd() *cobra.Command {
	var o scenariosOptions
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
			if len(args) == 1 {
				o.show = args[0]
			}
			return runScenarios(o, cmd.OutOrStdout())
		},
	}
	return cmd
}

func runScenarios(o scenariosOptions, out io.Writer) error {
	if o.show == "" {
		pack, err := scenario.Pack()
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, sc := range pack {
			fmt.Fprintf(tw, "%s\t%d steps\t%s\n", sc.Name, len(sc.Steps), firstSentence(sc.Description))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write the list: %w", err)
		}
		return nil
	}
	if src, err := scenario.BuiltinSource(o.show); err == nil {
		if _, err := out.Write(src); err != nil {
			return fmt.Errorf("write scenario: %w", err)
		}
		return nil
	}
	sc, err := scenario.Load(o.show)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s (%s): %s\n", sc.Name, sc.File, sc.Description)
	for i, st := range sc.Steps {
		fmt.Fprintf(out, "  %d. %s [%s] %s\n", i+1, st.Name, st.Action, st.Proves)
	}
	return nil
}

// firstSentence keeps a description's first sentence for the one-line list.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
