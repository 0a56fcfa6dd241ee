package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/bench"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/xdslog"
)

func newBenchCmd() *cobra.Command {
	var (
		o        bench.Options
		versions []string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure how SotW's and delta's cost grows with the number of clusters and clients",
		Long: `For each cluster count N and each protocol (SotW with each version strategy, and
delta), starts a control plane on 127.0.0.1 with its own xds.log
(xds-<series>-N<N>.log), connects the client (real Envoy with --concurrency 1, or the
simulated Envoy), publishes the scaled state (clusters inventory-0000..N-1, one route
/quote/<i> each) and waits for the full ACK; then, --repeat times, moves ONE endpoint of
ONE cluster between two loopback backends and measures: responses, resources, redundant
resources and bytes sent; publish to last send and to the client's ACK; with Envoy,
publish to the first request on /quote/<i> answered by the new endpoint, Envoy's CPU
and RSS; and this process's CPU and heap.

With --clients K (simulated only) K fan-out clients share one node and the figures are
totals over all of them; these clients speak ADS like Envoy but ACK without validating,
so the time to the last ACK measures the control plane and the wire. Results: a table
here, and bench.json, bench.md and bench.svg in --out (with every xds log, bootstrap and
Envoy log).`,
		Example: `  # the documented sweep: real Envoy, both protocols, 5 repeats
  lab bench --client envoy --clusters 10,100,1000,10000 --repeat 5

  # quick look without Envoy
  lab bench --client sim --clusters 10,1000 --repeat 3

  # fan-out: one change pushed to 100 clients, delta vs SotW per-type
  lab bench --client sim --clients 100 --clusters 100,1000 --sotw-versions per-type`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.SotWVersions = nil
			for _, v := range versions {
				o.SotWVersions = append(o.SotWVersions, frontend.VersionStrategy(v))
			}
			// Options treats 0 clients as "the default, 1"; on the command line 0 is a mistake.
			if o.Clients == 0 {
				return fmt.Errorf("--clients: 0 is outside 1..%d", bench.MaxClients)
			}
			if cmd.Flags().Changed("sotw-versions") && !slices.Contains(o.Modes, xdslog.ModeSotW) {
				return errors.New("--sotw-versions applies to --modes sotw only")
			}
			o.Progress = cmd.OutOrStdout()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			_, err := bench.Run(ctx, o)
			return err
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&o.Clusters, "clusters", bench.DefaultClusters, "cluster counts N to measure (each >= 1)")
	f.IntVar(&o.Clients, "clients", 1, "clients per configuration, 1-1000 (more than 1 needs --client sim)")
	f.StringVar(&o.Client, "client", bench.ClientEnvoy, "data plane: envoy or sim")
	f.StringSliceVar(&o.Modes, "modes", bench.DefaultModes, "protocols: sotw, delta")
	f.StringSliceVar(&versions, "sotw-versions", []string{string(frontend.Uniform), string(frontend.PerType)}, "SotW version strategies: uniform, per-type")
	f.IntVar(&o.Repeat, "repeat", bench.DefaultRepeat, "single-endpoint changes per configuration (>= 1)")
	f.StringVar(&o.Out, "out", "", "output directory (default experiments/evidence/bench/<UTC time>-<PID>)")
	f.StringVar(&o.EnvoyBin, "envoy-bin", "", "Envoy binary (default: $ENVOY_BIN, the .venv binary, envoy on PATH)")
	f.DurationVar(&o.Timeout, "timeout", bench.DefaultTimeout, "deadline for each configuration")
	return cmd
}
