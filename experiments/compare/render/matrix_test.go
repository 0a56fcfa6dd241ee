package render

import (
	"bytes"
	"encoding/json"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xds-workbench/lab/experiments/compare"
)

// renderMatrix renders m as --wide does, like render.
func renderMatrix(t *testing.T, m *compare.Matrix, format string) []byte {
	t.Helper()
	return renderMatrixWidth(t, m, format, 0)
}

func renderMatrixWidth(t *testing.T, m *compare.Matrix, format string, width int) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Matrix(&buf, m, format, width))
	return buf.Bytes()
}

var matrixGoldens = []struct {
	file, format string
	runs         []string
	opt          compare.Options
	width        int // text only: 0 is --wide
}{
	{"golden-matrix.txt", "text", teaching4, compare.Options{}, 0},
	{"golden-matrix-narrow.txt", "text", teaching4, compare.Options{}, narrowWidth},
	{"golden-matrix-scaled.md", "markdown", scaled4, compare.Options{}, 0},
}

// TestMatrixGolden renders the committed matrices byte for byte (regenerated with
// -update, like the two-run goldens).
func TestMatrixGolden(t *testing.T) {
	if *update {
		return // TestGolden -update writes them
	}
	for _, c := range matrixGoldens {
		t.Run(c.file, func(t *testing.T) {
			got := renderMatrixWidth(t, loadMatrix(t, c.runs, c.opt), c.format, c.width)
			path := filepath.Join("testdata", c.file)
			want, err := os.ReadFile(path)
			require.NoError(t, err, "missing golden file: go test ./experiments/compare -run TestGolden -update")
			if !bytes.Equal(want, got) {
				t.Fatalf("%s differs from the rendered matrix (regenerate with -update if intended):\n%s", path, firstDiff(want, got))
			}
		})
	}
}

// TestMatrixFormats: every format shows a column per run and each finding's label.
func TestMatrixFormats(t *testing.T) {
	m := loadMatrix(t, teaching4, compare.Options{})

	md := string(renderMatrix(t, m, "markdown"))
	assert.Contains(t, md, "| step | A responses | A resources |")
	assert.Contains(t, md, "| D responses | D resources |")
	assert.Contains(t, md, "A: sotw · snapshot · uniform · nack resend; B: delta · snapshot; C: sotw · linear · per-type · nack hold; D: delta · linear")
	assert.Contains(t, md, "   - *protocol*: the same in every pair, with the SnapshotCache (A vs B) and the LinearCache (C vs D), with the simulated client\n")
	assert.Equal(t, 4*len(m.SharedSteps), strings.Count(md, "```mermaid\n"))

	var back compare.Matrix
	require.NoError(t, json.Unmarshal(renderMatrix(t, m, "json"), &back))
	assert.Equal(t, m.Pairs, back.Pairs)
	require.Len(t, back.Findings, len(m.Findings))
	want, err := json.Marshal(m.Findings[0])
	require.NoError(t, err)
	got, err := json.Marshal(back.Findings[0])
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got), "a finding reads back as written")
	assert.Equal(t, "sotw · linear · per-type · nack hold", back.Runs[2].Axes)
	assert.Equal(t, "C", back.Runs[2].Label, "the run header is flattened into each run")

	html := string(renderMatrix(t, m, "html"))
	for _, banned := range []string{"<script", "http://", "https://", " src=", "@import", "url(", "<link", "javascript:"} {
		assert.NotContains(t, strings.ToLower(html), banned)
	}
	for _, r := range m.Runs {
		title := template.HTMLEscapeString(r.Label + ": " + r.Axes)
		assert.Contains(t, html, `<th class="group" colspan="12">`+title+`</th>`, "a step-table column group per run")
		assert.Contains(t, html, `<th class="group" colspan="5">`+title+`</th>`, "a version-table column group per run")
	}
	assert.Equal(t, len(m.Findings)+len(m.Notes), strings.Count(html, `<span class="attr attr-`))
	assert.Equal(t, 4*len(m.SharedSteps), strings.Count(html, "<svg viewBox="), "a diagram per run and step")
	assert.Equal(t, 4*len(m.SharedSteps), strings.Count(html, `<svg class="bar"`), "an error-window bar per run and step")
	rm := matrixFinding(t, m, "remove-cluster", "removal", "")
	assert.Contains(t, html, `<span class="attr attr-protocol">protocol</span>`+template.HTMLEscapeString(rm.Basis))
	assert.Contains(t, html, `<li>C vs D (linear): remove-cluster: C sotw removed <code>inventory</code> by absence (CDS)`)
}
