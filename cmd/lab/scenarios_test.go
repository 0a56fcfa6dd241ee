package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/shared/scenario"
)

// TestScenariosRefusesUnknown: anything but a built-in name or a scenario file is a
// one-line error (scenario.Print's output is tested there).
func TestScenariosRefusesUnknown(t *testing.T) {
	_, _, err := runLabArgs(t, "scenarios", "no-such-scenario")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "\n")
}

// TestRunRefusesBadScenarioFile: a bad file is one line naming file:line, and nothing
// is created.
func TestRunRefusesBadScenarioFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("name: bad\ndescription: x\nresources: {}\nsteps:\n  - name: s\n    wait: 1s\n"), 0o644))
	out := filepath.Join(t.TempDir(), "run")
	_, _, err := runLabArgs(t, "run", "--mode", "sotw", "--client", "sim", "--scenario", bad, "--out", out)
	require.Error(t, err)
	assert.Equal(t, bad+`:5: step "s": the first step must publish a state`, err.Error())
	assert.NoDirExists(t, out, "nothing starts before the file is valid")
}

// TestRunPack: --scenario all runs every built-in scenario in its own directory, goes on
// after a failure, and fails naming the ones that failed.
func TestRunPack(t *testing.T) {
	base := filepath.Join(t.TempDir(), "pack")
	var ran []string
	cmd := newRunCmdWith(func(_ context.Context, o runner.Options, _ io.Writer) error {
		ran = append(ran, o.Scenario.Name)
		assert.Equal(t, filepath.Join(base, o.Scenario.Name), o.Out)
		if o.Scenario.Name == "many-per-type" {
			return errors.New("step x: failed")
		}
		return nil
	})
	cmd.SetArgs([]string{"--mode", "delta", "--client", "sim", "--scenario", "all", "--out", base})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	assert.Equal(t, scenario.PackNames(), ran)
	require.Error(t, err)
	assert.Equal(t, fmt.Sprintf("1 of %d scenarios failed: many-per-type", len(scenario.PackNames())), err.Error())
}

// TestRunRefusesAbsurdLoad: --load and --connections out of range are one line, before
// anything starts.
func TestRunRefusesAbsurdLoad(t *testing.T) {
	for _, args := range [][]string{
		{"--load", "1000000"},
		{"--load", "10", "--connections", "500"},
		{"--load", "2", "--connections", "4"},
	} {
		out := filepath.Join(t.TempDir(), "run")
		_, _, err := runLabArgs(t, append([]string{"run", "--mode", "sotw", "--client", "envoy", "--out", out}, args...)...)
		require.Error(t, err, "%v", args)
		assert.True(t, strings.HasPrefix(err.Error(), "--load "), err.Error())
		assert.NotContains(t, err.Error(), "\n")
		assert.NoDirExists(t, out)
	}
	_, _, err := runLabArgs(t, "run", "--mode", "sotw", "--protocol", "spdy")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--protocol spdy")
}
