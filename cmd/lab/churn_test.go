package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/churn"
	"github.com/xds-workbench/lab/experiments/testenv"
)

func TestChurnFlags(t *testing.T) {
	var got churn.Options
	cmd := newChurnCmdWith(func(_ context.Context, o churn.Options, _, _ io.Writer) error { got = o; return nil })
	cmd.SetArgs([]string{"--minutes", "2", "--clients", "40", "--envoys", "0", "--nack-rate", "0.1", "--kill-min", "5s", "--out", "/tmp/x"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, 2*time.Minute, got.Duration)
	assert.Equal(t, 40, got.Clients)
	assert.True(t, got.NoEnvoys, "--envoys 0 runs without Envoy")
	assert.Equal(t, 0.1, got.NackRate)
	assert.Equal(t, 5*time.Second, got.KillMin)
	assert.Equal(t, "/tmp/x", got.Out)
}

func TestChurnRefusesAFlag(t *testing.T) {
	err := runChurn(context.Background(), churn.Options{Clients: 1, Out: t.TempDir()}, io.Discard, io.Discard)
	assert.EqualError(t, err, "--clients 1: outside 2-20000")
}

// The run function end to end without Envoy: a few seconds of churn pass every verdict
// and print where the report is.
func TestRunChurn(t *testing.T) {
	testenv.SkipIfShort(t, testenv.NeedsLongRun)
	out := t.TempDir()
	var stdout, progress bytes.Buffer
	err := runChurn(context.Background(), churn.Options{Duration: 8 * time.Second, Clients: 10, NoEnvoys: true,
		LifetimeMin: 500 * time.Millisecond, LifetimeMax: 2 * time.Second, SampleEvery: 500 * time.Millisecond,
		Baseline: 2 * time.Second, GrowthLimit: 0.5, Seed: 26, Out: out}, &stdout, &progress)
	require.NoError(t, err, stdout.String())
	assert.Contains(t, stdout.String(), "report: "+filepath.Join(out, "report.md"))
	assert.Contains(t, progress.String(), "clients connected")
	_, err = os.Stat(filepath.Join(out, "samples.svg"))
	assert.NoError(t, err)
}
