package mainjob

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/bench"
	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/render"
	"github.com/xds-workbench/lab/shared/publish"
)

// scale runs the scale sweep with the simulated client and copies its bench.json to
// scale.json ("" when it failed: the report then has no chart, and says why in job.log).
func (j *job) scale(ctx context.Context) string {
	dir := filepath.Join(j.o.Out, "scale")
	start := time.Now()
	_, err := bench.Run(ctx, benchcore.Options{
		Clusters: ScaleClusters, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes,
		SotWVersions: []publish.VersionStrategy{publish.PerType},
		Caches:       []publish.Cache{publish.SnapshotCache, publish.LinearCache},
		Workloads:    []string{benchcore.WorkloadEndpoint, benchcore.WorkloadClusterAdd},
		Repeat:       3, Out: dir, Progress: j.log, Timeout: 5 * time.Minute,
	})
	if err == nil {
		err = copyFile(filepath.Join(dir, "bench.json"), filepath.Join(j.o.Out, "scale.json"))
	}
	if err != nil {
		j.sayf("scale sweep FAILED: %s", firstLine(err.Error()))
		fmt.Fprintf(j.log, "scale sweep: %v\n", err)
		return ""
	}
	j.sayf("scale sweep  simulated client, N = %s, endpoint change and cluster add, both caches: %.1fs (scale.json)",
		joinInts(ScaleClusters), time.Since(start).Seconds())
	return filepath.Join(j.o.Out, "scale.json")
}

// report compares the runs that produced a log, with the scale sweep, and writes
// report.html (the one to open), report.md and report.txt, and the two-run reports of
// the first pair; then it says the protocols' differences in a line each.
func (j *job) report(res *Result) error {
	var runs []*compare.Run
	for _, r := range res.Runs {
		run, err := compare.Load(compare.RunLabel(len(runs)), r.Dir)
		if err != nil {
			fmt.Fprintf(j.log, "report: %s left out: %v\n", r.Name, err)
			continue
		}
		runs = append(runs, run)
	}
	if len(runs) < 2 {
		return fmt.Errorf("report: %d runs have a log, want two or more: see job.log", len(runs))
	}
	opt := compare.Options{}
	if res.Scale != "" {
		s, err := compare.LoadScale(res.Scale)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		opt.Scale = s
	}
	m, err := compare.CompareMatrix(runs, opt)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	res.Matrix = m
	for _, f := range []struct{ name, format string }{{"report.html", "html"}, {"report.md", "markdown"}, {"report.txt", "text"}, {"report.json", "json"}} {
		var b bytes.Buffer
		if err := render.Matrix(&b, m, f.format, 100); err != nil {
			return fmt.Errorf("report %s: %w", f.name, err)
		}
		if err := os.WriteFile(filepath.Join(j.o.Out, f.name), b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	if err := j.pairReport(runs, opt); err != nil {
		return err
	}
	res.Report = filepath.Join(j.o.Out, "report.html")
	j.answer(m)
	j.sayf("open %s first (the answer on its first screen); the same as report.md, report.txt, report.json;", res.Report)
	j.sayf("  report-sotw-vs-delta.html is the first pair alone; every run's evidence is in its own directory")
	return nil
}

// pairReport writes report-sotw-vs-delta.html: the first two runs (SotW and delta with
// the SnapshotCache) on their own.
func (j *job) pairReport(runs []*compare.Run, opt compare.Options) error {
	rep, err := compare.Compare(runs[0], runs[1], opt)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var b bytes.Buffer
	if err := render.Report(&b, rep, "html", 0); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return os.WriteFile(filepath.Join(j.o.Out, "report-sotw-vs-delta.html"), b.Bytes(), 0o644)
}

// answer says the protocols' differences, a line each, and how many things the
// configuration adds.
func (j *job) answer(m *compare.Matrix) {
	j.sayf("what differs between SotW and delta, by the protocol (the report has each one's figures and section):")
	for _, d := range m.ProtocolDifferences {
		j.sayf("  %-27s %s", d.Property+":", d.Summary)
	}
	if n := len(m.ConfigDifferences); n > 0 {
		j.sayf("what this configuration adds (options and components, not the protocol): %d items, in the report", n)
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}
