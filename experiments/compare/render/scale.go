package render

import (
	"bytes"
	"fmt"
	"html/template"
	"slices"

	"github.com/xds-workbench/lab/experiments/chart"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
)

// scaleChart is the bytes-per-change chart, inline in HTML: one log-log panel per workload,
// a line per series, drawn by the chart kit without its XML declaration.
func scaleChart(s *compare.Scale) template.HTML {
	var panels []chart.Panel
	for _, wl := range workloads(s) {
		p := chart.Panel{ID: wl + "-bytes", Group: wl, Title: wl + ": " + bytesTitle(wl), Unit: "B"}
		for _, name := range series(s) {
			var pts []chart.Point
			for _, pt := range s.Points {
				if pt.Workload == wl && pt.Series == name && pt.Bytes > 0 {
					pts = append(pts, chart.Point{N: pt.N, Med: pt.Bytes, Min: pt.BytesMin, Max: pt.BytesMax,
						Tip: fmt.Sprintf("%s %s N=%d: median %s", wl, name, pt.N, words.Bytes(pt.Bytes))})
				}
			}
			slices.SortFunc(pts, func(a, b chart.Point) int { return a.N - b.N })
			p.Series = append(p.Series, chart.Series{Name: name, Points: pts})
		}
		panels = append(panels, p)
	}
	b := chart.Grid("bytes sent per change against the number of clusters N", panels, len(panels), 470, 120, series(s),
		"median of the repeats; whiskers: min–max")
	if i := bytes.Index(b, []byte("<svg")); i > 0 {
		b = b[i:]
	}
	// Drawn from numbers and XML-escaped names: safe to inline as is.
	return template.HTML(b)
}

// bytesTitle is a workload's panel title.
func bytesTitle(workload string) string {
	switch workload {
	case "endpoint":
		return "bytes sent per endpoint change"
	case "cluster-add":
		return "bytes sent per cluster added"
	}
	return "bytes sent per change"
}

// workloads are the sweep's workloads in report order.
func workloads(s *compare.Scale) []string {
	var out []string
	for _, p := range s.Points {
		if !slices.Contains(out, p.Workload) {
			out = append(out, p.Workload)
		}
	}
	return out
}

// series are the sweep's series in report order.
func series(s *compare.Scale) []string {
	var out []string
	for _, p := range s.Points {
		if !slices.Contains(out, p.Series) {
			out = append(out, p.Series)
		}
	}
	return out
}
