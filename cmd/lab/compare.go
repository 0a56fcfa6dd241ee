package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/compare"
)

func newCompareCmd() *cobra.Command {
	var format, out, step string
	var sessionA, sessionB int
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs side by side: step table, versions, findings, sequence diagrams",
		Long: `compare reads two runs and shows them side by side: per scenario step, what each control
plane sent (responses per type, resources, redundant ones, removals explicit or by absence),
how the client answered (ACKs, NACKs, re-sends of rejected content), bytes, timings and the
data-plane result; the per-resource versions at the end of every step; findings computed
from those figures, each saying whether it is the protocol or an implementation (with
the xDS protocol section or the go-control-plane component as its source), under a
headline naming what differed most; and sequence diagrams (--step NAME, or every step in
HTML).

A RUN is a run directory (xds.log, optionally run.json and envoy.result) or an xds.log file.
Runs with different steps are compared on the steps they share. A log that several
lab serve sessions appended to is never merged: choose one with --session-a/--session-b.`,
		Example: `  # the two runs of "make lab", as a text table
  lab compare experiments/evidence/latest/sotw experiments/evidence/latest/delta

  # one step with its sequence diagrams, as Markdown with Mermaid
  lab compare --format markdown --step port-change runs/sotw runs/delta

  # a self-contained HTML report (no script, no network)
  lab compare --format html --out compare.html runs/sotw runs/delta

  # two bare logs
  lab compare sotw/xds.log delta/xds.log --format json`,
		Args: twoRuns,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := compare.LoadSession("A", args[0], sessionA)
			if err != nil {
				return err
			}
			b, err := compare.LoadSession("B", args[1], sessionB)
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
	format = "text"
	f.Var(choiceValue{&format, "format", compare.Formats}, "format", "output format: "+strings.Join(compare.Formats, ", "))
	f.StringVar(&out, "out", "", "write the report to FILE instead of standard output")
	f.StringVar(&step, "step", "", "show only this step, with its sequence diagrams")
	// lab serve appends a session per start to the same xds.log; a log with several is
	// refused unless one is chosen (the error says how many there are).
	f.IntVar(&sessionA, "session-a", 0, "RUN_A's session, 1 for the first, when its xds.log holds several (lab serve appends one per start)")
	f.IntVar(&sessionB, "session-b", 0, "RUN_B's session, likewise")
	return cmd
}

// twoRuns wants exactly the two runs to compare.
func twoRuns(cmd *cobra.Command, args []string) error {
	switch len(args) {
	case 2:
		return nil
	case 0:
		return fmt.Errorf("want two runs (usage: %s)", cmd.UseLine())
	}
	return fmt.Errorf("want two runs, got %d (usage: %s)", len(args), cmd.UseLine())
}
