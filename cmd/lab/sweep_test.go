package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/experiments/sweep"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
)

// TestSweepFlags: the flags become the sweep's options; the defaults are the documented
// ones.
func TestSweepFlags(t *testing.T) {
	var got sweep.Options
	run := func(_ context.Context, o sweep.Options, _ io.Writer) error { got = o; return nil }
	cmd := newSweepCmdWith(run)
	cmd.SetArgs(nil)
	cmd.SetOut(io.Discard)
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "under-load", got.Scenario.Name)
	assert.Equal(t, []int{200, 1000, 2000, 5000, 8000, 12000}, got.Rates)
	assert.Equal(t, 4, got.Connections)
	assert.Equal(t, load.HTTP2, got.Protocol)
	assert.Equal(t, protocol.SotW, got.Mode)
	assert.Equal(t, 1, got.Repeat)
	assert.Contains(t, got.Out, "experiments/evidence/sweep/")

	cmd = newSweepCmdWith(run)
	cmd.SetArgs([]string{"--scenario", "slow-endpoint", "--rates", "100,300", "--connections", "2", "--protocol", "http1",
		"--mode", "delta", "--cache", "linear", "--repeat", "3", "--out", "/tmp/x"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "slow-endpoint", got.Scenario.Name)
	assert.Equal(t, []int{100, 300}, got.Rates)
	assert.Equal(t, load.HTTP1, got.Protocol)
	assert.Equal(t, publish.LinearCache, got.Cache)
	assert.Equal(t, 3, got.Repeat)
	assert.Equal(t, "/tmp/x", got.Out)
}

// TestSweepBadScenario: an unknown scenario is one line, like lab run's.
func TestSweepBadScenario(t *testing.T) {
	cmd := newSweepCmdWith(func(context.Context, sweep.Options, io.Writer) error { t.Fatal("nothing runs"); return nil })
	cmd.SetArgs([]string{"--scenario", "nope"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no built-in scenario "nope"`)
}

// TestSweepRefusesAUsedOut: a directory that holds anything is refused, before anything
// runs: the runs append to their logs, and two sweeps' evidence would mix.
func TestSweepRefusesAUsedOut(t *testing.T) {
	out := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "sweep.json"), []byte("{}"), 0o644))
	cmd := newSweepCmdWith(func(context.Context, sweep.Options, io.Writer) error { t.Fatal("nothing runs"); return nil })
	cmd.SetArgs([]string{"--out", out})
	cmd.SetOut(io.Discard)
	err := cmd.Execute()
	require.Error(t, err)
	assert.Equal(t, "--out "+out+": already holds a file (sweep.json) (want a new or empty directory)", err.Error())
}
