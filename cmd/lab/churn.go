package main

import (
	"context"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/churn"
)

// churnFlagOf maps churn's option names to the flags that set them.
var churnFlagOf = map[string]string{
	"clients": "clients", "publish rate": "publish-rate", "envoys": "envoys", "kill interval": "kill-max",
	"client lifetime": "lifetime-max", "sample interval": "sample-every", "baseline": "baseline",
	"nack rate": "nack-rate", "output directory": "out",
}

func newChurnCmd() *cobra.Command { return newChurnCmdWith(runChurn) }

// newChurnCmdWith only parses flags; run does the work (tests pass their own).
func newChurnCmdWith(run func(ctx context.Context, o churn.Options, out, progress io.Writer) error) *cobra.Command {
	var (
		o       churn.Options
		minutes float64
	)
	cmd := &cobra.Command{
		Use:   "churn",
		Short: "Soak the control planes under client churn and Envoy restarts; fail on growth, a lost log line or an orphan",
		Long: `churn runs a SotW and a delta control plane in this process, --clients simulated clients
(half on each, each its own gRPC connection) that connect, subscribe, ACK, NACK a
--nack-rate share and leave after a random lifetime to be replaced, --envoys real Envoys
killed (SIGKILL) and restarted every --kill-min to --kill-max, and --publish-rate
changes per second, for --minutes. Every --sample-every it samples heap, goroutines,
open fds and the xds.log sizes (samples.csv, samples.svg). It fails (exit 1) when heap,
goroutines or fds end more than 10% over their level at --baseline, when the logs'
bytes per publish grow, when an xds.log line is torn or a send has neither ACK/NACK nor
stream close, or when a process is left (docs/reliability.md, "Churn soak").`,
		Example: `  # the issue's soak: 10 minutes, 1,000 clients, 10 changes/s, 3 Envoys
  lab churn --out experiments/evidence/churn

  # two minutes without Envoy
  lab churn --minutes 2 --no-envoys --out /tmp/churn`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Duration = time.Duration(minutes * float64(time.Minute))
			o.NoEnvoys = o.NoEnvoys || o.Envoys == 0
			if o.Out == "" {
				o.Out = filepath.Join("experiments", "evidence", "churn-"+time.Now().UTC().Format("20060102T150405Z"))
			}
			ctx, stop := interruptible(cmd)
			defer stop()
			return run(ctx, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.Float64Var(&minutes, "minutes", churn.DefaultDuration.Minutes(), "how long the soak runs")
	f.IntVar(&o.Clients, "clients", churn.DefaultClients, "simulated clients connected at any time (half SotW, half delta)")
	f.IntVar(&o.PublishRate, "publish-rate", churn.DefaultPublishRate, "changes published per second")
	f.IntVar(&o.Envoys, "envoys", churn.DefaultEnvoys, "real Envoys killed and restarted (every other one delta)")
	f.BoolVar(&o.NoEnvoys, "no-envoys", false, "run without Envoy")
	f.DurationVar(&o.KillMin, "kill-min", churn.DefaultKillMin, "shortest life of an Envoy before its SIGKILL")
	f.DurationVar(&o.KillMax, "kill-max", churn.DefaultKillMax, "longest life of an Envoy before its SIGKILL")
	f.DurationVar(&o.LifetimeMin, "lifetime-min", churn.DefaultLifetimeMin, "shortest life of a simulated client")
	f.DurationVar(&o.LifetimeMax, "lifetime-max", churn.DefaultLifetimeMax, "longest life of a simulated client")
	f.Float64Var(&o.NackRate, "nack-rate", churn.DefaultNackRate, "share of valid responses a simulated client NACKs")
	f.DurationVar(&o.SampleEvery, "sample-every", churn.DefaultSampleEvery, "sampling period")
	f.DurationVar(&o.Baseline, "baseline", churn.DefaultBaseline, "when the growth verdicts take their reference level")
	f.Int64Var(&o.Seed, "seed", 0, "seed of every random choice (default: the start time)")
	f.StringVar(&o.Out, "out", "", "where the logs, samples and report go (default experiments/evidence/churn-<time>)")
	f.StringVar(&o.EnvoyBin, "envoy-bin", "", "Envoy binary (default: ENVOY_BIN, then .venv, then PATH)")
	return cmd
}

// runChurn is churn.RunAndReport with its refusals worded as flags.
func runChurn(ctx context.Context, o churn.Options, out, progress io.Writer) error {
	return optionRefusal(churn.RunAndReport(ctx, o, out, progress), churnFlagOf)
}
