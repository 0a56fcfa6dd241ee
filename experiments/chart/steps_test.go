package chart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStepArea: a panel's frame has a gridline per count, a curve climbs one step per
// time from (0, 0) to its last count at XMax, dashed when asked, with a tip per step,
// and the chart is well-formed XML.
func TestStepArea(t *testing.T) {
	var b bytes.Buffer
	Open(&b, 400, 300, "steps")
	a := StepArea{X0: 50, Y0: 40, W: 300, H: 200, XMax: 10, K: 2}
	a.Open(&b, "p", ` data-n="2"`, "title <2>", "ms", func(v float64) string { return fmt.Sprintf("%.0f", v) })
	a.Curve(&b, StepCurve{ID: "c", Times: []float64{2, 5}, Color: "#123", Dashed: true,
		Tip: func(i int, t float64) string { return fmt.Sprintf("%d at %.0f", i+1, t) }})
	a.Curve(&b, StepCurve{ID: "empty", Tip: func(int, float64) string { return "" }})
	a.Close(&b)
	LineLegend(&b, []string{"s"}, map[string]string{"s": "#123"}, 10, 290, "solid & dashed")
	Close(&b)
	out := b.String()
	require.NoError(t, xml.Unmarshal(b.Bytes(), new(any)), out)
	assert.Contains(t, out, `points="50.0,240.0 110.0,240.0 110.0,140.0 200.0,140.0 200.0,40.0 350.0,40.0"`, "0 -> 1 at t=2 -> 2 at t=5, held to XMax")
	assert.Contains(t, out, `stroke-dasharray="6 3"`)
	assert.Contains(t, out, "<title>2 at 5</title>")
	assert.Equal(t, 3, strings.Count(out, `stroke="#eee"`), "a gridline per count 0..K")
	assert.NotContains(t, out, `id="empty"`, "a curve without points draws nothing")
	assert.Contains(t, out, "title &lt;2&gt;")
}
