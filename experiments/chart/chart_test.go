package chart

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A grid is well-formed, self-contained SVG with a group per panel and per series, a
// marker per point with its tooltip, and the legend of every series named.
func TestGrid(t *testing.T) {
	pts := func(v ...float64) []Point {
		var out []Point
		for i, x := range v {
			out = append(out, Point{N: []int{1, 10, 100}[i], Med: x, Min: x, Max: x * 1.1, Tip: "tip <&>"})
		}
		return out
	}
	panels := []Panel{
		{ID: "endpoint-bytes", Group: "endpoint", Title: "endpoint: bytes", Unit: "B",
			Series: []Series{{Name: "sotw-per-type", Points: pts(100, 1000, 10000)}, {Name: "delta", Points: pts(200, 200, 200)}}},
		{ID: "cluster-add-bytes", Group: "cluster-add", Title: "cluster-add: bytes", Unit: "B",
			Series: []Series{{Name: "sotw-per-type", Points: pts(300, 3000, 30000)}, {Name: "delta", Points: nil}}},
	}
	b := Grid("a <title>", panels, 2, 300, 100, []string{"sotw-per-type", "delta"}, "median")
	require.NoError(t, xml.Unmarshal(b, new(any)), "well-formed XML")
	s := string(b)
	assert.True(t, strings.HasPrefix(s, `<?xml version="1.0" encoding="UTF-8"?>`))
	assert.Contains(t, s, "<title>a &lt;title&gt;</title>")
	for _, id := range []string{`id="panel-endpoint-bytes" data-workload="endpoint"`, `id="panel-cluster-add-bytes"`,
		`id="endpoint-bytes-sotw-per-type" class="series"`, `id="endpoint-bytes-delta"`, `id="cluster-add-bytes-sotw-per-type"`} {
		assert.Contains(t, s, id)
	}
	assert.NotContains(t, s, `id="cluster-add-bytes-delta"`, "a series without points draws nothing")
	assert.Equal(t, 9, strings.Count(s, "<title>tip &lt;&amp;&gt;</title>"), "a marker per point")
	assert.Equal(t, 3, strings.Count(s, `stroke-dasharray="6 3"/>`), "sotw-per-type's two lines and its legend are dashed")
	assert.Contains(t, s, ">median</text>")
	assert.NotContains(t, s, "<script")
}

func TestLogRangeAndLabels(t *testing.T) {
	lo, hi := LogRange([]float64{12, 950})
	assert.Equal(t, [2]float64{1, 3}, [2]float64{lo, hi})
	lo, hi = LogRange([]float64{100})
	assert.Equal(t, [2]float64{2, 3}, [2]float64{lo, hi}, "one decade at least")
	lo, hi = LogRange([]float64{0, -1})
	assert.Equal(t, [2]float64{0, 1}, [2]float64{lo, hi}, "no positive value")
	assert.Equal(t, "100 kB", AxisLabel("B", 1e5))
	assert.Equal(t, "1 MB", AxisLabel("B", 1e6))
	assert.Equal(t, "10 B", AxisLabel("B", 10))
	assert.Equal(t, "1000", AxisLabel("ms", 1000))
	a := LogArea{X0: 10, Y0: 20, W: 300, H: 100, XLo: 0, XHi: 3, YLo: 1, YHi: 3}
	assert.InDelta(t, 10.0, a.PX(1), 1e-9)
	assert.InDelta(t, 310.0, a.PX(1000), 1e-9)
	assert.InDelta(t, 120.0, a.PY(10), 1e-9)
	assert.InDelta(t, 120.0, a.PY(0), 1e-9, "a value without a logarithm sits on the bottom decade")
}

func TestStyleAndColors(t *testing.T) {
	for series, want := range map[string][2]string{
		"sotw-uniform":         {"", "square"},
		"sotw-per-type":        {` stroke-dasharray="6 3"`, "triangle"},
		"delta":                {"", "circle"},
		"delta/linear":         {` stroke-dasharray="2 3"`, "circle"},
		"sotw-per-type/linear": {` stroke-dasharray="2 3"`, "triangle"},
	} {
		dash, shape := Style(series)
		assert.Equal(t, want, [2]string{dash, shape}, series)
	}
	c := Colors([]string{"delta", "something-else"})
	assert.Equal(t, "#1f77b4", c["delta"])
	assert.NotEmpty(t, c["something-else"])
	assert.Equal(t, "sotw-per-type-linear", SeriesID("sotw-per-type/linear"))
}
