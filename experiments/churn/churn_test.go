package churn

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/testenv"
)

// A short soak: 50 clients over both planes and one SotW Envoy killed and restarted
// about once. It asserts what the long run is judged on: samples written, every verdict
// passed (logs whole, nothing grown, no orphan), and the restart happened. Its growth
// limit is 50%, not 10%: its baseline is 8 s in, while clients are still warming up; the
// long run's is a minute in.
func TestShortSoak(t *testing.T) {
	testenv.SkipIfShort(t, testenv.NeedsEnvoy)
	if _, err := envoy.Find(""); err != nil {
		testenv.Missing(t, "no Envoy", err, testenv.EnvoyNotFound)
	}
	out := t.TempDir()
	s, err := New(Options{Duration: 24 * time.Second, Clients: 50, Envoys: 1, KillMin: 6 * time.Second, KillMax: 8 * time.Second,
		LifetimeMin: time.Second, LifetimeMax: 4 * time.Second, NackRate: 0.05, SampleEvery: 2 * time.Second,
		Baseline: 8 * time.Second, GrowthLimit: 0.5, Seed: 26, Out: out})
	require.NoError(t, err)
	res, err := s.Run(context.Background(), io.Discard)
	require.NoError(t, err)
	for _, v := range res.Verdicts {
		assert.True(t, v.Passed, "%s: %v %v", v.Name, v.Reasons, v.Figures)
	}
	assert.GreaterOrEqual(t, res.Restarts, int64(1), "the Envoy was killed and restarted")
	assert.GreaterOrEqual(t, len(res.EnvoyPids), 2)
	assert.Greater(t, res.Clients.Leaves, int64(50), "clients left and were replaced")
	assert.Positive(t, res.Clients.Nacks)
	for _, f := range []string{"samples.csv", "samples.svg", "summary.json", "report.md", "xds-sotw.log", "xds-delta.log"} {
		fi, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		assert.Positive(t, fi.Size(), f)
	}
	assert.Greater(t, len(res.Samples), 10)
}
