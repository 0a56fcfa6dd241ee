package render

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/xds-workbench/lab/experiments/compare"
)

// TestNarrowReport: at a width, every line of the reports fits it: tables split, prose
// wrapped, the two-run diagrams one after the other (80 columns hold a 72-column diagram
// side). For two runs and the matrix alike, with and without --step.
func TestNarrowReport(t *testing.T) {
	const width = 80
	for name, out := range map[string][]byte{
		"two runs":       renderWidth(t, report(t, sotwRun, deltaRun, compare.Options{}), "text", width),
		"two runs, step": renderWidth(t, report(t, sotwRun, deltaRun, compare.Options{Step: "invalid-route"}), "text", width),
		"matrix":         renderMatrixWidth(t, loadMatrix(t, teaching4, compare.Options{}), "text", width),
		"matrix, step":   renderMatrixWidth(t, loadMatrix(t, teaching4, compare.Options{Step: "remove-cluster"}), "text", width),
	} {
		for _, l := range strings.Split(string(out), "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(l), width, "%s: %s", name, l)
		}
	}
	// Wide, the two-run diagrams stand side by side.
	wide := string(render(t, report(t, sotwRun, deltaRun, compare.Options{Step: "invalid-route"}), "text"))
	assert.Contains(t, wide, "  A sotw: CP = control plane, C = simulated client, DP = data plane      | B delta: CP = control plane")
}
