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
// bench.json, bench.md and an SVG chart, and a table is printed.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/progress"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
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
	MaxRepeat   = 1000
)

// Defaults for the CLI.
var (
	DefaultClusters = []int{10, 100, 1000, 10000}
	DefaultModes    = []string{xdslog.ModeSotW, xdslog.ModeDelta}
	DefaultVersions = []frontend.VersionStrategy{frontend.Uniform, frontend.PerType}
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
	Modes []string
	// SotWVersions are the SotW version strategies to measure (ignored without sotw).
	// The LinearCache versions each type itself, so with it only per-type runs: uniform
	// is skipped for it (a progress note says so), and refused when nothing else would
	// measure it.
	SotWVersions []frontend.VersionStrategy
	// Caches are the library caches to measure (DefaultCaches when empty).
	Caches []frontend.Cache
	// Workloads are the changes to measure (DefaultWorkloads when empty).
	Workloads []string
	// Repeat is how many changes each configuration measures.
	Repeat int
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

// Validate checks o and fills defaults; every problem is one line naming the flag.
func (o *Options) Validate() error {
	if len(o.Clusters) == 0 {
		return errors.New("--clusters: give at least one cluster count")
	}
	seen := map[int]bool{}
	for _, n := range o.Clusters {
		if n < 1 || n > MaxClusters {
			return fmt.Errorf("--clusters: %d is outside 1..%d", n, MaxClusters)
		}
		if seen[n] {
			return fmt.Errorf("--clusters: %d is listed twice", n)
		}
		seen[n] = true
	}
	o.Clusters = slices.Sorted(slices.Values(o.Clusters))
	if o.Clients == 0 {
		o.Clients = 1
	}
	if o.Clients < 1 || o.Clients > MaxClients {
		return fmt.Errorf("--clients: %d is outside 1..%d", o.Clients, MaxClients)
	}
	switch o.Client {
	case "":
		o.Client = ClientEnvoy
	case ClientEnvoy, ClientSim, ClientGRPC:
	default:
		return fmt.Errorf("--client: unknown client %q (want envoy, grpc or sim)", o.Client)
	}
	if o.Envoys == 0 {
		o.Envoys = 1
	}
	if o.Client == ClientGRPC {
		if o.Envoys < 1 || o.Envoys > MaxGRPCClients {
			return fmt.Errorf("--envoys: %d is outside 1..%d (grpc-go clients)", o.Envoys, MaxGRPCClients)
		}
	} else if o.Envoys < 1 || o.Envoys > MaxEnvoys {
		return fmt.Errorf("--envoys: %d is outside 1..%d", o.Envoys, MaxEnvoys)
	}
	if o.Envoys > 1 && o.Clients > 1 {
		return fmt.Errorf("--envoys %d with --clients %d: give one or the other (several Envoys, or fan-out clients with --client sim)", o.Envoys, o.Clients)
	}
	if o.Envoys > 1 && o.Client != ClientEnvoy && o.Client != ClientGRPC {
		return fmt.Errorf("--envoys %d: more than one Envoy needs --client envoy (got --client %s)", o.Envoys, o.Client)
	}
	if o.Clients > 1 && o.Client != ClientSim {
		return fmt.Errorf("--clients %d: more than one client needs --client sim (the bench runs one Envoy)", o.Clients)
	}
	if err := bootstrap.CheckStats(o.EnvoyStats); err != nil {
		return fmt.Errorf("--envoy-stats: %w", err)
	}
	if o.EnvoyStats == "" {
		o.EnvoyStats = bootstrap.StatsAll
	}
	if o.EnvoyStats != bootstrap.StatsAll && o.Client != ClientEnvoy {
		return fmt.Errorf("--envoy-stats %s: needs --client envoy (got --client %s)", o.EnvoyStats, o.Client)
	}
	if o.Unprobed == "" {
		o.Unprobed = UnprobedDeadPort
	}
	if !slices.Contains(UnprobedSettings, o.Unprobed) {
		return fmt.Errorf("--unprobed: unknown setting %q (want %s or %s)", o.Unprobed, UnprobedDeadPort, UnprobedNoEndpoints)
	}
	if o.Unprobed != UnprobedDeadPort && len(o.OnDemand) > 0 {
		return fmt.Errorf("--unprobed %s: the on-demand sequence has its own states (drop --on-demand or --unprobed)", o.Unprobed)
	}
	if len(o.Modes) == 0 {
		return errors.New("--modes: give sotw, delta or both")
	}
	seenMode := map[string]bool{}
	for _, m := range o.Modes {
		if m != xdslog.ModeSotW && m != xdslog.ModeDelta {
			return fmt.Errorf("--modes: unknown mode %q (want sotw or delta)", m)
		}
		if seenMode[m] {
			return fmt.Errorf("--modes: %s is listed twice", m)
		}
		seenMode[m] = true
	}
	if seenMode[xdslog.ModeSotW] {
		if len(o.SotWVersions) == 0 {
			return errors.New("--sotw-versions: give uniform, per-type or both")
		}
		seenV := map[frontend.VersionStrategy]bool{}
		for _, v := range o.SotWVersions {
			if _, err := frontend.ParseVersionStrategy(string(v)); err != nil || v == "" {
				return fmt.Errorf("--sotw-versions: unknown strategy %q (want uniform or per-type)", v)
			}
			if seenV[v] {
				return fmt.Errorf("--sotw-versions: %s is listed twice", v)
			}
			seenV[v] = true
		}
	}
	if o.Repeat < 1 || o.Repeat > MaxRepeat {
		return fmt.Errorf("--repeat: %d is outside 1..%d", o.Repeat, MaxRepeat)
	}
	if len(o.Caches) == 0 {
		o.Caches = slices.Clone(DefaultCaches)
	}
	seenCache := map[frontend.Cache]bool{}
	for _, c := range o.Caches {
		if c == "" {
			return errors.New("--cache: empty cache name (want snapshot, linear or indexed)")
		}
		if _, err := frontend.ParseCache(string(c)); err != nil {
			return fmt.Errorf("--cache: unknown cache %q (want snapshot, linear or indexed)", c)
		}
		if seenCache[c] {
			return fmt.Errorf("--cache: %s is listed twice", c)
		}
		seenCache[c] = true
	}
	if seenMode[xdslog.ModeSotW] && len(o.Caches) == 1 && o.Caches[0].VersionsPerType() &&
		len(o.SotWVersions) == 1 && o.SotWVersions[0] == frontend.Uniform {
		return errors.New("--sotw-versions: uniform needs the snapshot cache: each LinearCache versions its own type (want per-type with --cache linear, or --cache snapshot,linear)")
	}
	if len(o.Workloads) == 0 {
		o.Workloads = slices.Clone(DefaultWorkloads)
	}
	seenW := map[string]bool{}
	for _, w := range o.Workloads {
		if err := parseWorkload(w); err != nil {
			return fmt.Errorf("--workload: %w", err)
		}
		if seenW[w] {
			return fmt.Errorf("--workload: %s is listed twice", w)
		}
		seenW[w] = true
	}
	// What the workloads need of N: the route workload retargets route 0 at cluster 1;
	// cluster-remove removes one cluster per repeat and keeps cluster 0.
	if seenW[WorkloadRoute] && o.Clusters[0] < 2 {
		return fmt.Errorf("--clusters: the route workload points route 0 at cluster 1, so every count must be at least 2 (got %d)", o.Clusters[0])
	}
	if seenW[WorkloadClusterRemove] && o.Clusters[0] <= o.Repeat {
		return fmt.Errorf("--repeat: the cluster-remove workload removes one cluster per repeat and keeps at least one, so --repeat %d needs every cluster count above %d (got %d)", o.Repeat, o.Repeat, o.Clusters[0])
	}
	if len(o.Through) == 0 {
		o.Through = slices.Clone(DefaultThrough)
	}
	seenT := map[string]bool{}
	for _, t := range o.Through {
		if t != ThroughDirect && t != ThroughTap {
			return fmt.Errorf("--through: unknown way %q (want direct or tap)", t)
		}
		if seenT[t] {
			return fmt.Errorf("--through: %s is listed twice", t)
		}
		seenT[t] = true
	}
	if o.Timeout < 0 {
		return fmt.Errorf("--timeout: %s is negative", o.Timeout)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if err := o.validateOnDemand(); err != nil {
		return err
	}
	if err := o.validateGRPC(); err != nil {
		return err
	}
	if o.Out == "" {
		o.Out = DefaultOut()
	}
	return nil
}

// series is one line of the chart: a library cache and a protocol with, for SotW, its
// version strategy. With the snapshot cache the names are the ones bench.json always had
// ("sotw-uniform", "sotw-per-type", "delta"), so earlier reports stay comparable; the
// LinearCache's carry it ("sotw-per-type/linear", "delta/linear").
type series struct {
	name     string
	cache    frontend.Cache
	mode     string
	versions frontend.VersionStrategy
	// tap: the client connects through an ADS tap (the name ends in "+tap").
	tap bool
}

// file is the series name as it appears in file names ("sotw-per-type-linear").
func (s series) file() string { return strings.ReplaceAll(s.name, "/", "-") }

func seriesName(cache frontend.Cache, mode string, versions frontend.VersionStrategy) string {
	name := mode
	if mode == xdslog.ModeSotW {
		name += "-" + string(versions)
	}
	if cache != frontend.SnapshotCache {
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
			if m == xdslog.ModeDelta {
				out = append(out, series{name: seriesName(c, m, ""), cache: c, mode: m})
				continue
			}
			for _, v := range o.SotWVersions {
				if controlplane.CheckCacheOptions(c, m, v, "") != nil {
					notes = append(notes, fmt.Sprintf("%s is not run with --cache %s: each LinearCache versions its own type, so SotW under it is per-type only", seriesName(frontend.SnapshotCache, m, v), c))
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
			return nil, fmt.Errorf("--client envoy: %w", err)
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
		defer b.stop()
	}
	dead, err := loopback.FreePort()
	if err != nil {
		return nil, err
	}
	defer loopback.Release(dead) // after every configuration's Envoy is gone
	e.deadPort = dead

	rep := newReport(&o, e.bin)
	ser, notes := o.series()
	names := make([]string, len(ser))
	for i, s := range ser {
		names[i] = s.name
	}
	var client string // what the sweep drives, for its opening line
	if o.Clients > 1 {
		client = fmt.Sprintf("%d fan-out clients (ack-only)", o.Clients)
	} else if o.Client == ClientGRPC {
		client = fmt.Sprintf("%d x grpc-go client (lab grpc-client), each its own node (%s..%s)", o.Envoys, GRPCNodeID(0), GRPCNodeID(o.Envoys-1))
	} else if o.Client == ClientEnvoy && o.Envoys > 1 {
		client = fmt.Sprintf("%d x %s, each its own node (%s..%s)", o.Envoys, e.bin.String(), FleetNodeID(0), FleetNodeID(o.Envoys-1))
	} else if o.Client == ClientEnvoy {
		client = e.bin.String()
	} else {
		client = "simulated Envoy (in-process)"
	}
	if len(o.OnDemand) > 0 {
		e.say("bench: %d on-demand configuration(s): shape %s x N %s x %s; %s; %d cold host(s), %d repeat(s); output %s",
			len(o.OnDemand)*len(o.Clusters)*len(ser), shapeNames(o.OnDemand), joinInts(o.Clusters), strings.Join(names, ", "), client, o.ColdHosts, o.Repeat, o.Out)
	} else {
		e.say("bench: %d configuration(s): workload %s x N %s x %s; %s; %d repeat(s); output %s",
			len(o.Workloads)*len(o.Clusters)*len(ser), strings.Join(o.Workloads, ","), joinInts(o.Clusters), strings.Join(names, ", "), client, o.Repeat, o.Out)
	}
	for _, n := range notes {
		e.say("bench: note: %s", n)
	}
	start := time.Now()
	var failed []string
	if len(o.OnDemand) > 0 {
		failed = e.onDemandSweep(ctx, rep, ser, start)
	} else {
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

// validateGRPC checks what the grpc-go client cannot run: delta (grpc-go has no delta
// client: grpcclient.ErrNoDelta), the on-demand axis, the fan-out clients, and the
// workloads whose proof is Envoy's own (the listener's server header, Envoy's 404): it
// runs the endpoint workload, whose proof is which backend answered the RPC.
func (o *Options) validateGRPC() error {
	if o.Client != ClientGRPC {
		return nil
	}
	if slices.Contains(o.Modes, xdslog.ModeDelta) {
		return &OptionError{Flag: "modes", Value: strings.Join(o.Modes, ","), Reason: grpcclient.ErrNoDelta.Error(), Err: grpcclient.ErrNoDelta}
	}
	if o.Clients > 1 {
		return &OptionError{Flag: "clients", Value: fmt.Sprint(o.Clients), Reason: "fan-out clients need --client sim (count grpc-go clients with --envoys)"}
	}
	for _, w := range o.Workloads {
		if w != WorkloadEndpoint {
			return &OptionError{Flag: "workload", Value: strings.Join(o.Workloads, ","), Reason: "--client grpc runs the endpoint workload only (the others prove the change by Envoy's server header or 404)"}
		}
	}
	return nil
}
