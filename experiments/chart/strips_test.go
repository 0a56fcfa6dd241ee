package chart

import (
	"encoding/xml"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stripSVG is what the strip tests read of a strip chart.
type stripSVG struct {
	Width  float64  `xml:"width,attr"`
	Height float64  `xml:"height,attr"`
	Texts  []string `xml:"text"`
	Rects  []struct {
		Y float64 `xml:"y,attr"`
	} `xml:"rect"`
	Lines []struct {
		Points string `xml:"points,attr"`
	} `xml:"polyline"`
}

// points parses a polyline's "x,y x,y " into pairs.
func points(t *testing.T, s string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, p := range strings.Fields(s) {
		x, y, ok := strings.Cut(p, ",")
		require.True(t, ok, p)
		fx, err := strconv.ParseFloat(x, 64)
		require.NoError(t, err)
		fy, err := strconv.ParseFloat(y, 64)
		require.NoError(t, err)
		out = append(out, [2]float64{fx, fy})
	}
	return out
}

// A strip chart stacks a strip per series, each line drawn against the strip's own
// maximum across the whole width, its label saying the range and the span; names are
// escaped.
func TestStrips(t *testing.T) {
	f := StripFrame{W: 640, StripH: 90, Pad: 30}
	b := Strips(f, []float64{0, 30, 60}, []Strip{
		{Name: "heap MiB", Values: []float64{2, 4, 8}},
		{Name: "a <b>", Values: []float64{5, 5, 5}},
		{Name: "none", Values: []float64{0, 0, 0}},
	})
	var svg stripSVG
	require.NoError(t, xml.Unmarshal(b, &svg), "well-formed XML")
	assert.Equal(t, 640.0, svg.Width)
	assert.Equal(t, 30+3*(90+30.0), svg.Height, "a strip and its pad each")
	assert.Equal(t, []string{"heap MiB (0-8.0) over 60 s", "a <b> (0-5.0) over 60 s", "none (0-1.0) over 60 s"}, svg.Texts,
		"each label says its strip's range; an all-zero strip is drawn against 1")
	require.Len(t, svg.Lines, 3)
	require.Len(t, svg.Rects, 3)
	for i, l := range svg.Lines {
		top := svg.Rects[i].Y
		assert.Equal(t, 30+float64(i)*120, top)
		pts := points(t, l.Points)
		require.Len(t, pts, 3)
		assert.Equal(t, 30.0, pts[0][0], "the first sample at the left edge")
		assert.Equal(t, 610.0, pts[2][0], "the last at the right edge")
		for _, p := range pts {
			assert.True(t, p[1] >= top && p[1] <= top+90, "strip %d stays in its frame: %v", i, p)
		}
	}
	heap := points(t, svg.Lines[0].Points)
	assert.Equal(t, 30.0, heap[2][1], "the maximum touches the top")
	assert.Equal(t, 30+90-2.0/8*90, heap[0][1], "the rest in proportion")
	none := points(t, svg.Lines[2].Points)
	assert.Equal(t, 270+90.0, none[0][1], "zero sits on the bottom")
	assert.Contains(t, string(b), "a &lt;b&gt; (0-5.0)")
}

// A chart of no samples is still a chart: its strips and labels, empty lines over 1 s.
func TestStripsEmpty(t *testing.T) {
	var svg stripSVG
	require.NoError(t, xml.Unmarshal(Strips(StripFrame{W: 200, StripH: 50, Pad: 10}, nil, []Strip{{Name: "goroutines"}}), &svg))
	assert.Equal(t, []string{"goroutines (0-1.0) over 1 s"}, svg.Texts)
	require.Len(t, svg.Lines, 1)
	assert.Empty(t, strings.TrimSpace(svg.Lines[0].Points))
}
