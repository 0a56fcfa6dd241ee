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
//
// This package is the entry point (Run, Report, ReadReport, the rendering of the common
// tables) and holds the workload sweep, the fleet (--envoys K), the tap series
// (--through) and the stuck clients. Run hands the on-demand axis (--on-demand) to
// experiments/bench/ondemand and the churn axis (--churn) to experiments/bench/churn;
// all three build on experiments/bench/benchcore, which holds the Options, their
// validation and the data plane, meter and table cells they share.
package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/bench/churn"
	"github.com/xds-workbench/lab/experiments/bench/ondemand"
	"github.com/xds-workbench/lab/experiments/progress"
)

// Run validates o and runs the sweep. It writes bench.json, bench.md and bench.svg into
// o.Out even when a configuration fails (that configuration then carries its error), and
// returns the report with an error naming the failed configurations.
func Run(ctx context.Context, o benchcore.Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	e := &benchcore.Env{Options: &o, Progress: o.Progress}
	if e.Progress == nil {
		e.Progress = io.Discard
	}
	stop, err := e.Prepare()
	if err != nil {
		return nil, err
	}
	defer stop()

	rep := newReport(&o, e.Bin)
	ser, notes := o.Series()
	announce(e, ser, notes)
	start := time.Now()
	var failed []string
	switch {
	case len(o.Churn) > 0:
		rep.Churn, failed = churn.Sweep(ctx, e, ser, start)
	case len(o.OnDemand) > 0:
		rep.OnDemand, failed = ondemand.Sweep(ctx, e, ser, start)
	default:
		failed = workloadSweep(ctx, e, rep, ser, start)
	}
	rep.finish(start)
	werr := rep.WriteFiles(o.Out)
	rep.WriteTable(e.Progress)
	e.Say("bench: wall time %.1f s; bench.json, bench.md, bench.svg and the xds logs are in %s", rep.WallSeconds, o.Out)
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

// announce says what the sweep runs, and what it leaves out.
func announce(e *benchcore.Env, ser []benchcore.Series, notes []string) {
	o := e.Options
	names := make([]string, len(ser))
	for i, s := range ser {
		names[i] = s.Name
	}
	client := clientName(e)
	switch {
	case len(o.Churn) > 0:
		e.Say("bench: %d churn configuration(s): churn %s x N %s x %s; %s; %d requests at %d/s, an update every %s, connection cost %s; output %s",
			len(o.Churn)*len(o.Clusters)*len(ser), strings.Join(o.Churn, ","), joinInts(o.Clusters), strings.Join(names, ", "), client, o.ChurnRequests, o.ChurnRate, o.ChurnEvery, o.ConnCost, o.Out)
	case len(o.OnDemand) > 0:
		e.Say("bench: %d on-demand configuration(s): shape %s x N %s x %s; %s; %d cold host(s), %d repeat(s); output %s",
			len(o.OnDemand)*len(o.Clusters)*len(ser), benchcore.ShapeNames(o.OnDemand), joinInts(o.Clusters), strings.Join(names, ", "), client, o.ColdHosts, o.Repeat, o.Out)
	default:
		e.Say("bench: %d configuration(s): workload %s x N %s x %s; %s; %d repeat(s); output %s",
			len(o.Workloads)*len(o.Clusters)*len(ser), strings.Join(o.Workloads, ","), joinInts(o.Clusters), strings.Join(names, ", "), client, o.Repeat, o.Out)
	}
	for _, n := range notes {
		e.Say("bench: note: %s", n)
	}
}

// clientName says what the clients are, for the progress line.
func clientName(e *benchcore.Env) string {
	o := e.Options
	switch {
	case o.Clients > 1:
		return fmt.Sprintf("%d fan-out clients (ack-only)", o.Clients)
	case o.Client == benchcore.ClientGRPC:
		return fmt.Sprintf("%d x grpc-go client (lab grpc-client), each its own node (%s..%s)", o.Envoys, GRPCNodeID(0), GRPCNodeID(o.Envoys-1))
	case o.Client == benchcore.ClientEnvoy && o.Envoys > 1:
		return fmt.Sprintf("%d x %s, each its own node (%s..%s)", o.Envoys, e.Bin.String(), FleetNodeID(0), FleetNodeID(o.Envoys-1))
	case o.Client == benchcore.ClientEnvoy:
		return e.Bin.String()
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
	h.LoadStart = benchcore.LoadAvg()
	return h
}

// workloadSweep runs every (workload, N, series) into rep and returns the failed ones.
func workloadSweep(ctx context.Context, e *benchcore.Env, rep *Report, ser []benchcore.Series, start time.Time) []string {
	o := e.Options
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
				e.Say("%s %s N=%d %s%s", progress.Mark(k, total), w, n, s.Name, progress.Left(time.Since(start), k-1, total))
				cfg := runConfig(ctx, e, w, s, n)
				rep.Configs = append(rep.Configs, cfg)
				if cfg.Error != "" {
					failed = append(failed, fmt.Sprintf("%s %s N=%d: %s", w, s.Name, n, cfg.Error))
					e.Say("[%s N=%d %s] FAILED: %s", w, n, s.Name, cfg.Error)
				}
			}
		}
	}
	return failed
}
