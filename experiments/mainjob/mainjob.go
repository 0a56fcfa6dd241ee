// Package mainjob is the workbench's main job, `make lab` (`lab report`): the teaching
// scenario in five configurations (SotW and delta with each library cache, and SotW
// per-type with hold, which differs from the first SotW run in its options alone), a
// short scale sweep with the simulated client (what grows with N, which one resource
// per type cannot show), and the one report that puts them side by side with the
// protocols' differences first. It says a line per part and where the report is;
// everything else (each run's progress, the sweep's tables) goes to job.log in the
// output directory.
//
// It drives experiments/runner, experiments/bench and experiments/compare; cmd/lab
// only parses its flags.
package mainjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/sotw"
)

// Config is one run of the job: a protocol and the cache and SotW options it runs with.
type Config struct {
	Name       string
	Mode       protocol.Mode
	Cache      publish.Cache
	Versions   publish.VersionStrategy
	NackPolicy sotw.NackPolicy
}

// Configs are the job's runs, in the report's column order (A, B, ...): SotW and delta
// with the SnapshotCache at the teaching defaults, SotW per-type with hold (the same
// cache, other options), and SotW and delta with the LinearCache.
var Configs = []Config{
	{Name: "sotw", Mode: protocol.SotW, Cache: publish.SnapshotCache, Versions: publish.Uniform, NackPolicy: sotw.Resend},
	{Name: "delta", Mode: protocol.Delta, Cache: publish.SnapshotCache},
	{Name: "sotw-per-type-hold", Mode: protocol.SotW, Cache: publish.SnapshotCache, Versions: publish.PerType, NackPolicy: sotw.Hold},
	{Name: "sotw-linear", Mode: protocol.SotW, Cache: publish.LinearCache, Versions: publish.PerType, NackPolicy: sotw.Hold},
	{Name: "delta-linear", Mode: protocol.Delta, Cache: publish.LinearCache},
}

// ScaleClusters are the scale sweep's N: a few seconds with the simulated client.
var ScaleClusters = []int{1, 10, 100, 1000}

// Options are the job's: where its evidence goes, the data plane, and where it speaks.
type Options struct {
	// Out is a new or empty directory: a run directory per Config, scale/ and
	// scale.json, the reports and job.log.
	Out string
	// Client is the runs' data plane (runner.ClientAuto: Envoy when it can be found, else
	// the simulated client, said so).
	Client string
	// Stdout gets a line per part and the report to open; Verbose copies job.log there too.
	Stdout  io.Writer
	Verbose bool
	// StepTimeout bounds each scenario step (runner.Options.StepTimeout).
	StepTimeout time.Duration
}

// ErrOut is a refused output directory.
var ErrOut = errors.New("want a new or empty directory")

// Check validates the options before anything starts.
func (o Options) Check() error {
	if o.Out == "" {
		return fmt.Errorf("out: %w", ErrOut)
	}
	entries, err := os.ReadDir(o.Out)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("out %s: %w", o.Out, err)
	case len(entries) > 0:
		return fmt.Errorf("out %s holds %d entries: %w", o.Out, len(entries), ErrOut)
	}
	return nil
}

// Result is what the job made: each run's outcome, the scale sweep and the reports.
type Result struct {
	Runs   []RunOutcome
	Scale  string // scale.json ("" when the sweep failed)
	Report string // report.html, the one to open
	Matrix *compare.Matrix
}

// RunOutcome is one run's: its directory, envoy.result and how long it took.
type RunOutcome struct {
	Config
	Dir    string
	Result string
	Passed bool
	Took   time.Duration
}

// Run runs the job. A failed run does not stop it: the report compares what ran, and
// the error says which runs failed.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("out: %w", err)
	}
	logf, err := os.Create(filepath.Join(o.Out, "job.log"))
	if err != nil {
		return nil, fmt.Errorf("job log: %w", err)
	}
	defer logf.Close()
	j := &job{o: o, log: logf, say: o.Stdout}
	if o.Verbose {
		j.log = io.MultiWriter(logf, o.Stdout)
	}
	res := &Result{}
	j.sayf("lab report: %d runs of the teaching scenario, a scale sweep and one report, in %s (details: job.log)", len(Configs), o.Out)
	var failed []string
	for i, c := range Configs {
		out := j.run(ctx, i, c)
		res.Runs = append(res.Runs, out)
		if !out.Passed {
			failed = append(failed, c.Name)
		}
	}
	res.Scale = j.scale(ctx)
	if err := j.report(res); err != nil {
		return res, err
	}
	if len(failed) > 0 {
		return res, fmt.Errorf("%d of %d runs failed (%s): see job.log", len(failed), len(Configs), strings.Join(failed, ", "))
	}
	return res, ctx.Err()
}

// job is one Run's output: the log everything goes to, and the few lines it says.
type job struct {
	o   Options
	log io.Writer
	say io.Writer
}

func (j *job) sayf(format string, args ...any) {
	fmt.Fprintf(j.say, format+"\n", args...)
	if j.log != j.say {
		fmt.Fprintf(j.log, format+"\n", args...)
	}
}

// run runs one configuration of the teaching scenario on free loopback ports.
func (j *job) run(ctx context.Context, i int, c Config) RunOutcome {
	sc, err := scenario.Builtin("teaching")
	out := RunOutcome{Config: c, Dir: filepath.Join(j.o.Out, c.Name)}
	if err != nil {
		out.Result = err.Error()
		j.sayf("run %d/%d %-19s FAILED: %v", i+1, len(Configs), c.Name, err)
		return out
	}
	start := time.Now()
	res, err := runner.Execute(ctx, j.runOptions(c, sc, out.Dir))
	out.Took = time.Since(start)
	switch {
	case err != nil:
		out.Result = err.Error()
	case res != nil:
		out.Result, out.Passed = res.EnvoyResult, res.Passed
	}
	j.sayf("run %d/%d %-19s %-6s %5.1fs  %s", i+1, len(Configs), c.Name, verdict(out), out.Took.Seconds(), clientLine(out.Dir))
	if !out.Passed {
		j.sayf("    %s", firstLine(out.Result))
	}
	return out
}

// runOptions are config c's run: every port zero, which the runner takes as a free
// loopback port, so the job works while the defaults are held (a lab serve elsewhere).
func (j *job) runOptions(c Config, sc *scenario.Scenario, dir string) runner.Options {
	return runner.Options{
		Mode: c.Mode, Cache: c.Cache, Versions: c.Versions, NackPolicy: c.NackPolicy, Scenario: sc,
		Client: j.o.Client, Out: dir, StepTimeout: j.o.StepTimeout, Progress: j.log,
	}
}

// verdict is "passed" when every step's expectation held, else "FAILED" (envoy.result
// says NOT_RUN for a simulated client's run: the data plane was computed, not Envoy's).
func verdict(o RunOutcome) string {
	if o.Passed {
		return "passed"
	}
	return "FAILED"
}

// clientLine says which data plane answered, from run.json: "Envoy 1.40.0" or
// "simulated client (no Envoy: data plane NOT_RUN)".
func clientLine(dir string) string {
	r, err := compare.Load("A", dir)
	if err != nil || r.Meta == nil {
		return ""
	}
	switch r.Meta.Client {
	case "envoy":
		return "Envoy " + r.Meta.EnvoyVersion
	case "simulated":
		return "simulated client (data plane computed, no proxy)"
	}
	return r.Meta.Client
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
