package churn

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/testenv"
)

// RunAndReport (lab churn) end to end without Envoy: a few seconds of churn pass every verdict
// and print where the report is.
func TestRunAndReport(t *testing.T) {
	testenv.SkipIfShort(t, testenv.NeedsLongRun)
	out := t.TempDir()
	var stdout, progress bytes.Buffer
	err := RunAndReport(context.Background(), Options{Duration: 8 * time.Second, Clients: 10, NoEnvoys: true,
		LifetimeMin: 500 * time.Millisecond, LifetimeMax: 2 * time.Second, SampleEvery: 500 * time.Millisecond,
		Baseline: 2 * time.Second, GrowthLimit: 0.5, Seed: 26, Out: out}, &stdout, &progress)
	require.NoError(t, err, stdout.String())
	assert.Contains(t, stdout.String(), "report: "+filepath.Join(out, "report.md"))
	assert.Contains(t, progress.String(), "clients connected")
	_, err = os.Stat(filepath.Join(out, "samples.svg"))
	assert.NoError(t, err)
}
