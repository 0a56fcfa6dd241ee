package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/experiments/progress"
	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdsmetrics"
	"github.com/xds-workbench/lab/sotw"
)

// Ranges of `lab run`'s durations.
var (
	stepTimeoutRange = durationRange{Min: time.Second, Max: time.Hour}
	outageRange      = durationRange{Max: 10 * time.Minute}
)

// runOptions are the flags of `lab run`; runnerOptions turns them into runner.Options.
type runOptions struct {
	run        runner.Options
	xdsAddr    string
	versions   string
	nackPolicy string
	// freePorts: every port flag not given takes a free loopback port instead of its
	// default, so `make lab` works while the defaults are taken.
	freePorts bool
	// scenario is --scenario: a built-in name, a file, or "all" (the pack).
	scenario string
	// loadProtocol is --protocol.
	loadProtocol string
	// metricsAddr serves Prometheus metrics there for the whole run ("": off).
	metricsAddr string
	// given reports whether a flag was on the command line (cobra's Changed).
	given func(flag string) bool
}

func defaultRunOptions() runOptions {
	return runOptions{
		run: runner.Options{
			Client:         runner.ClientAuto,
			ListenerPort:   19000,
			AdminPort:      9901,
			Cache:          publish.SnapshotCache,
			InventoryPorts: [2]int{18080, 18081},
			StepTimeout:    45 * time.Second,
		},
		xdsAddr:  controlplane.DefaultAddr,
		scenario: "teaching",
		given:    func(string) bool { return false },
	}
}

func newRunCmd() *cobra.Command { return newRunCmdWith(runRun) }

// runLong is `lab run --help`'s description.
const runLong = `Starts the control plane in the chosen front end, the scenario's inventory backends,
and Envoy with the matching bootstrap, then runs the scenario's steps (--scenario: a
built-in name, a file in the format of docs/scenarios.md, or all for the whole pack;
lab scenarios lists them). The default, teaching, runs: initial, port-change,
invalid-route, recover, envoy-restart, control-plane-restart, remove-cluster, restore.
Each step acts (publish, restart or kill Envoy, restart the control plane, wait), waits
(with a deadline) for the ACK or NACK in xds.log, then checks what the step expects:
requests with fresh x-request-ids through Envoy until the expected backend answers, a
traffic window probing every few milliseconds, Envoy's config dump and stats. The run
directory keeps xds.log, one checkpoint per step, Envoy's config dumps, stats, logs and
access log, the inventory logs, summary.json, envoy.result and run.exit; they are
written even when a step fails or the run is interrupted. With --scenario all each
scenario gets its own directory under the run directory.

With --client=sim (or auto when no Envoy is found) the steps run against the simulated
client and envoy.result says NOT_RUN: no data-plane result is reported that Envoy did
not produce.

With --client=grpc (SotW only) the data plane is grpc-go's own xDS client, served the
listener as an api_listener: each request is one RPC through its front door on the
listener port, each step keeps its CSDS view (<step>-csds.json), and checks of Envoy's
stats and config dump are listed as not checked.

Ports (all on 127.0.0.1) default to xDS 18000, listener 19000, admin 9901, inventory
18080 and 18081. A port already in use is refused before anything starts, naming the
process that holds it when /proc tells. --free-ports picks a free port for every port
flag not given (run.json records which), so a run works while the defaults are taken,
e.g. by a lab serve in another terminal; make lab uses it.

A closed standard output (lab run | head) costs only the progress lines: the run goes on,
writes every file, and the exit code is the run's own.`

// runExample is `lab run --help`'s examples.
const runExample = `  # real Envoy (install it with: make envoy)
  lab run --mode=sotw
  lab run --mode=delta --out /tmp/delta-run

  # free loopback ports instead of the defaults (what make lab does)
  lab run --mode=delta --free-ports

  # SotW with per-type versions and no NACK re-sends
  lab run --mode=sotw --sotw-versions per-type --nack-policy hold

  # go-control-plane's LinearCache per type (SotW RDS/EDS responses carry only changes)
  lab run --mode=sotw --cache linear

  # grpc-go's proxyless xDS client as the data plane (SotW only)
  lab run --mode=sotw --client=grpc --steps initial,port-change,invalid-route,recover

  # no Envoy: the simulated client (data plane NOT_RUN)
  lab run --mode=delta --client=sim

  # failure windows: a 5s control-plane outage; state changes during the reconnect
  lab run --mode=delta --outage 5s --publish-during-reconnect

  # another built-in scenario, a file of your own, or the whole pack
  lab run --mode=sotw --scenario warming-order --free-ports
  lab run --mode=delta --scenario my-scenario.yaml
  lab run --mode=sotw --cache linear --scenario all --free-ports

  # Envoy's own NACK throttle, merged over the bootstrap
  lab run --mode=sotw --scenario nack-policies --config-yaml '{dynamic_resources: {ads_config: {rate_limit_settings: {max_tokens: 5, fill_rate: 2}}}}'`

// newRunCmdWith parses the flags into runner options and hands them to run (tests pass
// their own to see the options).
func newRunCmdWith(run func(ctx context.Context, o runner.Options, progress io.Writer) error) *cobra.Command {
	o := defaultRunOptions()
	cmd := &cobra.Command{
		Use:     "run --mode=sotw|delta",
		Short:   "Drive Envoy (or the simulated client) through every scenario step and keep the evidence",
		Long:    runLong,
		Example: runExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.given = cmd.Flags().Changed
			scs, err := o.scenarios()
			if err != nil {
				return err
			}
			ro, err := o.runnerOptions(scs[0])
			if err != nil {
				return err
			}
			ctx, stop := interruptible(cmd)
			defer stop()
			pw := progress.NewWriter(cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.CommandPath())
			metrics, stopMetrics, err := xdsmetrics.Start(o.metricsAddr, ro.Mode, string(ro.Cache), pw, "["+ro.Mode.String()+"] ")
			if err != nil {
				return optionRefusal(err, runFlagOf)
			}
			defer stopMetrics()
			if metrics != nil {
				ro.Observer = metrics.Observe
			}
			if len(scs) == 1 && o.scenario != scenarioAll {
				return run(ctx, ro, pw)
			}
			return runner.RunPack(ctx, ro, scs, run, pw)
		},
	}
	f := cmd.Flags()
	f.Var(modeValue{&o.run.Mode}, "mode", "protocol: sotw or delta (required)")
	f.Var(choiceValue{&o.run.Client, "data plane", []string{runner.ClientEnvoy, runner.ClientGRPC, runner.ClientSim, runner.ClientAuto}}, "client",
		"data plane: envoy, grpc (grpc-go's xDS client; sotw only), sim, or auto (Envoy when found, else the simulated client)")
	f.StringVar(&o.run.Out, "out", "", "run directory, new or without a run (default experiments/evidence/<mode>/<UTC time>-<PID>)")
	f.Var(choiceValue{&o.versions, "version strategy", []string{string(publish.Uniform), string(publish.PerType)}}, "sotw-versions",
		"SotW version strategy: uniform (default) or per-type")
	f.Var(choiceValue{&o.nackPolicy, "NACK policy", sotw.PolicyNames()}, "nack-policy", nackPolicyHelp)
	f.Var(cacheValue{&o.run.Cache}, "cache", cacheHelp)
	f.StringVar(&o.run.EnvoyBin, "envoy-bin", "", "Envoy binary (default: $ENVOY_BIN, the .venv binary, envoy on PATH)")
	f.Var(addrValue{p: &o.xdsAddr}, "xds-addr", "xDS server address, 127.0.0.1:PORT (localhost means 127.0.0.1)")
	f.Var(portValue{&o.run.ListenerPort, portRange}, "listener-port", "Envoy listener port on 127.0.0.1, 1-65535")
	f.Var(portValue{&o.run.AdminPort, portZeroRange}, "admin-port", "Envoy admin port on 127.0.0.1, 0-65535 (0: pick a free one)")
	f.Var(portPairValue{&o.run.InventoryPorts}, "inventory-ports", "ports of inventory backends v1,v2 on 127.0.0.1")
	f.BoolVar(&o.freePorts, "free-ports", false, "pick a free 127.0.0.1 port for every port flag not given, instead of the defaults")
	f.StringSliceVar(&o.run.Steps, "steps", nil, "run only these steps, the first one publishing (default: all)")
	f.Var(durationValue{&o.run.StepTimeout, stepTimeoutRange}, "step-timeout", "deadline for each step's waits, "+stepTimeoutRange.String())
	f.Var(durationValue{&o.run.Outage, outageRange}, "outage", "keep the xDS server down this long in control-plane-restart, sending a request every 250ms, "+
		outageRange.String()+" (0: one request, then restart)")
	f.IntVar(&o.run.Load.Rate, "load", 0, fmt.Sprintf("steady load through Envoy for the whole run, requests per second (1-%d; 0: the scenario's own load, if any), counted per step; at most %s", load.MaxRate, load.MaxDuration))
	f.IntVar(&o.run.Load.Connections, "connections", 1, fmt.Sprintf("connections the load uses (1-%d)", load.MaxConnections))
	f.Var(choiceValue{&o.loadProtocol, "load protocol", []string{string(load.HTTP1), string(load.HTTP2)}}, "protocol",
		"the load's protocol: http1 (HTTP/1.1 keep-alive, default) or http2 (HTTP/2 prior knowledge)")
	f.DurationVar(&o.run.DrainTime, "drain-time", 0, "Envoy's drain time (--drain-time-s, whole seconds): how long a replaced listener or filter chain drains before its connections close (0: the scenario's drain_time, else Envoy's 600s)")
	f.StringVar(&o.run.ConfigYAML, "config-yaml", "", "YAML merged over Envoy's bootstrap, after the scenario's own (e.g. '{dynamic_resources: {ads_config: {rate_limit_settings: {max_tokens: 2, fill_rate: 1}}}}')")
	f.StringVar(&o.scenario, "scenario", o.scenario, "the scenario: a built-in name (lab scenarios lists them), a scenario file, or all (the whole pack)")
	f.Var(addrValue{p: &o.metricsAddr, allowZero: true}, "metrics-addr", metricsAddrHelp)
	f.BoolVar(&o.run.PublishDuringReconnect, "publish-during-reconnect", false, "in control-plane-restart, publish two states while Envoy is disconnected; Envoy must end up on the newest only")
	return cmd
}

// runnerOptions checks what the flags could not check one by one and returns the
// runner's options (runner.Options.Resolve); nothing has started yet.
func (o *runOptions) runnerOptions(sc *scenario.Scenario) (runner.Options, error) {
	r := o.run
	r.Scenario = sc
	r.Load.Protocol, _ = load.ParseProtocol(o.loadProtocol) // the flag accepts only known names
	if err := r.CheckLoad(); err != nil {
		return r, optionRefusal(err, runFlagOf)
	}
	if err := checkMode(r.Mode); err != nil {
		return r, err
	}
	if r.Client == runner.ClientGRPC && r.Mode != protocol.SotW {
		return r, errGRPCDelta
	}
	_, port, err := loopback.ParseAddr(o.xdsAddr)
	if err != nil {
		return r, badFlag("xds-addr", o.xdsAddr, "%v", err)
	}
	r.XDSPort = port
	if o.freePorts {
		o.freeUnsetPorts(&r)
	}
	if r.Mode == protocol.SotW {
		// The flags accept only known names; "" (unset) is what the cache does (Resolve).
		r.Versions, r.NackPolicy = publish.VersionStrategy(o.versions), sotw.NackPolicy(o.nackPolicy)
	} else {
		if err := sotwOnly("sotw-versions", o.versions); err != nil {
			return r, err
		}
		if err := sotwOnly("nack-policy", o.nackPolicy); err != nil {
			return r, err
		}
	}
	if err := checkCache(r.Cache, r.Mode, o.versions, o.nackPolicy); err != nil {
		return r, err
	}
	return r, optionRefusal(r.Resolve(), runFlagOf)
}

// freeUnsetPorts zeroes every port whose flag was not given: the runner takes zero as
// "pick a free one".
func (o *runOptions) freeUnsetPorts(r *runner.Options) {
	for flag, p := range map[string]*int{"xds-addr": &r.XDSPort, "listener-port": &r.ListenerPort, "admin-port": &r.AdminPort} {
		if !o.given(flag) {
			*p = 0
		}
	}
	if !o.given("inventory-ports") {
		r.InventoryPorts = [2]int{}
	}
}

// runRun runs the scenario with progress to progress, and says where the evidence is.
func runRun(ctx context.Context, o runner.Options, progress io.Writer) error {
	o.Progress = progress
	res, err := runner.Execute(ctx, o)
	if res != nil {
		fmt.Fprintf(progress, "[%s] envoy.result: %s\n[%s] evidence: %s\n", o.Mode, res.EnvoyResult, o.Mode, res.Dir)
	}
	return optionRefusal(err, runFlagOf)
}

// runFlagOf is the flag of each option a runner refusal names (runner.Option*).
var runFlagOf = map[string]string{
	runner.OptionConfigYAML:             "config-yaml",
	envoy.OptionDrainTime:               "drain-time",
	runner.OptionClient:                 "client",
	runner.OptionPublishDuringReconnect: "publish-during-reconnect",
	runner.OptionLoad:                   "load",
	runner.OptionSteps:                  "steps",
	option.OptionOut:                    "out",
	xdsmetrics.OptionAddr:               "metrics-addr",
}

// scenarioAll is the --scenario value that runs the whole pack.
const scenarioAll = "all"

// scenarios resolves --scenario; every file is parsed and checked before anything starts.
func (o *runOptions) scenarios() ([]*scenario.Scenario, error) {
	if o.scenario == scenarioAll {
		if len(o.run.Steps) > 0 {
			return nil, badFlag("steps", strings.Join(o.run.Steps, ","), "--steps selects steps of one scenario, not of --scenario all")
		}
		return scenario.Pack()
	}
	sc, err := scenario.Load(o.scenario)
	if err != nil {
		return nil, err
	}
	return []*scenario.Scenario{sc}, nil
}
