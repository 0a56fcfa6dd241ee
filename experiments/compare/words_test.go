package compare

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTotalFindingPlurals: the total finding counts a single response as one.
func TestTotalFindingPlurals(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{Step: "invalid-route"})
	total := rep.Findings[len(rep.Findings)-1]
	require.Equal(t, "total", total.Kind)
	assert.Contains(t, total.Text, fmt.Sprintf("B delta sent %d bytes in 1 response (1 resource, 0 redundant)", rep.Total[1].Bytes))
	assert.NotContains(t, total.Text, "1 responses")
}
