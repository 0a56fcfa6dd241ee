package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/bench"
	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/progress"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
)

// Ranges of `lab bench`'s counts and durations.
var (
	benchClustersRange = intRange{1, benchcore.MaxClusters}
	benchClientsRange  = intRange{1, benchcore.MaxClients}
	benchStuckRange    = intRange{0, benchcore.MaxStuckClients}
	// benchEnvoysRange bounds --envoys for any client (grpc-go clients go to
	// bench.MaxGRPCClients); benchRunOptions holds Envoys to bench.MaxEnvoys.
	benchEnvoysRange    = intRange{1, benchcore.MaxGRPCClients}
	benchRepeatRange    = intRange{1, benchcore.MaxRepeat}
	benchTimeoutRange   = durationRange{Min: time.Second, Max: time.Hour}
	benchColdHostsRange = intRange{1, benchcore.MaxColdHosts}
	// The churn flags' ranges are checked by the bench (bench.Options.validateChurn),
	// which knows the floor of --churn-requests.
	benchChurnRequestsRange = intRange{1, benchcore.MaxChurnRequests}
	benchConnCostRange      = durationRange{Min: 0, Max: time.Minute}
)

// benchOptions are the flags of `lab bench`; benchRunOptions turns them into bench.Options.
type benchOptions struct {
	bench    benchcore.Options
	modes    []string
	versions []string
	caches   []string
	onDemand []string               // --on-demand shapes, as typed
	given    func(flag string) bool // cobra's Changed
	// value is a flag's value as the user typed it (a bench.OptionError is reported on it).
	value func(flag string) string
}

func defaultBenchOptions() benchOptions {
	return benchOptions{
		bench: benchcore.Options{
			Clusters:  benchcore.DefaultClusters,
			Clients:   1,
			Envoys:    1,
			Client:    benchcore.ClientEnvoy,
			Workloads: benchcore.DefaultWorkloads,
			Repeat:    benchcore.DefaultRepeat,
			Timeout:   benchcore.DefaultTimeout,
			Through:   benchcore.DefaultThrough,
			ColdHosts: benchcore.DefaultColdHosts,
		},
		modes:    modeNames(benchcore.DefaultModes),
		versions: []string{string(publish.Uniform), string(publish.PerType)},
		caches:   []string{string(publish.SnapshotCache)},
		given:    func(string) bool { return false },
		value:    func(string) string { return "" },
	}
}

func newBenchCmd() *cobra.Command { return newBenchCmdWith(runBench) }

// benchLong is `lab bench --help`'s description.
const benchLong = `For each workload, each cluster count N and each series (a library cache, and SotW with
each version strategy or delta), starts a control plane on 127.0.0.1 with its own
xds.log (xds-<series>-N<N>.log; xds-<workload>-<series>-N<N>.log but for the endpoint
workload), connects the client (real Envoy with --concurrency 1, or the simulated
Envoy), publishes the scaled state (clusters inventory-0000..N-1, one route /quote/<i>
each) and waits for the full ACK; then, --repeat times, makes the workload's change and
measures: responses, resources, redundant and removed resources and bytes sent; publish
to last send and to the client's ACK; with Envoy, publish to the first request that
shows the change, Envoy's CPU and RSS; and this process's CPU and heap.

Workloads (--workload): endpoint moves cluster 0's endpoint between two loopback
backends (the proof: /quote/0 answered by the new one); cluster-add adds one cluster
with its endpoint and route per repeat (its path answered by its backend);
cluster-remove removes the last cluster with its endpoint and route (its path gets
Envoy's own 404); route points /quote/0 at cluster 1 and back (the other backend
answers); listener changes the HTTP connection manager's server_name (the server
header of an answer, on a new connection).

Caches (--cache): snapshot is go-control-plane's SnapshotCache (series sotw-uniform,
sotw-per-type, delta, as bench.json always named them); linear is a LinearCache per type
behind a MuxCache (series sotw-per-type/linear, delta/linear). A LinearCache versions
each type itself, so SotW with uniform versions is not run under it: a note says so,
and --cache linear with --sotw-versions uniform alone is refused.

With --clients K (simulated only) K fan-out clients share one node and the figures are
totals over all of them; these clients speak ADS like Envoy but ACK without validating,
so the time to the last ACK measures the control plane and the wire.

With --envoys K (real Envoy only) K Envoys run side by side, each its own node
(bench-envoy-0..K-1) with its own admin port, listener port and state (the same
clusters, its own listener), all served by one control plane. Each change is measured
per Envoy: publish to its ACK, and to a request through its own listener showing the
change; the report adds p50, p99 and max over Envoys x repeats, each Envoy's RSS, and
the version distribution: when the k-th Envoy ran the new version (versions.svg).

With --client grpc, --envoys K (1-100) counts grpc-go proxyless clients instead: each a
lab grpc-client process with its own node (bench-grpc-0..K-1) and the proxyless shape,
its HTTP front door where an Envoy's listener would be; per change its ACK, the RPC
through its front door answered by the new backend, its CPU and RSS. SotW only (--modes
defaults to sotw; delta is refused: grpc-go has no delta client), endpoint workload only.

With --through direct,tap each series also runs through an ADS tap (lab tap, run as a
subprocess of this binary) right after its direct run, as "<series>+tap", with the tap's
log beside the control plane's (xds-<series>-N<N>.tap.log); the report adds tap ÷
direct per N and the tap's own CPU (tap_cpu_ms).

With --churn eds,cds (real Envoy) each N and series runs cluster 0's endpoints churning
under steady load through Envoy instead of the workload loop: an update every 100 ms,
through EDS alone (eds) or through a CDS update of the cluster with its EDS (cds), each
backend --conn-cost slower on a connection's first request; --churn-requests requests
(at least 10,000) per configuration: p50, p99, p99.9, upstream connections destroyed
per update, the share slower than the connection cost (docs/performance.md, "Endpoint
churn").

With --on-demand SHAPES (delta only; real Envoy) each N runs an on-demand sequence
once per shape instead of the workload loop: none serves the scaled state wildcard (as
above), vhds serves each service as a VirtualHost fetched through VHDS when a request
for its Host (svc-<i>) arrives, cds fetches each cluster on first use (on-demand CDS,
bootstrap without cds_config), vhds+cds both ("," separates shapes, "+" joins the parts
of one). The sequence: publish (initial push bytes, publish -> Envoy ready, Envoy RSS);
--cold-hosts distinct services requested cold, one at a time (held -> answered, p50 and
p99; each must be answered 200 by its backend), RSS with the first 10 used; a service
add (cluster-add: what reaches Envoy unasked, then the cold request for it and what it
fetches); the same services warm; --repeat one-service changes (endpoint, on a fetched
service). Tables "On demand: ..." and bench.json's on_demand.

Results: a table here, and bench.json, bench.md and bench.svg in --out (with every xds
log, bootstrap and Envoy log).`

// benchExample is `lab bench --help`'s examples.
const benchExample = `  # the documented sweep: real Envoy, both protocols, 5 repeats
  lab bench --client envoy --clusters 10,100,1000,10000 --repeat 5

  # quick look without Envoy
  lab bench --client sim --clusters 10,1000 --repeat 3

  # fan-out: one change pushed to 100 clients, delta vs SotW per-type
  lab bench --client sim --clients 100 --clusters 100,1000 --sotw-versions per-type

  # ten Envoys on one control plane: per-proxy times and the version distribution
  lab bench --client envoy --envoys 10 --clusters 1000 --cache snapshot,linear --repeat 5

  # one stuck client beside 20 fan-out clients: do the others still ACK in time?
  lab bench --client sim --clients 20 --stuck-clients 1 --clusters 1000 --workload endpoint

  # 100 grpc-go proxyless clients (lab grpc-client processes), SotW, endpoint changes
  lab bench --client grpc --envoys 100 --clusters 1000 --repeat 5

  # the tap's cost: each series directly and through lab tap, tap ÷ direct per N
  lab bench --client envoy --clusters 10000 --through direct,tap --sotw-versions per-type --repeat 3

  # on demand vs wildcard: VHDS, VHDS with on-demand CDS, and today's shape
  lab bench --on-demand none,vhds,vhds+cds --clusters 10,1000,10000 --repeat 3

  # endpoint churn through EDS only vs through CDS, under steady load through Envoy
  lab bench --churn eds,cds --clusters 100 --cache snapshot,indexed

  # both caches, every workload, against real Envoy
  lab bench --client envoy --clusters 10,100 --cache snapshot,linear \
    --workload endpoint,cluster-add,cluster-remove,route,listener --repeat 2`

// newBenchCmdWith parses the flags into bench options and hands them to run (tests pass
// their own to see the options).
func newBenchCmdWith(run func(ctx context.Context, o benchcore.Options, progress io.Writer) error) *cobra.Command {
	o := defaultBenchOptions()
	cmd := &cobra.Command{
		Use:     "bench",
		Short:   "Measure how SotW's and delta's cost grows with the number of clusters and clients",
		Long:    benchLong,
		Example: benchExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.given = cmd.Flags().Changed
			o.value = func(name string) string {
				if f := cmd.Flags().Lookup(name); f != nil {
					return f.Value.String()
				}
				return ""
			}
			bo, err := o.benchRunOptions()
			if err != nil {
				return err
			}
			ctx, stop := interruptible(cmd)
			defer stop()
			return run(ctx, bo, progress.NewWriter(cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.CommandPath()))
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// addFlags defines `lab bench`'s flags on f, each checking its value as it is parsed.
func (o *benchOptions) addFlags(f *pflag.FlagSet) {
	f.Var(intListValue{&o.bench.Clusters, benchClustersRange, "a comma list of cluster counts >= 1, e.g. 10,100"}, "clusters",
		"cluster counts N to measure, each "+benchClustersRange.String())
	f.Var(intValue{&o.bench.Clients, benchClientsRange}, "clients", "clients per configuration, "+benchClientsRange.String()+" (more than 1 needs --client sim)")
	f.Var(intValue{&o.bench.StuckClients, benchStuckRange}, "stuck-clients", "clients beside --clients, each on its own connection with a fixed 64 KiB window, that take the initial state and then stop reading, "+benchStuckRange.String()+" (needs --client sim; docs/reliability.md, \"A stuck client\")")
	f.Var(intValue{&o.bench.Envoys, benchEnvoysRange}, "envoys", "Envoys per configuration (1-"+strconv.Itoa(benchcore.MaxEnvoys)+"), or grpc-go client processes with --client grpc ("+benchEnvoysRange.String()+"), each its own node and listener (more than 1 needs --client envoy or grpc and --clients 1)")
	f.Var(choiceValue{&o.bench.Client, "data plane", []string{benchcore.ClientEnvoy, benchcore.ClientGRPC, benchcore.ClientSim}}, "client", "data plane: envoy, grpc (grpc-go's proxyless xDS client, one `lab grpc-client` process per node; SotW, endpoint workload) or sim")
	f.Var(choiceListValue{&o.modes, func(s string) error { _, err := parseMode(s); return err }}, "modes", "protocols: sotw, delta")
	f.Var(choiceListValue{&o.versions, benchcore.CheckSotWVersion}, "sotw-versions", "SotW version strategies: uniform, per-type (uniform only with the snapshot cache)")
	f.Var(choiceListValue{&o.caches, func(s string) error { _, err := parseCache(s); return err }}, "cache", "caches, a comma list: snapshot, snapshot-noads, linear, indexed")
	f.Var(choiceListValue{&o.bench.Workloads, benchcore.CheckWorkload}, "workload", "changes to measure: endpoint, cluster-add, cluster-remove, route, listener")
	f.Var(intValue{&o.bench.Repeat, benchRepeatRange}, "repeat", "changes per configuration, "+benchRepeatRange.String()+" (cluster-remove: below every cluster count)")
	f.StringVar(&o.bench.Out, "out", "", "output directory, new or empty (default experiments/evidence/bench/<UTC time>-<PID>)")
	f.StringVar(&o.bench.EnvoyBin, "envoy-bin", "", "Envoy binary (default: $ENVOY_BIN, the .venv binary, envoy on PATH)")
	f.Var(durationValue{&o.bench.Timeout, benchTimeoutRange}, "timeout", "deadline for each configuration, "+benchTimeoutRange.String())
	f.Var(choiceListValue{&o.bench.Through, benchcore.CheckThrough}, "through", "how each series reaches its control plane: direct, tap (both: each series directly and then through lab tap, a subprocess, at each N; the report adds tap ÷ direct)")
	f.Var(choiceListValue{&o.onDemand, func(s string) error { _, err := benchcore.ParseShape(s); return err }}, "on-demand", "the on-demand axis: shapes none (wildcard, today's), vhds (virtual hosts on demand), cds (clusters on demand), vhds+cds; each N runs the on-demand sequence once per shape (delta only: --modes defaults to delta; real Envoy)")
	f.Var(choiceListValue{&o.bench.Churn, benchcore.CheckChurn}, "churn", "the churn axis: eds (cluster 0's endpoints change through EDS alone), cds (through a CDS update of the cluster with its EDS), or both; each N and series runs under steady load through Envoy instead of the workload loop (real Envoy)")
	f.Var(intValue{&o.bench.ChurnRequests, benchChurnRequestsRange}, "churn-requests", fmt.Sprintf("with --churn: requests each configuration measures, at least %d", benchcore.DefaultChurnRequests))
	f.Var(durationValue{&o.bench.ConnCost, benchConnCostRange}, "conn-cost", "with --churn: each backend's delay on a connection's first request (a stand-in for a handshake)")
	f.Var(intValue{&o.bench.ColdHosts, benchColdHostsRange}, "cold-hosts", "with --on-demand: distinct services requested cold, then warm, "+benchColdHostsRange.String()+" (at most N)")
	f.Var(choiceValue{&o.bench.EnvoyStats, "Envoy stats setting", bootstrap.StatsSettings}, "envoy-stats",
		"Envoy's stats: all (Envoy's defaults) or no-scaled-clusters (a stats_matcher leaves out the inventory-NNNN clusters' stats, which Envoy's 5 s stats flush otherwise walks: docs/performance.md, \"N = 100,000\")")
	f.Var(choiceValue{&o.bench.Unprobed, "unprobed setting", benchcore.UnprobedSettings}, "unprobed",
		"where the clusters no request uses point: dead-port (an endpoint nothing listens on) or no-endpoints (an empty assignment); grpc-go connects to every cluster the route names, Envoy does not (docs/performance.md, \"Many grpc-go clients\")")
	f.BoolVar(&o.bench.UntilStable, "until-stable", true, "after --repeat changes, measure more in batches until a batch moves neither median (publish to last ACK, control-plane CPU) by more than 5 %, at most 4 x --repeat; bench.md says which configurations held")
	f.BoolVar(&o.bench.CPUProfile, "cpuprofile", false, "write a CPU profile of this process over each configuration's changes (not its start or initial push) to cpu-<series>-N<N>.pprof in the output directory")
}

// benchRunOptions turns the flags into bench.Options and has the bench check them (the
// one place its rules live); nothing has started yet. The CLI adds only what is about
// flags or this process: a --sotw-versions that would do nothing, the --out directory
// and the lab binary that runs each tap.
func (o *benchOptions) benchRunOptions() (benchcore.Options, error) {
	b := o.bench.Resolve(benchcore.Names{Modes: o.modes, SotWVersions: o.versions, Caches: o.caches, OnDemand: o.onDemand}, o.given("modes"), o.given("workload"))
	check := b
	if err := check.Validate(); err != nil {
		return b, benchRefusal(err, b, o.typed)
	}
	if o.given("sotw-versions") && !slices.Contains(b.Modes, protocol.SotW) {
		return b, badFlag("sotw-versions", strings.Join(o.versions, ","), "SotW only (want sotw in --modes, or no --sotw-versions)")
	}
	// A second bench in the same directory would leave the first one's logs beside its own.
	if err := option.CheckOutEmpty(b.Out); err != nil {
		return b, outRefusal(err)
	}
	// Through the tap, the CLI runs each tap as its own `lab tap` subprocess, so the
	// tap's CPU is its own process's (tap_cpu_ms), not folded into this one's.
	if slices.Contains(b.Through, benchcore.ThroughTap) {
		exe, err := os.Executable()
		if err != nil {
			return b, fmt.Errorf("--through tap: find this lab binary to run lab tap: %w", err)
		}
		b.TapCommand = []string{exe}
	}
	return b, nil
}

// typed is a flag's value as the user typed it, when given.
func (o *benchOptions) typed(flag string) (string, bool) {
	if !o.given(flag) {
		return "", false
	}
	return o.value(flag), true
}

// runBench runs the sweep with progress to progress; bench.Run prints the tables and
// says where the files are.
func runBench(ctx context.Context, o benchcore.Options, progress io.Writer) error {
	o.Progress = progress
	_, err := bench.Run(ctx, o)
	return benchRefusal(err, o, nil)
}
