package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/experiments/sweep"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/scenario"
)

// sweepOptions are the flags of `lab sweep`.
type sweepOptions struct {
	scenario    string
	rates       []int
	connections int
	protocol    string
	mode        protocol.Mode
	cache       publish.Cache
	repeat      int
	out         string
	envoyBin    string
}

// Defaults of `lab sweep`, as documented in docs/running.md.
var (
	defaultSweepRates = []int{200, 1000, 2000, 5000, 8000, 12000}
	sweepRepeatRange  = intRange{1, 20}
)

func newSweepCmd() *cobra.Command { return newSweepCmdWith(sweep.RunAndPrint) }

// newSweepCmdWith only parses flags; run does the work (tests pass their own).
func newSweepCmdWith(run func(ctx context.Context, o sweep.Options, out io.Writer) error) *cobra.Command {
	o := sweepOptions{scenario: "under-load", rates: defaultSweepRates, connections: 4, protocol: string(load.HTTP2),
		mode: protocol.SotW, cache: publish.SnapshotCache, repeat: 1}
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Find the highest load one Envoy sustains while changes land, and what load adds to publish-to-ACK",
		Long: `sweep runs one scenario through real Envoy once without load and once at each --rates
value (requests per second over --connections, HTTP/1.1 or HTTP/2), interleaved for
--repeat rounds so that every rate sees the same machine. Per rate it prints the runs
that passed, the requests and failures, the lowest share of the asked rate a step
achieved, p99 and max latency, the publish-to-ACK median over the publish steps and its
ratio to the run without load, and Envoy's CPU. A rate is sustained when every run
passed (the scenario's traffic checks included) and every step kept 95% of its rate.
Each run's evidence is under OUT/rate-<R>/<round>; the report is OUT/sweep.json.`,
		Example: `  # the default sweep: under-load in SotW, 200 to 12,000 requests/s over 4 HTTP/2 connections
  lab sweep

  # three rounds, delta, HTTP/1.1 keep-alive
  lab sweep --mode delta --protocol http1 --rates 500,1000,2000 --repeat 3`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			so, err := o.sweepOptions()
			if err != nil {
				return err
			}
			so.Progress = cmd.ErrOrStderr()
			ctx, stop := interruptible(cmd)
			defer stop()
			return run(ctx, so, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", o.scenario, "built-in scenario name or scenario file")
	f.Var(intListValue{&o.rates, intRange{1, load.MaxRate}, fmt.Sprintf("requests per second, 1-%d each", load.MaxRate)}, "rates",
		"comma list of load rates (a run without load is always added)")
	f.Var(intValue{&o.connections, intRange{1, load.MaxConnections}}, "connections", fmt.Sprintf("connections the load uses (1-%d)", load.MaxConnections))
	f.Var(choiceValue{&o.protocol, "load protocol", []string{string(load.HTTP1), string(load.HTTP2)}}, "protocol",
		"http1 (keep-alive) or http2 (prior knowledge)")
	f.Var(modeValue{&o.mode}, "mode", "protocol: sotw or delta")
	f.Var(cacheValue{&o.cache}, "cache", cacheHelp)
	f.Var(intValue{&o.repeat, sweepRepeatRange}, "repeat", fmt.Sprintf("rounds over the rates (%s)", sweepRepeatRange))
	f.StringVar(&o.out, "out", "", `where the runs and sweep.json go (default experiments/evidence/sweep/<time>)`)
	f.StringVar(&o.envoyBin, "envoy-bin", "", "Envoy binary (default: ENVOY_BIN, then .venv, then PATH)")
	return cmd
}

// sweepOptions resolves the flags; the scenario is parsed and checked before anything runs.
func (o sweepOptions) sweepOptions() (sweep.Options, error) {
	sc, err := scenario.Load(o.scenario)
	if err != nil {
		return sweep.Options{}, err
	}
	p, _ := load.ParseProtocol(o.protocol) // the flag accepts only known names
	out, err := sweep.OutDir(o.out)
	if err != nil {
		return sweep.Options{}, outRefusal(err)
	}
	so := sweep.Options{Scenario: sc, Rates: o.rates, Connections: o.connections, Protocol: p, Mode: o.mode, Cache: o.cache,
		Repeat: o.repeat, Out: out, EnvoyBin: o.envoyBin}
	if err := so.Check(); err != nil {
		return sweep.Options{}, badFlag("rates", intListValue{p: &o.rates}.String(), "%v", err)
	}
	return so, nil
}
