package main

import (
	"errors"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/bench"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Ranges of `lab bench`'s counts and durations.
var (
	benchClustersRange = intRange{1, bench.MaxClusters}
	benchClientsRange  = intRange{1, bench.MaxClients}
	benchRepeatRange   = intRange{1, bench.MaxRepeat}
	benchTimeoutRange  = durationRange{time.Second, time.Hour}
)

// benchOptions are the flags of `lab bench`; benchRunOptions turns them into bench.Options.
type benchOptions struct {
	bench    bench.Options
	versions []string
	given    func(flag string) bool // cobra's Changed
}

func defaultBenchOptions() benchOptions {
	return benchOptions{
		bench: bench.Options{
			Clusters: bench.DefaultClusters,
			Clients:  1,
			Client:   bench.ClientEnvoy,
			Modes:    bench.DefaultModes,
			Repeat:   bench.DefaultRepeat,
			Timeout:  bench.DefaultTimeout,
		},
		versions: []string{string(frontend.Uniform), string(frontend.PerType)},
		given:    func(string) bool { return false },
	}
}

func newBenchCmd() *cobra.Command {
	o := defaultBenchOptions()
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
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.given = cmd.Flags().Changed
			bo, err := o.benchRunOptions()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			bo.Progress = newProgressWriter(cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.CommandPath())
			_, err = bench.Run(ctx, bo)
			return err
		},
	}
	f := cmd.Flags()
	f.Var(intListValue{&o.bench.Clusters, benchClustersRange, "a comma list of cluster counts >= 1, e.g. 10,100"}, "clusters",
		"cluster counts N to measure, each "+benchClustersRange.String())
	f.Var(intValue{&o.bench.Clients, benchClientsRange}, "clients", "clients per configuration, "+benchClientsRange.String()+" (more than 1 needs --client sim)")
	f.Var(choiceValue{&o.bench.Client, "data plane", []string{bench.ClientEnvoy, bench.ClientSim}}, "client", "data plane: envoy or sim")
	f.Var(choiceListValue{&o.bench.Modes, func(s string) error { _, err := parseMode(s); return err }}, "modes", "protocols: sotw, delta")
	f.Var(choiceListValue{&o.versions, parseVersionStrategy}, "sotw-versions", "SotW version strategies: uniform, per-type")
	f.Var(intValue{&o.bench.Repeat, benchRepeatRange}, "repeat", "single-endpoint changes per configuration, "+benchRepeatRange.String())
	f.StringVar(&o.bench.Out, "out", "", "output directory, new or empty (default experiments/evidence/bench/<UTC time>-<PID>)")
	f.StringVar(&o.bench.EnvoyBin, "envoy-bin", "", "Envoy binary (default: $ENVOY_BIN, the .venv binary, envoy on PATH)")
	f.Var(durationValue{&o.bench.Timeout, benchTimeoutRange}, "timeout", "deadline for each configuration, "+benchTimeoutRange.String())
	return cmd
}

// benchRunOptions checks what the flags could not check one by one; nothing has
// started yet.
func (o *benchOptions) benchRunOptions() (bench.Options, error) {
	b := o.bench
	b.SotWVersions = nil
	for _, v := range o.versions {
		b.SotWVersions = append(b.SotWVersions, frontend.VersionStrategy(v))
	}
	if b.Clients > 1 && b.Client != bench.ClientSim {
		return b, badFlag("clients", strconv.Itoa(b.Clients), "more than one client needs --client sim (the bench runs one Envoy)")
	}
	if o.given("sotw-versions") && !slices.Contains(b.Modes, xdslog.ModeSotW) {
		return b, badFlag("sotw-versions", strings.Join(o.versions, ","), "SotW only (want sotw in --modes, or no --sotw-versions)")
	}
	// A second bench in the same directory would leave the first one's logs beside its own.
	if err := checkOut(b.Out, holdsAnything, "a new or empty directory"); err != nil {
		return b, err
	}
	// The library's own check, for anything the CLI does not cover.
	check := b
	if err := check.Validate(); err != nil {
		return b, err
	}
	return b, nil
}

// parseVersionStrategy is one SotW version strategy; "" (the library's default) is not a
// name on the command line.
func parseVersionStrategy(s string) error {
	if s == "" {
		return errors.New("empty (want uniform or per-type)")
	}
	if _, err := frontend.ParseVersionStrategy(s); err != nil {
		return errors.New("unknown version strategy (want uniform or per-type)")
	}
	return nil
}
