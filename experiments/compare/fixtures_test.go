package compare

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xds-workbench/lab/experiments/bench"
	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/shared/publish"
)

// The committed runs of the teaching scenario (see generate_test.go): SotW with uniform
// versions and the library's NACK behaviour, delta, and SotW with per-type versions and
// the hold NACK policy.
const (
	sotwRun     = "testdata/sotw"
	deltaRun    = "testdata/delta"
	sotwHoldRun = "testdata/sotw-per-type-hold"
)

func loadPair(t *testing.T, a, b string) (*Run, *Run) {
	t.Helper()
	ra, err := Load("A", a)
	require.NoError(t, err)
	rb, err := Load("B", b)
	require.NoError(t, err)
	return ra, rb
}

func report(t *testing.T, a, b string, opt Options) *Report {
	t.Helper()
	ra, rb := loadPair(t, a, b)
	rep, err := Compare(ra, rb, opt)
	require.NoError(t, err)
	return rep
}

// The committed runs of the matrix tests (generate_test.go): the teaching scenario with
// the LinearCaches, and the scaled state (three, four, three clusters) in each protocol
// with each cache, its SotW runs per-type with hold so that only the cache differs.
const (
	sotwLinearRun  = "testdata/sotw-linear"
	deltaLinearRun = "testdata/delta-linear"

	scaledSotw        = "testdata/scaled/sotw"
	scaledDelta       = "testdata/scaled/delta"
	scaledSotwLinear  = "testdata/scaled/sotw-linear"
	scaledDeltaLinear = "testdata/scaled/delta-linear"
)

// teaching4 is the 4-run matrix of the teaching scenario: SotW and delta, each with the
// SnapshotCache and the LinearCache (A sotw uniform/resend, B delta, C sotw linear, D
// delta linear), as make lab runs them.
var teaching4 = []string{sotwRun, deltaRun, sotwLinearRun, deltaLinearRun}

var scaled4 = []string{scaledSotw, scaledDelta, scaledSotwLinear, scaledDeltaLinear}

// loadRuns loads paths labelled A, B, C, ... as lab compare does.
func loadRuns(t *testing.T, paths []string) []*Run {
	t.Helper()
	runs := make([]*Run, len(paths))
	for i, p := range paths {
		r, err := Load(RunLabel(i), p)
		require.NoError(t, err)
		runs[i] = r
	}
	return runs
}

func matrix(t *testing.T, paths []string, opt Options) *Matrix {
	t.Helper()
	m, err := CompareMatrix(loadRuns(t, paths), opt)
	require.NoError(t, err)
	return m
}

// The committed steady-load runs (render's traffic_fixture_test.go writes them).
const (
	loadSotwRun  = "testdata/load-sotw"
	loadDeltaRun = "testdata/load-delta"
)

// scaleFixture runs a small scale sweep with the simulated client (N = 1, 10, 100, both
// workloads, both caches, both protocols: about a second) and loads it as a report's
// Scale (render's firstscreen_test.go draws its chart from the same).
func scaleFixture(t *testing.T) *Scale {
	t.Helper()
	out := t.TempDir()
	_, err := bench.Run(context.Background(), benchcore.Options{
		Clusters: []int{1, 10, 100}, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes,
		SotWVersions: []publish.VersionStrategy{publish.PerType}, Caches: []publish.Cache{publish.SnapshotCache, publish.LinearCache},
		Workloads: []string{benchcore.WorkloadEndpoint, benchcore.WorkloadClusterAdd}, Repeat: 1, Out: out, Timeout: time.Minute,
	})
	require.NoError(t, err)
	s, err := LoadScale(filepath.Join(out, "bench.json"))
	require.NoError(t, err)
	return s
}
