// Package bench measures how each xDS protocol's cost grows with the number of resources
// and clients (`lab bench`). For every cluster count N and every protocol (SotW with each
// version strategy, delta) it starts a control plane on loopback with an xds.log
// recorder, brings a client (real Envoy, the simulated Envoy, or K fan-out clients) to
// full ACK of the scaled state, then changes one endpoint of one cluster several times and
// measures each change: what was sent (from the recorder's events), how long the control
// plane and the client took, the CPU and memory both sides used and, with Envoy, when the
// new endpoint first answered a real request. Results go to bench.json, bench.md and an
// SVG chart, and a table is printed.
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

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Client kinds (--client). With --clients > 1 the bench runs clientAckOnly clients.
const (
	ClientEnvoy   = "envoy"
	ClientSim     = "sim"
	clientAckOnly = "ack-only"
)

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

// DefaultRepeat is how many single-endpoint changes each configuration measures.
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
	// Modes are "sotw" and/or "delta".
	Modes []string
	// SotWVersions are the SotW version strategies to measure (ignored without sotw).
	SotWVersions []frontend.VersionStrategy
	// Repeat is how many single-endpoint changes each configuration measures.
	Repeat int
	// Out is the output directory (DefaultOut() when empty).
	Out string
	// EnvoyBin overrides where Envoy is found (envoy.Find).
	EnvoyBin string
	// Timeout bounds one configuration (DefaultTimeout when 0).
	Timeout time.Duration
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
	case ClientEnvoy, ClientSim:
	default:
		return fmt.Errorf("--client: unknown client %q (want envoy or sim)", o.Client)
	}
	if o.Clients > 1 && o.Client != ClientSim {
		return fmt.Errorf("--clients %d: more than one client needs --client sim (the bench runs one Envoy)", o.Clients)
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
	if o.Timeout < 0 {
		return fmt.Errorf("--timeout: %s is negative", o.Timeout)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Out == "" {
		o.Out = DefaultOut()
	}
	return nil
}

// series is one line of the chart: a protocol with, for SotW, its version strategy.
type series struct {
	name     string
	mode     string
	versions frontend.VersionStrategy
}

func (o *Options) series() []series {
	var out []series
	for _, m := range o.Modes {
		if m == xdslog.ModeDelta {
			out = append(out, series{name: "delta", mode: m})
			continue
		}
		for _, v := range o.SotWVersions {
			out = append(out, series{name: "sotw-" + string(v), mode: m, versions: v})
		}
	}
	return out
}

// env is what every configuration of a sweep shares.
type env struct {
	o        *Options
	bin      envoy.Binary
	backends [2]*identity
	// deadPort is where every cluster but the changed one points: nothing listens there,
	// and Envoy never connects to it since only /quote/<changed> is requested.
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
	e.deadPort = dead

	rep := newReport(&o, e.bin)
	ser := o.series()
	names := make([]string, len(ser))
	for i, s := range ser {
		names[i] = s.name
	}
	client := o.Client
	if o.Clients > 1 {
		client = fmt.Sprintf("%d fan-out clients (ack-only)", o.Clients)
	} else if o.Client == ClientEnvoy {
		client = e.bin.String()
	} else {
		client = "simulated Envoy (in-process)"
	}
	e.say("bench: %d configuration(s): N %s x %s; %s; %d repeat(s); output %s",
		len(o.Clusters)*len(ser), joinInts(o.Clusters), strings.Join(names, ", "), client, o.Repeat, o.Out)
	start := time.Now()
	var failed []string
	for _, n := range o.Clusters {
		for _, s := range ser {
			if ctx.Err() != nil {
				break
			}
			cfg := e.runConfig(ctx, s, n)
			rep.Configs = append(rep.Configs, cfg)
			if cfg.Error != "" {
				failed = append(failed, fmt.Sprintf("%s N=%d: %s", s.name, n, cfg.Error))
				e.say("[N=%d %s] FAILED: %s", n, s.name, cfg.Error)
			}
		}
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
