package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRatioText: a ratio reads right at every size, a lab serve log's 1,729 bytes over
// 4,415,311 included (once printed as 0.00).
func TestRatioText(t *testing.T) {
	for _, c := range []struct {
		a, b int
		want string
	}{
		{1729, 4415311, "1/2554"},
		{4415311, 1729, "2554"},
		{8304, 269, "30.87"},
		{43, 1, "43"},
		{3, 2, "1.5"},
		{2, 3, "1/1.5"},
		{1, 1_000_000_000, "1/1000000000"},
		{5, 5, "1"},
		{0, 0, "1"},
		{0, 7, "0"},
		{7, 0, "∞"},
	} {
		assert.Equal(t, c.want, ratioText(c.a, c.b), "%d/%d", c.a, c.b)
	}
}

// TestCount: one noun, singular for one.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		word string
		want string
	}{
		{0, "response", "0 responses"},
		{1, "response", "1 response"},
		{2, "response", "2 responses"},
		{1, "publish", "1 publish"},
		{3, "publish", "3 publishes"},
		{1, "byte", "1 byte"},
		{1, "NACK", "1 NACK"},
	} {
		assert.Equal(t, c.want, count(c.n, c.word))
	}
}

// TestTotalFindingPlurals: the total finding counts a single response as one.
func TestTotalFindingPlurals(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{Step: "invalid-route"})
	total := rep.Findings[len(rep.Findings)-1]
	require.Equal(t, "total", total.Kind)
	assert.Contains(t, total.Text, fmt.Sprintf("B delta sent %d bytes in 1 response (1 resource, 0 redundant)", rep.Total[1].Bytes))
	assert.NotContains(t, total.Text, "1 responses")
}

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
	rep := report(t, a, b, Options{Step: NoStep})
	require.Len(t, rep.Rows, 1)
	assert.Equal(t, "", rep.Rows[0].Step, "the unnamed step itself")
	assert.Equal(t, NoStep, rep.Step)
	require.Len(t, rep.Diagrams, 2)
	assert.NotEmpty(t, rep.Diagrams[0].Messages)
	assert.Contains(t, string(render(t, rep, "text")), "\nSEQUENCE (no step)\n")

	ra, rb := loadPair(t, a, b)
	m, err := CompareMatrix([]*Run{ra, rb, ra}, Options{Step: NoStep})
	require.NoError(t, err)
	require.Len(t, m.Rows, 1)
	assert.Equal(t, "", m.Rows[0].Step)

	// An unknown step lists the shared ones as they are shown.
	_, err = Compare(ra, rb, Options{Step: "nope"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `step "nope" is not in both runs (shared steps: (no step), `)
	// Runs whose every step is named have no unnamed one to select.
	ra, rb = loadPair(t, sotwRun, deltaRun)
	_, err = Compare(ra, rb, Options{Step: NoStep})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `step "(no step)" is not in both runs (shared steps: initial, `)
}
