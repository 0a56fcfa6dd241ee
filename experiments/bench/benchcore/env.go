package benchcore

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
)

// Client kinds (--client). With --clients > 1 the bench runs ClientAckOnly clients.
const (
	ClientEnvoy = "envoy"
	ClientSim   = "sim"
	// ClientGRPC runs grpc-go's proxyless xDS client, one `lab grpc-client` process per
	// node (experiments/grpcclient), in the fleet seam the Envoys use: --envoys K counts
	// them (each a proxy of the fleet: its own node, state and front door).
	ClientGRPC    = "grpc"
	ClientAckOnly = "ack-only"
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
	// the on-demand sequence (experiments/bench/ondemand) once per shape and delta series
	// instead of the workload loop. Delta only (resources.ErrOnDemandNeedsDelta), real
	// Envoy only.
	OnDemand []resources.OnDemand
	// Churn are the modes of the churn axis (--churn: ChurnEDS, ChurnCDS): with any, each
	// N runs the churn sequence (experiments/bench/churn) once per mode and series instead
	// of the workload loop. Real Envoy only (ErrChurnNeedsEnvoy).
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

// Series is one line of the chart: a library cache and a protocol with, for SotW, its
// version strategy. With the snapshot cache the names are the ones bench.json always had
// ("sotw-uniform", "sotw-per-type", "delta"), so earlier reports stay comparable; the
// LinearCache's carry it ("sotw-per-type/linear", "delta/linear").
type Series struct {
	Name     string
	Cache    publish.Cache
	Mode     protocol.Mode
	Versions publish.VersionStrategy
	// Tap: the client connects through an ADS tap (the name ends in "+tap").
	Tap bool
}

// File is the series name as it appears in file names ("sotw-per-type-linear").
func (s Series) File() string { return strings.ReplaceAll(s.Name, "/", "-") }

func SeriesName(cache publish.Cache, mode protocol.Mode, versions publish.VersionStrategy) string {
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
func (o *Options) withThrough(in []Series) []Series {
	var out []Series
	for _, s := range in {
		for _, t := range o.Through {
			x := s
			if t == ThroughTap {
				x.Tap, x.Name = true, s.Name+TapSuffix
			}
			out = append(out, x)
		}
	}
	return out
}

// Series lists the series to run, cache by cache in --cache order, and the notes that
// say what was skipped: SotW with uniform versions under the LinearCache, which versions
// each type itself (controlplane.CheckCacheOptions refuses it).
func (o *Options) Series() ([]Series, []string) {
	var (
		out   []Series
		notes []string
	)
	for _, c := range o.Caches {
		for _, m := range o.Modes {
			if m == protocol.Delta {
				out = append(out, Series{Name: SeriesName(c, m, ""), Cache: c, Mode: m})
				continue
			}
			for _, v := range o.SotWVersions {
				if controlplane.CheckCacheOptions(c, m, v, "") != nil {
					notes = append(notes, fmt.Sprintf("%s is not run with --cache %s: each LinearCache versions its own type, so SotW under it is per-type only", SeriesName(publish.SnapshotCache, m, v), c))
					continue
				}
				out = append(out, Series{Name: SeriesName(c, m, v), Cache: c, Mode: m, Versions: v})
			}
		}
	}
	return o.withThrough(out), notes
}

// Env is what every configuration of a sweep shares.
type Env struct {
	Options  *Options
	Bin      envoy.Binary
	Backends [2]*identity
	// DeadPort is where every cluster but the probed ones points: nothing listens there,
	// and Envoy never connects to it since only the probed paths are requested.
	DeadPort int
	Progress io.Writer
}

func (e *Env) Say(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, format+"\n", args...)
	}
}

// RunBounded runs one measurement under Options.Timeout, then close, whatever run
// returned: what a measurement started is stopped even when it failed or timed out.
// The run's error wins over close's.
func (e *Env) RunBounded(ctx context.Context, run func(context.Context) error, close func() error) error {
	ctx, cancel := context.WithTimeout(ctx, e.Options.Timeout)
	defer cancel()
	err := run(ctx)
	if cerr := close(); err == nil {
		err = cerr
	}
	return err
}

// Prepare finds what every configuration shares: the client's binary, the output
// directory, the two backends and the dead port. stop releases them once every
// configuration's Envoy is gone.
func (e *Env) Prepare() (stop func(), err error) {
	o := e.Options
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
		e.Bin = bin
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	for i, name := range []string{"endpoint-a", "endpoint-b"} {
		b, err := startIdentity(name)
		if err != nil {
			for _, s := range e.Backends[:i] {
				s.stop()
			}
			return nil, err
		}
		e.Backends[i] = b
	}
	stopBackends := func() {
		for i := len(e.Backends) - 1; i >= 0; i-- {
			e.Backends[i].stop()
		}
	}
	dead, err := loopback.FreePort()
	if err != nil {
		stopBackends()
		return nil, err
	}
	e.DeadPort = dead
	return func() {
		loopback.Release(dead) // after every configuration's Envoy is gone
		stopBackends()
	}, nil
}

// LoadAvg is the first three fields of /proc/loadavg ("" elsewhere): the machine is
// shared, and a busy machine explains noisy times.
func LoadAvg() string {
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

// How a series reaches its control plane (--through).
const (
	// ThroughDirect: the client connects to the control plane (the bench as it always ran).
	ThroughDirect = "direct"
	// ThroughTap: the client connects to an ADS tap (experiments/tap) forwarding to the
	// control plane; the series is named "<series>+tap" and the tap records its own log,
	// xds-<stem>.tap.log, beside the control plane's.
	ThroughTap = "tap"
)

// TapSuffix is what a series through the tap adds to its name.
const TapSuffix = "+tap"

// DefaultThrough measures the control plane directly only.
var DefaultThrough = []string{ThroughDirect}

// MaxEnvoys bounds --envoys: ten Envoys at N = 1,000 fit a 2-core, 24 GB machine
// beside the control plane (about 130 MB of RSS each; an endpoint change costs the ten
// about 13 ms of CPU in all).
const MaxEnvoys = 10
