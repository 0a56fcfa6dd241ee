package main

import (
	"context"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/mainjob"
	"github.com/xds-workbench/lab/experiments/runner"
)

func newReportCmd() *cobra.Command { return newReportCmdWith(runReport) }

// newReportCmdWith only parses flags; run does the work (tests pass their own).
func newReportCmdWith(run func(ctx context.Context, o mainjob.Options) error) *cobra.Command {
	o := mainjob.Options{Client: runner.ClientAuto, StepTimeout: 45 * time.Second}
	cmd := &cobra.Command{
		Use:   "report",
		Short: "The main job (make lab): five runs, a scale sweep and one report that answers what differs",
		Long: `report runs the teaching scenario in five configurations (SotW and delta with the
SnapshotCache, SotW per-type with hold, SotW and delta with the LinearCache), each on free
loopback ports, then a scale sweep with the simulated client (N = 1 to 1,000: one endpoint
change and one cluster add, both protocols and caches), and writes one report,
report.html, whose first screen says what differs between SotW and delta by the protocol,
by how much and why, with the scale chart. It prints a line per part and the protocols'
differences; each run's progress and the sweep's tables go to job.log in --out.`,
		Example: `  # what make lab runs
  lab report --out experiments/evidence/lab-$(date -u +%Y%m%dT%H%M%SZ)`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Out == "" {
				o.Out = filepath.Join("experiments", "evidence", "lab-"+time.Now().UTC().Format("20060102T150405Z"))
			}
			if err := o.Check(); err != nil {
				return badFlag("out", o.Out, "%v", err)
			}
			o.Stdout = cmd.OutOrStdout()
			ctx, stop := interruptible(cmd)
			defer stop()
			return run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Out, "out", "", "a new or empty directory for the evidence and the reports (default experiments/evidence/lab-<UTC time>)")
	f.Var(choiceValue{&o.Client, "data plane", []string{runner.ClientEnvoy, runner.ClientSim, runner.ClientAuto}}, "client",
		"the runs' data plane: envoy, sim (the simulated client, labelled as such) or auto (Envoy when found)")
	f.BoolVar(&o.Verbose, "verbose", false, "print every run's progress too (it always goes to job.log)")
	return cmd
}

// runReport runs the job; its lines are the job's own.
func runReport(ctx context.Context, o mainjob.Options) error {
	_, err := mainjob.Run(ctx, o)
	return err
}
