package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// fakeRun writes the checkpoints a run at o.Load.Rate would: two publish steps whose
// publish-to-ACK grows with the rate, traffic that keeps up to 1,000/s and fails past
// 2,000/s, and Envoy's CPU.
func fakeRun(t *testing.T, order *[]int) func(context.Context, runner.Options) (*runner.Result, error) {
	return func(_ context.Context, o runner.Options) (*runner.Result, error) {
		rate := o.Load.Rate
		*order = append(*order, rate)
		assert.Nil(t, o.Scenario.Load, "the sweep's rate replaces the scenario's own load")
		require.NoError(t, os.MkdirAll(o.Out, 0o755))
		res := &runner.Result{Dir: o.Out, Passed: rate <= 2000, Figures: &analysis.Summary{}}
		if !res.Passed {
			res.Failure = "step b: expected traffic: at most 0 failed"
		}
		for i, name := range []string{"a", "b"} {
			cp := runner.Checkpoint{CPU: &runner.StepCPU{EnvoyMS: ptr(100 + float64(rate)/10)}}
			if rate > 0 {
				achieved := float64(rate)
				if rate > 1000 {
					achieved = 1000
				}
				cp.Traffic = &xdslog.Traffic{Requests: rate, OK: rate, AskedRate: float64(rate), AchievedRate: achieved, P99MS: float64(rate) / 100}
				if !res.Passed {
					cp.Traffic.OK = rate - 3
				}
			}
			data, err := json.Marshal(cp)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(o.Out, name+".json"), data, 0o644))
			res.Steps = append(res.Steps, runner.StepResult{Name: name, Checkpoint: name + ".json", Passed: true, DurationMS: 1000})
			ack := 2 + float64(rate)/1000 + float64(i)
			res.Figures.Steps = append(res.Figures.Steps, &analysis.Step{Name: name, Version: "v", PublishToAckMS: &ack})
		}
		return res, nil
	}
}

func ptr(f float64) *float64 { return &f }

func options(t *testing.T, rates ...int) Options {
	sc, err := scenario.Builtin("under-load")
	require.NoError(t, err)
	return Options{Scenario: sc, Rates: rates, Connections: 4, Protocol: load.HTTP2, Mode: protocol.SotW, Repeat: 2, Out: t.TempDir()}
}

// TestSweep: the rates run interleaved, the no-load run added first; each point folds
// its runs' steps; the ratio is to the no-load median; the highest sustained rate is
// the highest that passed and kept its rate; sweep.json holds the report.
func TestSweep(t *testing.T) {
	var order []int
	var progress bytes.Buffer
	o := options(t, 4000, 500, 1000)
	o.execute, o.Progress = fakeRun(t, &order), &progress
	rep, err := Run(t.Context(), o)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 500, 1000, 4000, 0, 500, 1000, 4000}, order, "every rate once per repeat, no load first")
	require.Len(t, rep.Points, 4)
	byRate := map[int]Point{}
	for _, p := range rep.Points {
		byRate[p.Rate] = p
		assert.Equal(t, 2, p.Runs)
		assert.Len(t, p.Dirs, 2)
	}
	base := byRate[0]
	require.NotNil(t, base.PublishToAckMS)
	assert.Equal(t, 2.5, *base.PublishToAckMS, "median of 2 and 3 ms")
	assert.Equal(t, 1.0, *base.AckRatio)
	assert.Zero(t, base.Requests)
	assert.True(t, base.Sustained)
	r1000 := byRate[1000]
	assert.Equal(t, 4000, r1000.Requests, "two steps x two runs")
	assert.InDelta(t, 3.5/2.5, *r1000.AckRatio, 1e-9)
	assert.InDelta(t, 20.0, *r1000.EnvoyCPUPercent, 1e-9, "200 ms of Envoy CPU per 1,000 ms step")
	assert.True(t, r1000.Sustained)
	r4000 := byRate[4000]
	assert.False(t, r4000.Sustained)
	assert.Equal(t, 0, r4000.Passed)
	assert.Contains(t, r4000.Failure, "at most 0 failed")
	assert.Equal(t, 12, r4000.Failed)
	assert.Equal(t, 0.25, r4000.MinShare)
	assert.Equal(t, 1000, rep.HighestSustained)

	assert.Contains(t, progress.String(), "[1/8] under-load at no load\n")
	assert.Contains(t, progress.String(), "[8/8] under-load at 4000 requests/s (about ")
	data, err := os.ReadFile(filepath.Join(o.Out, "sweep.json"))
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, 1000, back.HighestSustained)
	assert.Len(t, back.Points, 4)

	var text strings.Builder
	Render(&text, rep)
	for _, want := range []string{"RATE", "no load", "1000", "4000", "1.40", "highest rate sustained while the changes land: 1000 requests/s"} {
		assert.Contains(t, text.String(), want)
	}
}

// TestSweepRefuses: bad sweeps are one line, before anything runs.
func TestSweepRefuses(t *testing.T) {
	for _, c := range []struct {
		rates  []int
		repeat int
		want   string
	}{
		{[]int{100, 100}, 1, "rate 100 is given twice"},
		{[]int{1e6}, 1, "load rate 1000000: want 1..20000"},
		{[]int{2}, 1, "load connections 4: more than the rate"},
		{[]int{100}, 0, "repeat 0: want at least 1"},
		{[]int{100, 200, 300}, 60, "240 runs (rates x repeat): at most 200"},
		{nil, 1, "sweep: no rates"},
	} {
		o := options(t, c.rates...)
		o.Repeat = c.repeat
		o.execute = func(context.Context, runner.Options) (*runner.Result, error) {
			t.Fatal("nothing runs")
			return nil, nil
		}
		_, err := Run(t.Context(), o)
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
		assert.NotContains(t, err.Error(), "\n")
	}
}

// TestSweepInterrupted: an interrupted sweep keeps what it measured.
func TestSweepInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var order []int
	run := fakeRun(t, &order)
	o := options(t, 500)
	o.execute = func(c context.Context, ro runner.Options) (*runner.Result, error) {
		res, err := run(c, ro)
		if len(order) == 2 {
			cancel()
		}
		return res, err
	}
	rep, err := Run(ctx, o)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, rep)
	assert.Equal(t, 1, rep.Points[0].Runs)
	assert.Equal(t, 0, rep.Points[1].Runs, "the interrupted run is not counted")
	assert.FileExists(t, filepath.Join(o.Out, "sweep.json"))
	assert.False(t, errors.Is(err, os.ErrNotExist))
}
