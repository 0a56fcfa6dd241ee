package render

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xds-workbench/lab/experiments/compare"
)

// grpc-go's answers are real: labelled grpc, never SIMULATED.
func TestGRPCAnswersAreNotSimulated(t *testing.T) {
	rep := report(t, envoyClientRun, grpcClientRun, compare.Options{})
	for _, row := range rep.Rows {
		dp := row.Runs[1].DataPlane
		require.NotNil(t, dp, row.Step)
		assert.False(t, dp.Simulated, row.Step)
		assert.Contains(t, dp.Text, " grpc", row.Step)
		require.NotNil(t, row.Runs[1].Probes, row.Step)
		assert.False(t, row.Runs[1].Probes.Simulated, row.Step)
	}
	var b bytes.Buffer
	require.NoError(t, Report(&b, rep, "text", 0))
	// The legend explains SIMULATED; no cell says it.
	assert.NotRegexp(t, `v[12] SIMULATED|\| *SIMULATED`, b.String())
}
