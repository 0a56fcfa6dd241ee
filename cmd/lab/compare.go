package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/render"
	"github.com/xds-workbench/lab/experiments/mainjob"
)

func newCompareCmd() *cobra.Command { return newCompareCmdWith(render.Write) }

// compareLong is `lab compare --help`'s description.
const compareLong = `compare reads two or more runs and shows them side by side, a column per run: per scenario
step, what each control plane sent (responses per type, resources, redundant ones,
removals explicit or by absence), how the client answered (ACKs, NACKs, re-sends of
rejected content), bytes, timings and the data-plane result; every data-plane probe of
each step (failures by status and flags, and when the first and last failed); the
per-resource versions at the end of every step; findings computed from those figures;
and sequence diagrams (--step NAME, or every step in HTML).

With two runs, every finding says whether it is the protocol or an implementation (with
the xDS protocol section or the component, file and function as its source), or that it
is not attributed when nothing recorded explains it, under a headline naming what
differed most. The protocol is never a default: it needs a section of the protocol
document, and two runs of one protocol never differ by it. When the two runs' clients differ (run.json: Envoy
and grpc-go, lab run --client grpc), a Clients section sets the clients' own behaviour side
by side: subscription shape and ACK names, what each NACKs, says and keeps (its own view:
<step>-config.json or <step>-csds.json), how fast it NACKs re-sends, what and when it
re-sends on a reconnect, and a name that does not exist; each the protocol only where the
xDS protocol says so and both clients do so, otherwise each client's code.

With three or more, the columns are headed by what tells the runs apart (mode, cache, and
the SotW options where they differ: "sotw · snapshot · uniform", "delta · linear"), and
the findings are the SotW-vs-delta differences of every pair of a SotW and a delta run
with the same cache, compared across the pairs: protocol only when every pair shows it
alike with --cache snapshot and --cache linear and every cache and client given is in a
pair, implementation (naming the SnapshotCache's or LinearCache's code) when the cache or
another option changes it, and unattributed, in one line saying why, when the runs given
do not cover both caches or nothing explains the difference.

A RUN is a run directory (xds.log, optionally run.json and envoy.result) or an xds.log file;
each run is given once. A FOLDER of runs, as make lab writes (experiments/evidence/lab-<UTC
time>/), stands for every subdirectory of it that holds an xds.log, in name order; which
runs it took is said on stderr. Runs with different steps are compared on the steps all of them
share. A log that several lab serve sessions appended to is never merged: give it as
RUN_A or RUN_B and choose one with --session-a/--session-b. A run given as both RUN_A and
RUN_B is compared with a warning: every difference will be zero.

A text table wider than the terminal (or --width) is split into stacked tables, each
repeating the step column and a run's columns kept together where they fit; --wide keeps
every table whole, a row per line. The other formats are never split.`

// compareExample is `lab compare --help`'s examples.
const compareExample = `  # the runs this repository commits, to try it without running anything
  lab compare experiments/compare/testdata/sotw experiments/compare/testdata/delta

  # "make lab" writes its runs into experiments/evidence/lab-<UTC time>/ (its last line
  # names them): all five in name order, or SotW and delta with each cache, one text matrix
  run=experiments/evidence/lab-20261201T170000Z
  lab compare $run
  lab compare $run/sotw $run/delta $run/sotw-linear $run/delta-linear

  # the same as one self-contained HTML report (no script, no network)
  lab compare --format html --out report.html $run/sotw $run/delta $run/sotw-linear $run/delta-linear

  # two runs, one step with its sequence diagrams, as Markdown with Mermaid
  lab compare --format markdown --step port-change $run/sotw $run/delta

  # the first two sessions of lab serve's log (its default --log), the pushes before the
  # first step command only
  lab compare --step "(no step)" --session-a 1 --session-b 2 xds.log xds.log

  # the logs of two "lab run"s (each prints its directory: experiments/evidence/MODE/<UTC time>-<pid>)
  lab compare --format json experiments/evidence/sotw/20261201T170000Z-4242/xds.log experiments/evidence/delta/20261201T170105Z-4243/xds.log`

// newCompareCmdWith parses the command line into a render.Request and hands it to run
// (render.Write; tests pass their own to see the request).
func newCompareCmdWith(run func(r render.Request) error) *cobra.Command {
	o := &render.Request{Format: "text", Usage: compareUse, FolderOrder: mainjob.ConfigNames()}
	var wide bool
	cmd := &cobra.Command{
		Use:     compareUse,
		Short:   "Compare runs side by side: step table, versions, findings, sequence diagrams",
		Long:    compareLong,
		Example: compareExample,
		Args:    atLeastOneRun,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Runs, o.Stdout, o.Stderr = args, cmd.OutOrStdout(), cmd.ErrOrStderr()
			switch width := cmd.Flags().Changed("width"); {
			case wide && width:
				return badFlag("width", strconv.Itoa(o.Width), "not with --wide (want one of them)")
			case wide:
				o.Width = 0
			case !width:
				o.Width = defaultWidth(o.Stdout, os.Getenv("COLUMNS"))
			}
			return run(*o)
		},
	}
	f := cmd.Flags()
	f.Var(choiceValue{&o.Format, "format", render.Formats}, "format", "output format: "+strings.Join(render.Formats, ", "))
	f.StringVar(&o.Out, "out", "", "write the report to FILE instead of standard output")
	f.StringVar(&o.Step, "step", "", `show only this step, with its sequence diagrams ("`+compare.NoStep+`": the events before the first step)`)
	f.Var(intValue{&o.Width, widthRange}, "width", "split text tables wider than N columns into stacked ones, "+widthRange.String()+
		" (default: the terminal's width, else $COLUMNS, else 100)")
	f.BoolVar(&wide, "wide", false, "never split text tables: a row per line, however wide")
	// lab serve appends a session per start to the same xds.log; a log with several is
	// refused unless one is chosen (the error says how many there are).
	f.IntVar(&o.SessionA, "session-a", 0, "RUN_A's session, 1 for the first, when its xds.log holds several (lab serve appends one per start)")
	f.IntVar(&o.SessionB, "session-b", 0, "RUN_B's session, likewise")
	f.StringVar(&o.Scale, "scale", "", "show this scale sweep (a lab bench bench.json, make lab's scale.json) beside the runs: its chart and figures")
	return cmd
}

// widthRange bounds --width: below 40 columns no table of figures reads.
var widthRange = intRange{40, 10000}

// defaultWidth is the text tables' width when --width and --wide are not given: the
// terminal's when out is one, else COLUMNS (a shell's, when it exports it), else 100,
// the width the text report wraps its prose at.
func defaultWidth(out io.Writer, columns string) int {
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return max(w, widthRange.min)
		}
	}
	if n, err := strconv.Atoi(columns); err == nil && widthRange.check(n) == nil {
		return n
	}
	return 100
}

// compareUse is compare's usage: runs, or one folder of them.
const compareUse = "compare (RUN_A RUN_B [RUN...] | FOLDER)"

// atLeastOneRun wants runs, or a folder of them (render.Write counts the runs).
func atLeastOneRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("want two or more runs, or a folder of runs (usage: %s)", cmd.UseLine())
	}
	return nil
}
