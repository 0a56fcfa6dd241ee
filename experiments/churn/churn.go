// Package churn is the churn soak (issue 26): a long run in which simulated clients of
// both protocols connect, subscribe, ACK, sometimes NACK and leave, real Envoys are
// killed and restarted, and the control planes publish steadily, while the process's
// heap, goroutines, open fds and xds.log sizes are sampled. It exists to show that
// nothing grows without bound under churn (what a short test cannot show) and that the
// xds.log stays whole: every send answered or closed, no line torn, no process left.
//
// One control plane serves one mode, so the soak runs two in this one process (a SotW
// and a delta plane, each with its own recorder and xds-<mode>.log), half the clients on
// each; the figures sampled are the process's, both planes together.
package churn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/shared/protocol"
)

// Soak is one configured soak; Run runs it once.
type Soak struct {
	o   Options
	bin envoy.Binary
}

// New validates o (after WithDefaults) and finds Envoy when o wants any.
func New(o Options) (*Soak, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &Soak{o: o}
	if o.Envoys > 0 {
		bin, err := envoy.Find(o.EnvoyBin)
		if err != nil {
			return nil, fmt.Errorf("churn: %w", err)
		}
		s.bin = bin
	}
	return s, nil
}

// Options returns the options in force (defaults filled in).
func (s *Soak) Options() Options { return s.o }

// Result is what a run measured and judged (summary.json).
type Result struct {
	Options   Options                 `json:"options"`
	Samples   []Sample                `json:"samples"`
	Clients   ClientCounts            `json:"clients"`
	Publishes int64                   `json:"publishes"`
	Restarts  int64                   `json:"envoy_restarts"`
	EnvoyPids []int                   `json:"envoy_pids"`
	Logs      map[string]LogIntegrity `json:"logs"`
	Verdicts  []Verdict               `json:"verdicts"`
	Passed    bool                    `json:"passed"`
}

// run is the running parts of one Run.
type run struct {
	planes    []*plane
	pop       population
	fleet     fleet
	publishes atomic.Int64
}

// Run runs the soak for Duration (or until ctx ends), writing a progress line to
// progress after every sample, then stops everything, judges and writes samples.csv,
// samples.svg, summary.json and report.md into Out. The error is a run that could not
// be run; a failed verdict is Result.Passed false.
func (s *Soak) Run(ctx context.Context, progress io.Writer) (*Result, error) {
	o := s.o
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("churn: %w", err)
	}
	r := &run{}
	if err := r.startPlanes(ctx, o); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var pubErr error
	var wg sync.WaitGroup
	wg.Go(func() { pubErr = publishLoop(rctx, r.planes, o.PublishRate, func() { r.publishes.Add(1) }) })
	for i, p := range r.planes {
		n := o.Clients / 2
		if i == 0 {
			n = o.Clients - n
		}
		r.pop.start(rctx, p.mode, p.cp.Addr(), n, o, uint64(o.Seed)+uint64(i))
	}
	r.fleet.start(rctx, r.envoySpecs(o), s.bin, o)
	samples := r.sample(rctx, o, progress)
	wg.Wait()
	r.pop.wait()
	envoyErr := r.fleet.wait()
	for _, p := range r.planes {
		p.stop()
	}
	if pubErr != nil {
		return nil, pubErr
	}
	if envoyErr != nil {
		return nil, envoyErr
	}
	res, err := r.judge(o, samples)
	if err != nil {
		return nil, err
	}
	return res, writeResult(o.Out, res)
}

// startPlanes starts the SotW and the delta plane, each with its Envoys' nodes.
func (r *run) startPlanes(ctx context.Context, o Options) error {
	for _, mode := range protocol.Modes {
		var nodes []string
		for i := range o.Envoys {
			if envoyMode(i) == mode {
				nodes = append(nodes, EnvoyNode(i))
			}
		}
		p, err := startPlane(ctx, mode, o.Out, nodes)
		if err != nil {
			for _, q := range r.planes {
				q.stop()
			}
			return err
		}
		r.planes = append(r.planes, p)
	}
	return nil
}

// envoyMode is the i-th Envoy's mode: even ones SotW, odd ones delta (3 Envoys: 2+1).
func envoyMode(i int) protocol.Mode { return protocol.Modes[i%len(protocol.Modes)] }

// envoySpecs names each Envoy's node, mode and control plane.
func (r *run) envoySpecs(o Options) []envoySpec {
	var out []envoySpec
	for i := range o.Envoys {
		for _, p := range r.planes {
			if p.mode == envoyMode(i) {
				out = append(out, envoySpec{node: EnvoyNode(i), mode: p.mode, xdsAddr: p.cp.Addr()})
			}
		}
	}
	return out
}

// sample takes a Sample every SampleEvery until ctx ends, and one at the start.
func (r *run) sample(ctx context.Context, o Options, progress io.Writer) []Sample {
	start := time.Now()
	t := time.NewTicker(o.SampleEvery)
	defer t.Stop()
	var out []Sample
	for {
		s := takeSample()
		s.Elapsed = time.Since(start)
		for _, p := range r.planes {
			s.LogBytes += p.logSize()
		}
		s.Publishes, s.Connected, s.Restarts = r.publishes.Load(), r.pop.connected.Load(), r.fleet.restarts.Load()
		out = append(out, s)
		fmt.Fprintf(progress, "churn %s/%s: heap %.1f MiB, %d goroutines, %d fds, xds.log %.1f MiB, %d publishes, %d clients connected, %d Envoy restarts\n",
			s.Elapsed.Round(time.Second), o.Duration, float64(s.HeapBytes)/(1<<20), s.Goroutines, s.FDs, float64(s.LogBytes)/(1<<20), s.Publishes, s.Connected, s.Restarts)
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
	}
}

// judge checks the logs and the processes and applies every verdict.
func (r *run) judge(o Options, samples []Sample) (*Result, error) {
	res := &Result{Options: o, Samples: samples, Clients: r.pop.counts(), Publishes: r.publishes.Load(),
		Restarts: r.fleet.restarts.Load(), EnvoyPids: r.fleet.started(), Logs: map[string]LogIntegrity{}}
	for _, p := range r.planes {
		li, err := CheckLog(p.path)
		if err != nil {
			return nil, err
		}
		res.Logs[filepath.Base(p.path)] = li
	}
	res.Verdicts = []Verdict{
		GrowthVerdict(samples, o.Baseline, o.GrowthLimit),
		LogRateVerdict(samples, o.Baseline, o.LogRateLimit),
		IntegrityVerdict(res.Logs),
		OrphanVerdict(res.EnvoyPids, os.Getpid()),
	}
	res.Passed = true
	for _, v := range res.Verdicts {
		res.Passed = res.Passed && v.Passed
	}
	return res, nil
}

// writeResult writes samples.csv, samples.svg, summary.json and report.md.
func writeResult(dir string, res *Result) error {
	if err := writeCSV(filepath.Join(dir, "samples.csv"), res.Samples); err != nil {
		return fmt.Errorf("churn: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "samples.svg"), chartSVG(res.Samples), 0o644); err != nil {
		return fmt.Errorf("churn: %w", err)
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("churn: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("churn: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), reportMD(res), 0o644)
}
