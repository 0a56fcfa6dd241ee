package mainjob

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/shared/scenario"
)

// runJob runs the job with client into a new directory and returns what it said.
func runJob(t *testing.T, client string) (*Result, string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "lab")
	var said bytes.Buffer
	res, err := Run(context.Background(), Options{Out: out, Client: client, Stdout: &said, StepTimeout: 45 * time.Second})
	require.NoError(t, err, said.String())
	return res, said.String(), out
}

// The job with the simulated client: five runs that pass, the scale sweep, and one
// report to open, said in a few lines; everything else is in job.log.
func TestJobWithTheSimulatedClient(t *testing.T) {
	res, said, out := runJob(t, runner.ClientSim)
	lines := strings.Split(strings.TrimSpace(said), "\n")
	assert.LessOrEqual(t, len(lines), 40, said)
	require.Len(t, res.Runs, len(Configs))
	for i, r := range res.Runs {
		assert.True(t, r.Passed, "%s: %s", r.Name, r.Result)
		assert.Contains(t, said, "run "+string(rune('1'+i))+"/5 "+r.Name)
		assert.FileExists(t, filepath.Join(r.Dir, "xds.log"))
	}
	assert.Contains(t, said, "simulated client (data plane computed, no proxy)")
	assert.FileExists(t, filepath.Join(out, "scale.json"))
	for _, f := range []string{"report.html", "report.md", "report.txt", "report.json", "report-sotw-vs-delta.html"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	assert.Equal(t, filepath.Join(out, "report.html"), res.Report)
	assert.Contains(t, said, "open "+res.Report+" first")
	require.NotNil(t, res.Matrix.Scale, "the report has the scale sweep")
	for _, d := range res.Matrix.ProtocolDifferences {
		assert.Contains(t, said, d.Property+":")
		assert.Contains(t, said, d.Summary)
	}
	log, err := os.ReadFile(filepath.Join(out, "job.log"))
	require.NoError(t, err)
	assert.Contains(t, string(log), "[sotw]", "each run's progress is in job.log")
	assert.NotContains(t, said, "[sotw]", "and not on the terminal")
}

// With Envoy (required with CI=true), every run says Envoy answered.
func TestJobWithEnvoy(t *testing.T) {
	envoytest.Require(t)
	res, said, _ := runJob(t, runner.ClientEnvoy)
	assert.LessOrEqual(t, len(strings.Split(strings.TrimSpace(said), "\n")), 40, said)
	for _, r := range res.Runs {
		assert.True(t, r.Passed, "%s: %s", r.Name, r.Result)
	}
	assert.Equal(t, 5, strings.Count(said, "  Envoy 1.40"), said)
}

// Every run of the job takes free loopback ports (zero: the runner picks one), so the
// job works while the defaults are held.
func TestRunsTakeFreePorts(t *testing.T) {
	sc, err := scenario.Builtin("teaching")
	require.NoError(t, err)
	j := &job{o: Options{Client: runner.ClientAuto}}
	for _, c := range Configs {
		o := j.runOptions(c, sc, "dir")
		assert.Equal(t, [5]int{}, [5]int{o.XDSPort, o.ListenerPort, o.AdminPort, o.InventoryPorts[0], o.InventoryPorts[1]}, c.Name)
	}
}

// The output directory must be new or empty: nothing already recorded is overwritten.
func TestCheckRefusesAUsedOut(t *testing.T) {
	dir := t.TempDir()
	assert.NoError(t, Options{Out: dir}.Check())
	assert.NoError(t, Options{Out: filepath.Join(dir, "new")}.Check())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.html"), nil, 0o644))
	assert.ErrorIs(t, Options{Out: dir}.Check(), ErrOut)
	assert.ErrorIs(t, Options{}.Check(), ErrOut)
	_, err := Run(context.Background(), Options{Out: dir, Stdout: &bytes.Buffer{}})
	assert.ErrorIs(t, err, ErrOut)
}
