// Package bench measures how each xDS protocol's cost grows with the number of resources
// and clients (`lab bench`). For every workload, every cluster count N and every series
// (a library cache, SotW with each version strategy the cache can honour, delta) it
// starts a control plane on loopback with an xds.log recorder, brings a client (real
// Envoy, the simulated Envoy, or K fan-out clients) to full ACK of the scaled state, then
// makes the workload's change several times (move an endpoint, add or remove a cluster,
// retarget a route, change the listener) and measures each change: what was sent (from
// the recorder's events), how long the control plane and the client took, the CPU and
// memory both sides used and, with Envoy, when a real request first showed the change
// (the new backend answering, Envoy's 404, the new server header). Results go to
// bench.json, bench.md and an SVG chart, and tables are printed (experiments/table lays
// out both the printed tables and bench.md's).
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/progress"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
)

// Client kinds (--client). With --clients > 1 the bench runs clientAckOnly clients.
const (
	ClientEnvoy = "envoy"
	ClientSim   = "sim"
	// ClientGRPC runs grpc-go's proxyless xDS client, one `lab grpc-client` process per
	// node (experiments/grpcclient), in the fleet seam the Envoys use: --envoys K counts
	// them (each a proxy of the fleet: its own node, state and front door).
	ClientGRPC    = "grpc"
	clientAckOnly = "ack-only"
)

// MaxGRPCClients bounds --envoys K with --client grpc: a grpc-go client process is a
// fraction of an Envoy's memory (docs/performance.md, "Many grpc-go clients").
const MaxGRPCClients = 100

// Limits on the options. MaxClusters keeps a mistyped count from building a state that
// cannot fit in memory (a SotW push of N clusters is about 300 bytes per cluster per
// client); MaxClients is the fan-out the control plane's stream limit is raised to.
const (
	MaxClusters = 100_000
	MaxClients  = 1000
	// MaxStuckClients bounds StuckClients: one is the question, a few its repetition.
	MaxStuckClients = 10
	MaxRepeat       = 1000
)

// Defaults for the CLI.
var (
	DefaultClusters = []int{10, 100, 1000, 10000}
	DefaultModes    = []protocol.Mode{protocol.SotW, protocol.Delta}
	DefaultVersions = []publish.VersionStrategy{publish.Uniform, publish.PerType}
)

// DefaultRepeat is how many changes each configuration measures.
const DefaultRepeat = 5

// DefaultTimeout bounds one configuration (start, initial state, every repeat). Envoy
// with 10,000 clusters needs seconds to warm; a machine shared with other work needs more.
const DefaultTimeout = 5 * time.Minute

// Options configure a sweep.
type Options struct {
	// Clusters are the cluster counts N to measure (each >= 1).
	Clusters []int
	// Clients is how many clients each configuration serves (1..MaxClients); more than
	// one needs Client == ClientSim and runs the fan-out clients.
	Clients int
	// StuckClients is how many extra clients (0..MaxStuckClients) subscribe like the
	// fan-out clients, each on its own connection, take the initial state and then stop
	// reading: the others' figures show whether a stuck client holds them up
	// (docs/reliability.md, "A stuck client"). They count in no figure of the others.
	StuckClients int
	// Client is ClientEnvoy or ClientSim.
	Client string
	// Envoys is how many Envoys each configuration runs (1..MaxEnvoys; 0 means 1), with
	// Client == ClientEnvoy: each its own node ID (FleetNodeID), admin port, listener
	// port and state, all served by one control plane (controlplane.Options.Nodes). One
	// Envoy is the bench as it always ran, on the control plane's one node.
	Envoys int
	// GRPCCommand runs each grpc-go client with Client == ClientGRPC
	// (grpcclient.LabCommand from the CLI; tests pass grpcclient.ReexecCommand).
	GRPCCommand grpcclient.Command
	// Modes are "sotw" and/or "delta".
	Modes []protocol.Mode
	// SotWVersions are the SotW version strategies to measure (ignored without sotw).
	// The LinearCache versions each type itself, so with it only per-type runs: uniform
	// is skipped for it (a progress note says so), and refused when nothing else would
	// measure it.
	SotWVersions []publish.VersionStrategy
	// Caches are the library caches to measure (DefaultCaches when empty).
	Caches []publish.Cache
	// Workloads are the changes to measure (DefaultWorkloads when empty).
	Workloads []string
	// Repeat is how many changes each configuration measures.
	Repeat int
	// UntilStable measures more changes after Repeat, in batches, until the medians hold
	// (Stability), up to four times Repeat.
	UntilStable bool
	// Out is the output directory (DefaultOut() when empty).
	Out string
	// EnvoyBin overrides where Envoy is found (envoy.Find).
	EnvoyBin string
	// Timeout bounds one configuration (DefaultTimeout when 0).
	Timeout time.Duration
	// CPUProfile writes cpu-<series>-N<N>.pprof per configuration into Out: this
	// process's CPU over the changes (not the start or the initial push), to see where a
	// change's control-plane CPU goes (`go tool pprof -top`).
	CPUProfile bool
	// Through says how each series reaches its control plane: ThroughDirect and/or
	// ThroughTap (DefaultThrough when empty). With both, each series runs directly and
	// then through the tap at every N, one after the other, so the ratio tap ÷ direct
	// comes from one run (Report.TapRatios).
	Through []string
	// TapCommand, when set, runs each tap as a subprocess: TapCommand followed by
	// "tap --listen 127.0.0.1:0 --upstream ADDR --log LOG" (the lab CLI passes its own
	// executable), so the tap's CPU is read from its own process clock (tap_cpu_ms) as
	// Envoy's is. Empty: the tap runs in this process (tests), and its CPU is inside
	// cp_cpu_ms.
	TapCommand []string
	// OnDemand are the shapes of the on-demand axis (--on-demand): with any, each N runs
	// the on-demand sequence (ondemand.go) once per shape and delta series instead of
	// the workload loop. Delta only (resources.ErrOnDemandNeedsDelta), real Envoy only.
	OnDemand []resources.OnDemand
	// Churn are the modes of the churn axis (--churn: ChurnEDS, ChurnCDS): with any, each
	// N runs the churn sequence (churn.go) once per mode and series instead of the
	// workload loop. Real Envoy only (ErrChurnNeedsEnvoy).
	Churn []string
	// ChurnRequests is how many requests of steady load each churn configuration
	// measures (DefaultChurnRequests when 0, and at least that unless ChurnFewRequests).
	ChurnRequests int
	// ChurnFewRequests lets ChurnRequests go below DefaultChurnRequests: for tests,
	// whose figures are not the docs'.
	ChurnFewRequests bool
	// ChurnRate is the steady load in requests per second (DefaultChurnRate when 0).
	ChurnRate int
	// ChurnEvery is the interval between two churn updates (DefaultChurnEvery when 0).
	ChurnEvery time.Duration
	// ConnCost is the backends' delay on each connection's first request
	// (DefaultConnCost when 0).
	ConnCost time.Duration
	// ColdHosts is how many distinct services the on-demand sequence requests cold
	// (DefaultColdHosts when 0; at most N).
	ColdHosts int
	// EnvoyStats is the Envoy stats setting of every Envoy's bootstrap
	// (bootstrap.StatsSettings; "" is bootstrap.StatsAll, Envoy's defaults). Real Envoy
	// only.
	EnvoyStats string
	// Unprobed is where the clusters no request uses point (UnprobedSettings; "" is
	// UnprobedDeadPort): the workload loop's states only, not the on-demand sequence.
	Unprobed string
	// Progress receives progress lines and the final table (nil: discarded). Its write
	// errors are ignored: lost progress must not fail the sweep.
	Progress io.Writer
}

// DefaultOut is experiments/evidence/bench/<UTC time>-<PID> (git-ignored).
func DefaultOut() string {
	return filepath.Join("experiments", "evidence", "bench", fmt.Sprintf("%s-%d", time.Now().UTC().Format("20060102T150405Z"), os.Getpid()))
}

// series is one line of the chart: a library cache and a protocol with, for SotW, its
// version strategy. With the snapshot cache the names are the ones bench.json always had
// ("sotw-uniform", "sotw-per-type", "delta"), so earlier reports stay comparable; the
// LinearCache's carry it ("sotw-per-type/linear", "delta/linear").
type series struct {
	name     string
	cache    publish.Cache
	mode     protocol.Mode
	versions publish.VersionStrategy
	// tap: the client connects through an ADS tap (the name ends in "+tap").
	tap bool
}

// file is the series name as it appears in file names ("sotw-per-type-linear").
func (s series) file() string { return strings.ReplaceAll(s.name, "/", "-") }

func seriesName(cache publish.Cache, mode protocol.Mode, versions publish.VersionStrategy) string {
	name := mode.String()
	if mode == protocol.SotW {
		name += "-" + string(versions)
	}
	if cache != publish.SnapshotCache {
		name += "/" + string(cache)
	}
	return name
}

// withThrough repeats each series once per --through way, in that order, so a series
// and its "+tap" twin run one after the other.
func (o *Options) withThrough(in []series) []series {
	var out []series
	for _, s := range in {
		for _, t := range o.Through {
			x := s
			if t == ThroughTap {
				x.tap, x.name = true, s.name+tapSuffix
			}
			out = append(out, x)
		}
	}
	return out
}

// series lists the series to run, cache by cache in --cache order, and the notes that
// say what was skipped: SotW with uniform versions under the LinearCache, which versions
// each type itself (controlplane.CheckCacheOptions refuses it).
func (o *Options) series() ([]series, []string) {
	var (
		out   []series
		notes []string
	)
	for _, c := range o.Caches {
		for _, m := range o.Modes {
			if m == protocol.Delta {
				out = append(out, series{name: seriesName(c, m, ""), cache: c, mode: m})
				continue
			}
			for _, v := range o.SotWVersions {
				if controlplane.CheckCacheOptions(c, m, v, "") != nil {
					notes = append(notes, fmt.Sprintf("%s is not run with --cache %s: each LinearCache versions its own type, so SotW under it is per-type only", seriesName(publish.SnapshotCache, m, v), c))
					continue
				}
				out = append(out, series{name: seriesName(c, m, v), cache: c, mode: m, versions: v})
			}
		}
	}
	return o.withThrough(out), notes
}

// env is what every configuration of a sweep shares.
type env struct {
	o        *Options
	bin      envoy.Binary
	backends [2]*identity
	// deadPort is where every cluster but the probed ones points: nothing listens there,
	// and Envoy never connects to it since only the probed paths are requested.
	deadPort int
	progress io.Writer
}

func (e *env) say(format string, args ...any) {
	if e.progress != nil {
		fmt.Fprintf(e.progress, format+"\n", args...)
	}
}

// runBounded runs one measurement under Options.Timeout, then close, whatever run
// returned: what a measurement started is stopped even when it failed or timed out.
// The run's error wins over close's.
func (e *env) runBounded(ctx context.Context, run func(context.Context) error, close func() error) error {
	ctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	err := run(ctx)
	if cerr := close(); err == nil {
		err = cerr
	}
	return err
}

// Run validates o and runs the sweep. It writes bench.json, bench.md and bench.svg into
// o.Out even when a configuration fails (that configuration then carries its error), and
// returns the report with an error naming the failed configurations.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	e := &env{o: &o, progress: o.Progress}
	if e.progress == nil {
		e.progress = io.Discard
	}
	stop, err := e.prepare()
	if err != nil {
		return nil, err
	}
	defer stop()

	rep := newReport(&o, e.bin)
	ser, notes := o.series()
	e.announce(ser, notes)
	start := time.Now()
	var failed []string
	switch {
	case len(o.Churn) > 0:
		failed = e.churnSweep(ctx, rep, ser, start)
	case len(o.OnDemand) > 0:
		failed = e.onDemandSweep(ctx, rep, ser, start)
	default:
		failed = e.workloadSweep(ctx, rep, ser, start)
	}
	rep.finish(start)
	werr := rep.WriteFiles(o.Out)
	rep.WriteTable(e.progress)
	e.say("bench: wall time %.1f s; bench.json, bench.md, bench.svg and the xds logs are in %s", rep.WallSeconds, o.Out)
	switch {
	case ctx.Err() != nil:
		return rep, fmt.Errorf("interrupted: %w", ctx.Err()) // main prefixes "lab bench: "
	case len(failed) > 0:
		return rep, fmt.Errorf("%d configuration(s) failed: %s", len(failed), strings.Join(failed, "; "))
	case werr != nil:
		return rep, werr
	}
	return rep, nil
}

// prepare finds what every configuration shares: the client's binary, the output
// directory, the two backends and the dead port. stop releases them once every
// configuration's Envoy is gone.
func (e *env) prepare() (stop func(), err error) {
	o := e.o
	if o.Client == ClientGRPC && o.GRPCCommand.Path == "" {
		cmd, err := grpcclient.LabCommand()
		if err != nil {
			return nil, err
		}
		o.GRPCCommand = cmd
	}
	if o.Client == ClientEnvoy {
		bin, err := envoy.Find(o.EnvoyBin)
		if err != nil {
			return nil, refuse(OptionClient, ClientEnvoy, err)
		}
		e.bin = bin
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	for i, name := range []string{"endpoint-a", "endpoint-b"} {
		b, err := startIdentity(name)
		if err != nil {
			for _, s := range e.backends[:i] {
				s.stop()
			}
			return nil, err
		}
		e.backends[i] = b
	}
	stopBackends := func() {
		for i := len(e.backends) - 1; i >= 0; i-- {
			e.backends[i].stop()
		}
	}
	dead, err := loopback.FreePort()
	if err != nil {
		stopBackends()
		return nil, err
	}
	e.deadPort = dead
	return func() {
		loopback.Release(dead) // after every configuration's Envoy is gone
		stopBackends()
	}, nil
}

// announce says what the sweep runs, and what it leaves out.
func (e *env) announce(ser []series, notes []string) {
	o := e.o
	names := make([]string, len(ser))
	for i, s := range ser {
		names[i] = s.name
	}
	client := e.clientName()
	switch {
	case len(o.Churn) > 0:
		e.say("bench: %d churn configuration(s): churn %s x N %s x %s; %s; %d requests at %d/s, an update every %s, connection cost %s; output %s",
			len(o.Churn)*len(o.Clusters)*len(ser), strings.Join(o.Churn, ","), joinInts(o.Clusters), strings.Join(names, ", "), client, o.ChurnRequests, o.ChurnRate, o.ChurnEvery, o.ConnCost, o.Out)
	case len(o.OnDemand) > 0:
		e.say("bench: %d on-demand configuration(s): shape %s x N %s x %s; %s; %d cold host(s), %d repeat(s); output %s",
			len(o.OnDemand)*len(o.Clusters)*len(ser), shapeNames(o.OnDemand), joinInts(o.Clusters), strings.Join(names, ", "), client, o.ColdHosts, o.Repeat, o.Out)
	default:
		e.say("bench: %d configuration(s): workload %s x N %s x %s; %s; %d repeat(s); output %s",
			len(o.Workloads)*len(o.Clusters)*len(ser), strings.Join(o.Workloads, ","), joinInts(o.Clusters), strings.Join(names, ", "), client, o.Repeat, o.Out)
	}
	for _, n := range notes {
		e.say("bench: note: %s", n)
	}
}

// clientName says what the clients are, for the progress line.
func (e *env) clientName() string {
	o := e.o
	switch {
	case o.Clients > 1:
		return fmt.Sprintf("%d fan-out clients (ack-only)", o.Clients)
	case o.Client == ClientGRPC:
		return fmt.Sprintf("%d x grpc-go client (lab grpc-client), each its own node (%s..%s)", o.Envoys, GRPCNodeID(0), GRPCNodeID(o.Envoys-1))
	case o.Client == ClientEnvoy && o.Envoys > 1:
		return fmt.Sprintf("%d x %s, each its own node (%s..%s)", o.Envoys, e.bin.String(), FleetNodeID(0), FleetNodeID(o.Envoys-1))
	case o.Client == ClientEnvoy:
		return e.bin.String()
	}
	return "simulated Envoy (in-process)"
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

// host describes the machine, so a reader can weigh the figures.
func host() Host {
	h := Host{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	h.LoadStart = loadAvg()
	return h
}

// loadAvg is the first three fields of /proc/loadavg ("" elsewhere): the machine is
// shared, and a busy machine explains noisy times.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// workloadSweep runs every (workload, N, series) into rep and returns the failed ones.
func (e *env) workloadSweep(ctx context.Context, rep *Report, ser []series, start time.Time) []string {
	o := e.o
	var failed []string
	total, k := len(o.Workloads)*len(o.Clusters)*len(ser), 0
	for _, w := range o.Workloads {
		for _, n := range o.Clusters {
			for _, s := range ser {
				if ctx.Err() != nil {
					break
				}
				// The estimate is the mean of the configurations so far: a larger N takes
				// longer, so it runs short while the cluster counts grow.
				k++
				e.say("%s %s N=%d %s%s", progress.Mark(k, total), w, n, s.name, progress.Left(time.Since(start), k-1, total))
				cfg := e.runConfig(ctx, w, s, n)
				rep.Configs = append(rep.Configs, cfg)
				if cfg.Error != "" {
					failed = append(failed, fmt.Sprintf("%s %s N=%d: %s", w, s.name, n, cfg.Error))
					e.say("[%s N=%d %s] FAILED: %s", w, n, s.name, cfg.Error)
				}
			}
		}
	}
	return failed
}
