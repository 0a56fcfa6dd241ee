package render

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xds-workbench/lab/experiments/compare"
)

// The committed runs of the teaching scenario (see generate_test.go): SotW with uniform
// versions and the library's NACK behaviour, delta, and SotW with per-type versions and
// the hold NACK policy.
const (
	sotwRun     = "testdata/sotw"
	deltaRun    = "testdata/delta"
	sotwHoldRun = "testdata/sotw-per-type-hold"
)

func loadPair(t *testing.T, a, b string) (*compare.Run, *compare.Run) {
	t.Helper()
	ra, err := compare.Load("A", a)
	require.NoError(t, err)
	rb, err := compare.Load("B", b)
	require.NoError(t, err)
	return ra, rb
}

func report(t *testing.T, a, b string, opt compare.Options) *compare.Report {
	t.Helper()
	ra, rb := loadPair(t, a, b)
	rep, err := compare.Compare(ra, rb, opt)
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
func loadRuns(t *testing.T, paths []string) []*compare.Run {
	t.Helper()
	runs := make([]*compare.Run, len(paths))
	for i, p := range paths {
		r, err := compare.Load(compare.RunLabel(i), p)
		require.NoError(t, err)
		runs[i] = r
	}
	return runs
}

func loadMatrix(t *testing.T, paths []string, opt compare.Options) *compare.Matrix {
	t.Helper()
	m, err := compare.CompareMatrix(loadRuns(t, paths), opt)
	require.NoError(t, err)
	return m
}

// The committed runs of the two clients (compare's clients_test.go): the teaching
// scenario with Envoy and with grpc-go.
const (
	envoyClientRun = "testdata/clients/envoy"
	grpcClientRun  = "testdata/clients/grpc"
)

// finding returns the first finding of kind in step (the zero Finding when none).
func finding(rep *compare.Report, step, kind string) compare.Finding {
	for _, f := range rep.Findings {
		if f.Step == step && f.Kind == kind {
			return f
		}
	}
	return compare.Finding{}
}

func row(t *testing.T, rep *compare.Report, step string) compare.Row {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Step == step {
			return r
		}
	}
	t.Fatalf("no row %s", step)
	return compare.Row{}
}

// matrixFinding returns the matrix finding of kind in step that covers typ ("" for a
// kind without types).
func matrixFinding(t *testing.T, m *compare.Matrix, step, kind, typ string) compare.MatrixFinding {
	t.Helper()
	for _, f := range m.Findings {
		if f.Step == step && f.Kind == kind && (typ == "" || slices.Contains(f.Types, typ)) {
			return f
		}
	}
	t.Fatalf("no %s finding in %s for %q", kind, step, typ)
	return compare.MatrixFinding{}
}
