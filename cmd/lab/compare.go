package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/compare"
)

func newCompareCmd() *cobra.Command {
	var format, out, step string
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs side by side: step table, versions, findings, sequence diagrams",
		Long: `compare reads two runs and shows them side by side: per scenario step, what each control
plane sent (responses per type, resources, redundant ones, removals explicit or by absence),
how the client answered (ACKs, NACKs, re-sends of rejected content), bytes, timings and the
data-plane result; the per-resource versions at the end of every step; findings computed
from those figures; and sequence diagrams (--step NAME, or every step in HTML).

A RUN is a run directory (xds.log, optionally run.json and envoy.result) or an xds.log file.
Runs with different steps are compared on the steps they share.`,
		Example: `  # the two runs of "make lab", as a text table
  lab compare experiments/evidence/latest/sotw experiments/evidence/latest/delta

  # one step with its sequence diagrams, as Markdown with Mermaid
  lab compare --format markdown --step port-change runs/sotw runs/delta

  # a self-contained HTML report (no script, no network)
  lab compare --format html --out compare.html runs/sotw runs/delta

  # two bare logs
  lab compare sotw/xds.log delta/xds.log --format json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(compare.Formats, format) {
				return fmt.Errorf("unknown --format %q (want %s)", format, strings.Join(compare.Formats, ", "))
			}
			a, err := compare.Load("A", args[0])
			if err != nil {
				return err
			}
			b, err := compare.Load("B", args[1])
			if err != nil {
				return err
			}
			rep, err := compare.Compare(a, b, compare.Options{Step: step})
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := compare.Render(&buf, rep, format); err != nil {
				return err
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				return fmt.Errorf("write report: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%s, %d bytes)\n", out, format, buf.Len())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", "text", "output format: "+strings.Join(compare.Formats, ", "))
	f.StringVar(&out, "out", "", "write the report to FILE instead of standard output")
	f.StringVar(&step, "step", "", "show only this step, with its sequence diagrams")
	return cmd
}
