// Package sweep runs one scenario through real Envoy at several steady load rates, and
// once without load, interleaved (every rate once, then again for each repeat), so that
// the figures of one sweep share the machine's conditions. Per rate it reports what the
// load achieved against what was asked, the failures, the latency percentiles, Envoy's
// CPU, and the publish-to-ACK median over the scenario's publish steps; from those, the
// highest rate this machine sustains while the changes land, and the overhead the load
// adds to publish-to-ACK as a ratio to the run without load.
//
// A rate is sustained when its runs pass (every expectation of the scenario, its traffic
// checks included: no failure where the scenario allows none) and every step achieved at
// least SustainedShare of the asked rate.
package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/experiments/progress"
	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/stats"
)

// SustainedShare is the share of the asked rate every step must achieve.
const SustainedShare = 0.95

// MaxRuns bounds a sweep (rates x repeats).
const MaxRuns = 200

// Options configure a sweep.
type Options struct {
	Scenario *scenario.Scenario
	// Rates are requests per second; 0 is the run without load (added when missing: the
	// ratio needs it).
	Rates       []int
	Connections int
	Protocol    load.Protocol
	Mode        protocol.Mode
	Cache       publish.Cache
	Repeat      int
	Out         string
	EnvoyBin    string
	Progress    io.Writer
	// execute runs one scenario (runner.Execute; tests replace it).
	execute func(context.Context, runner.Options) (*runner.Result, error)
}

// Point is one rate's figures, over its repeats.
type Point struct {
	Rate int `json:"rate"`
	// Runs and Passed count its runs and those that passed; Failure is the first failure.
	Runs    int    `json:"runs"`
	Passed  int    `json:"passed"`
	Failure string `json:"failure,omitempty"`
	// Requests and Failed are over every step of every run.
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	// MinShare is the lowest achieved/asked over every step (1 without load).
	MinShare float64 `json:"min_achieved_share"`
	// P99MS and MaxMS: the highest step p99 and max latency.
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
	// PublishToAckMS is the median of the publish steps' publish-to-ACK medians.
	PublishToAckMS *float64 `json:"publish_to_ack_ms_median,omitempty"`
	// AckRatio is PublishToAckMS over the no-load point's.
	AckRatio *float64 `json:"publish_to_ack_ratio,omitempty"`
	// EnvoyCPUPercent is Envoy's CPU over the runs' steps, in % of one core.
	EnvoyCPUPercent *float64 `json:"envoy_cpu_percent,omitempty"`
	Sustained       bool     `json:"sustained"`
	Dirs            []string `json:"dirs"`

	acks            []float64
	envoyMS, stepMS float64
	envoySeen       bool
}

// Report is a sweep's result (sweep.json).
type Report struct {
	Scenario    string        `json:"scenario"`
	Mode        protocol.Mode `json:"mode"`
	Cache       string        `json:"cache"`
	Protocol    string        `json:"protocol"`
	Connections int           `json:"connections"`
	Repeat      int           `json:"repeat"`
	Started     time.Time     `json:"started"`
	Points      []Point       `json:"points"`
	// HighestSustained is the highest sustained rate (0: none).
	HighestSustained int `json:"highest_sustained_rate"`
}

// Check refuses a bad sweep before anything runs.
func (o *Options) Check() error {
	if o.Scenario == nil {
		return errors.New("sweep: no scenario")
	}
	if len(o.Rates) == 0 {
		return errors.New("sweep: no rates")
	}
	seen := map[int]bool{}
	for _, r := range o.Rates {
		if r == 0 {
			continue
		}
		if seen[r] {
			return fmt.Errorf("rate %d is given twice", r)
		}
		seen[r] = true
		lo := load.Options{Rate: r, Connections: o.Connections, Protocol: o.Protocol, Target: "http://127.0.0.1:1/"}
		if err := lo.Check(); err != nil {
			return err
		}
	}
	if o.Repeat < 1 {
		return fmt.Errorf("repeat %d: want at least 1", o.Repeat)
	}
	if n := (len(seen) + 1) * o.Repeat; n > MaxRuns {
		return fmt.Errorf("%d runs (rates x repeat): at most %d", n, MaxRuns)
	}
	return nil
}

// Run performs the sweep, writing each run under Out/rate-<R>/<k> and the report to
// Out/sweep.json. A failed run is a finding (the rate is not sustained), not an error;
// an interrupted sweep returns what it measured so far with the context's error.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.execute == nil {
		o.execute = runner.Execute
	}
	rates := []int{0}
	for _, r := range o.Rates {
		if r != 0 {
			rates = append(rates, r)
		}
	}
	slices.Sort(rates)
	rep := &Report{Scenario: o.Scenario.Name, Mode: o.Mode, Cache: string(o.Cache), Protocol: string(o.Protocol),
		Connections: o.Connections, Repeat: o.Repeat, Started: time.Now().UTC()}
	points := make([]*Point, len(rates))
	for i, r := range rates {
		points[i] = &Point{Rate: r, MinShare: 1}
	}
	unloaded := *o.Scenario
	unloaded.Load = nil
	total, k := len(rates)*o.Repeat, 0
	began := time.Now()
	var err error
runs:
	for rep := range o.Repeat {
		for i, rate := range rates {
			if err = ctx.Err(); err != nil {
				break runs
			}
			k++
			dir := filepath.Join(o.Out, fmt.Sprintf("rate-%d", rate), fmt.Sprint(rep+1))
			ro := runner.Options{Mode: o.Mode, Cache: o.Cache, Client: runner.ClientEnvoy, EnvoyBin: o.EnvoyBin, Out: dir, Scenario: &unloaded}
			if rate > 0 {
				ro.Load = runner.Load{Rate: rate, Connections: o.Connections, Protocol: o.Protocol, Path: loadPath(o.Scenario)}
			}
			say(o.Progress, "%s %s at %s%s", progress.Mark(k, total), o.Scenario.Name, rateText(rate), progress.Left(time.Since(began), k-1, total))
			res, runErr := o.execute(ctx, ro)
			if ctx.Err() != nil {
				err = ctx.Err()
				break runs
			}
			if res == nil {
				return nil, fmt.Errorf("run at %s: %w", rateText(rate), runErr)
			}
			points[i].add(res, runErr)
		}
	}
	for _, p := range points {
		p.finish()
		rep.Points = append(rep.Points, *p)
	}
	if base := rep.Points[0].PublishToAckMS; base != nil && *base > 0 {
		for i := range rep.Points {
			if a := rep.Points[i].PublishToAckMS; a != nil {
				r := *a / *base
				rep.Points[i].AckRatio = &r
			}
		}
	}
	for _, p := range rep.Points {
		if p.Rate > 0 && p.Sustained {
			rep.HighestSustained = p.Rate
		}
	}
	if werr := write(o.Out, rep); werr != nil {
		return rep, errors.Join(err, werr)
	}
	return rep, err
}

// loadPath is what the load requests: the scenario's own load path, if it has one.
func loadPath(sc *scenario.Scenario) string {
	if sc.Load != nil {
		return sc.Load.Path
	}
	return ""
}

func rateText(rate int) string {
	if rate == 0 {
		return "no load"
	}
	return fmt.Sprintf("%d requests/s", rate)
}

func say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// add folds one run into the point: its pass, every step's traffic, CPU and ACKs.
func (p *Point) add(res *runner.Result, runErr error) {
	p.Runs++
	p.Dirs = append(p.Dirs, res.Dir)
	if runErr == nil && res.Passed {
		p.Passed++
	} else if p.Failure == "" {
		p.Failure = res.Failure
		if p.Failure == "" && runErr != nil {
			p.Failure = runErr.Error()
		}
	}
	for _, st := range res.Steps {
		cp, err := readCheckpoint(filepath.Join(res.Dir, st.Checkpoint))
		if err != nil {
			continue // a step that failed before its checkpoint: the failure says so
		}
		if t := cp.Traffic; t != nil {
			p.Requests += t.Requests
			p.Failed += t.Requests - t.OK
			if t.AskedRate > 0 {
				p.MinShare = min(p.MinShare, t.AchievedRate/t.AskedRate)
			}
			p.P99MS, p.MaxMS = max(p.P99MS, t.P99MS), max(p.MaxMS, t.MaxMS)
		}
		if cp.CPU != nil && cp.CPU.EnvoyMS != nil {
			p.envoyMS += *cp.CPU.EnvoyMS
			p.stepMS += st.DurationMS
			p.envoySeen = true
		}
	}
	if res.Figures != nil {
		for _, st := range res.Figures.Steps {
			if st.PublishToAckMS != nil && st.Version != "" {
				p.acks = append(p.acks, *st.PublishToAckMS)
			}
		}
	}
}

func (p *Point) finish() {
	if len(p.acks) > 0 {
		m := stats.Median(p.acks)
		p.PublishToAckMS = &m
	}
	if p.envoySeen && p.stepMS > 0 {
		c := 100 * p.envoyMS / p.stepMS
		p.EnvoyCPUPercent = &c
	}
	p.Sustained = p.Runs > 0 && p.Passed == p.Runs && p.MinShare >= SustainedShare
}

func readCheckpoint(path string) (*runner.Checkpoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cp runner.Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return &cp, nil
}

func write(dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sweep report: %w", err)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("sweep report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sweep.json"), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("sweep report: %w", err)
	}
	return nil
}
