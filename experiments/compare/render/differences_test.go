package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/xds-workbench/lab/experiments/compare"
)

// TestProtocolDifferencesNeedBothProtocols: two runs of one protocol have none, and
// every format says why.
func TestProtocolDifferencesNeedBothProtocols(t *testing.T) {
	rep := report(t, deltaRun, deltaLinearRun, compare.Options{})
	assert.Empty(t, rep.ProtocolDifferences)
	for _, f := range []string{"text", "markdown", "html"} {
		assert.Contains(t, strings.Join(strings.Fields(string(render(t, rep, f))), " "),
			"No protocol difference to show: the runs speak delta, and two runs of one protocol do not differ by it.", f)
	}
}
