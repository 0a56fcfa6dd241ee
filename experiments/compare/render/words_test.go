package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xds-workbench/lab/experiments/compare"
)

// TestNoStepSelectable: the events before the first step (a lab serve log's first
// pushes) show as "(no step)", and --step takes that label.
func TestNoStepSelectable(t *testing.T) {
	unnamed := func(run string) string {
		b, err := os.ReadFile(filepath.Join(run, "xds.log"))
		require.NoError(t, err)
		dir := t.TempDir()
		log := strings.ReplaceAll(string(b), `"step":"initial"`, `"step":""`)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "xds.log"), []byte(log), 0o644))
		return dir
	}
	a, b := unnamed(sotwRun), unnamed(deltaRun)
	rep := report(t, a, b, compare.Options{Step: compare.NoStep})
	require.Len(t, rep.Rows, 1)
	assert.Equal(t, "", rep.Rows[0].Step, "the unnamed step itself")
	assert.Equal(t, compare.NoStep, rep.Step)
	require.Len(t, rep.Diagrams, 2)
	assert.NotEmpty(t, rep.Diagrams[0].Messages)
	assert.Contains(t, string(render(t, rep, "text")), "\nSEQUENCE (no step)\n")

	ra, rb := loadPair(t, a, b)
	m, err := compare.CompareMatrix([]*compare.Run{ra, rb, ra}, compare.Options{Step: compare.NoStep})
	require.NoError(t, err)
	require.Len(t, m.Rows, 1)
	assert.Equal(t, "", m.Rows[0].Step)

	// An unknown step lists the shared ones as they are shown.
	_, err = compare.Compare(ra, rb, compare.Options{Step: "nope"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `step "nope" is not in both runs (shared steps: (no step), `)
	// Runs whose every step is named have no unnamed one to select.
	ra, rb = loadPair(t, sotwRun, deltaRun)
	_, err = compare.Compare(ra, rb, compare.Options{Step: compare.NoStep})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `step "(no step)" is not in both runs (shared steps: initial, `)
}
