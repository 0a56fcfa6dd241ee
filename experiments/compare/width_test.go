package compare

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSplitTable: a table wider than the width is stacked parts that each fit it and
// repeat the step column, a run's group kept whole when it fits alone, and no cell lost.
func TestSplitTable(t *testing.T) {
	row := func(cells ...string) []cell {
		out := make([]cell, len(cells))
		for i, c := range cells {
			out[i] = cell{Text: c}
		}
		return out
	}
	tab := table{
		Groups: []group{{"", 1}, {"A: sotw", 3}, {"B: delta", 3}},
		Head:   []string{"step", "sent", "res", "bytes", "sent", "res", "bytes"},
		Rows:   [][]cell{row("initial", "L1 R1 C1 E1", "4", "978", "L1 R1 C1 E1", "4", "1305")},
	}
	for _, c := range []struct {
		width int
		want  []string
		why   string
	}{
		{0, []string{
			"          | A: sotw                 | B: delta",
			"  step    | sent         res  bytes | sent         res  bytes",
			"  initial | L1 R1 C1 E1  4    978   | L1 R1 C1 E1  4    1305",
		}, "width 0: never split"},
		{40, []string{
			"          | A: sotw", "  step    | sent         res  bytes", "  initial | L1 R1 C1 E1  4    978", "",
			"          | B: delta", "  step    | sent         res  bytes", "  initial | L1 R1 C1 E1  4    1305",
		}, "a group per part"},
		{28, []string{
			"          | A: sotw", "  step    | sent         res", "  initial | L1 R1 C1 E1  4", "",
			"          | A:...", "  step    | bytes", "  initial | 978", "",
			"          | B: delta", "  step    | sent         res", "  initial | L1 R1 C1 E1  4", "",
			"          | B:...", "  step    | bytes", "  initial | 1305",
		}, "narrower than a group: its columns split, its title repeated (clipped to fit) over " +
			"each part, and a group that fits alone starts a part of its own"},
	} {
		var b strings.Builder
		writeTextTable(&b, tab, c.width)
		got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		assert.Equal(t, c.want, got, c.why)
		for _, l := range got {
			if c.width > 0 {
				assert.LessOrEqual(t, utf8.RuneCountInString(l), c.width, l)
			}
		}
	}

	// A table that fits is left alone.
	assert.Len(t, splitTable(tab, 200), 1)
	// No groups (the run header): single columns are the units.
	runs := table{Head: []string{"", "A", "B"}, Rows: [][]cell{row("path", strings.Repeat("a", 30), strings.Repeat("b", 30))}}
	parts := splitTable(runs, 50)
	require.Len(t, parts, 2)
	assert.Equal(t, []string{"", "B"}, parts[1].Head)
	assert.Equal(t, "path", parts[1].Rows[0][0].Text)
}

// TestNarrowReport: at a width, every line of the reports fits it: tables split, prose
// wrapped, the two-run diagrams one after the other (80 columns hold a 72-column diagram
// side). For two runs and the matrix alike, with and without --step.
func TestNarrowReport(t *testing.T) {
	const width = 80
	for name, out := range map[string][]byte{
		"two runs":       renderWidth(t, report(t, sotwRun, deltaRun, Options{}), "text", width),
		"two runs, step": renderWidth(t, report(t, sotwRun, deltaRun, Options{Step: "invalid-route"}), "text", width),
		"matrix":         renderMatrixWidth(t, matrix(t, teaching4, Options{}), "text", width),
		"matrix, step":   renderMatrixWidth(t, matrix(t, teaching4, Options{Step: "remove-cluster"}), "text", width),
	} {
		for _, l := range strings.Split(string(out), "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(l), width, "%s: %s", name, l)
		}
	}
	// Wide, the two-run diagrams stand side by side.
	wide := string(render(t, report(t, sotwRun, deltaRun, Options{Step: "invalid-route"}), "text"))
	assert.Contains(t, wide, "  A sotw: CP = control plane, C = simulated client, DP = data plane      | B delta: CP = control plane")
}
