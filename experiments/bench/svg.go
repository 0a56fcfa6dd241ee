package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Chart geometry: one row of two panels per workload, then the legend. The SVG is
// self-contained: no scripts, fonts or external references, so it opens offline and
// renders the same on GitHub.
const (
	panelW   = 470.0
	panelH   = 340.0
	marginL  = 70.0
	marginT  = 50.0
	marginB  = 60.0
	gapX     = 40.0
	legendH  = 40.0
	rowH     = marginT + panelH + marginB
	chartW   = marginL + panelW + gapX + marginL + panelW + 20
	fontAttr = `font-family="sans-serif"`
)

// seriesColors tell the series apart; so do dash patterns and marker shapes (see style),
// for readers and printers without colour.
var seriesColors = map[string]string{
	"sotw-uniform": "#d62728", "sotw-per-type": "#ff7f0e", "delta": "#1f77b4",
	"sotw-per-type/linear": "#9467bd", "delta/linear": "#2ca02c",
}

var fallbackColors = []string{"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"}

// Panel is one chart panel: a metric against N, for one workload.
type Panel struct {
	ID       string
	Workload string
	Title    string
	Metric   string
	Unit     string
}

// proofTitle is what the data-plane time of each workload waits for.
var proofTitle = map[string]string{
	WorkloadEndpoint:      "new endpoint answers",
	WorkloadClusterAdd:    "new cluster's path answers",
	WorkloadClusterRemove: "removed path gets 404",
	WorkloadRoute:         "other backend answers",
	WorkloadListener:      "new server header",
}

// Panels returns the two panels of one workload: bytes per change, and time to converge
// (the change seen through Envoy when every configuration of the workload has that
// figure, else the last ACK).
func (r *Report) Panels(workload string) [2]Panel {
	timeKey, timeTitle := "ack_ms", "publish → last ACK (ms)"
	has := false
	for _, c := range r.Configs {
		if c.Error != "" || c.Workload != workload {
			continue
		}
		if _, ok := c.Summary["data_plane_ms"]; !ok {
			has = false
			break
		}
		has = true
	}
	if has {
		timeKey, timeTitle = "data_plane_ms", "publish → "+proofTitle[workload]+" via Envoy (ms)"
	}
	change := workloadChange[workload]
	if change == "" {
		change = "change"
	}
	bytesTitle := "bytes sent per " + change
	if r.Options.Clients > 1 {
		bytesTitle = fmt.Sprintf("bytes sent to all %d clients per %s", r.Options.Clients, change)
		timeTitle = "publish → last client's ACK (ms)"
	}
	if r.Options.Envoys > 1 {
		bytesTitle = fmt.Sprintf("bytes sent to all %d Envoys per %s", r.Options.Envoys, change)
		if has {
			timeTitle = "publish → " + proofTitle[workload] + " via the last Envoy (ms)"
		}
	}
	return [2]Panel{
		{ID: workload + "-bytes", Workload: workload, Title: workload + ": " + bytesTitle, Metric: "bytes", Unit: "B"},
		{ID: workload + "-time", Workload: workload, Title: workload + ": " + timeTitle, Metric: timeKey, Unit: "ms"},
	}
}

// SeriesNames lists the series in report order.
func (r *Report) SeriesNames() []string {
	var out []string
	for _, c := range r.Configs {
		if !slices.Contains(out, c.Series) {
			out = append(out, c.Series)
		}
	}
	return out
}

// SeriesID is a series name as it appears in the SVG's ids ("sotw-per-type-linear").
func SeriesID(series string) string { return seriesIDs.Replace(series) }

// seriesIDs keep an id an XML name: "delta/linear" and "delta+tap" are not.
var seriesIDs = strings.NewReplacer("/", "-", "+", "-")

type point struct {
	n             int
	med, min, max float64
}

func (r *Report) points(workload, series, metric string) []point {
	var out []point
	for _, c := range r.Configs {
		if c.Workload != workload || c.Series != series || c.Error != "" {
			continue
		}
		if st, ok := c.Summary[metric]; ok && st.Median > 0 {
			out = append(out, point{c.N, st.Median, st.Min, st.Max})
		}
	}
	slices.SortFunc(out, func(a, b point) int { return a.n - b.n })
	return out
}

// logRange is a whole-decade range covering v (positive values).
func logRange(v []float64) (lo, hi float64) {
	if len(v) == 0 {
		return 0, 1
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		if x <= 0 {
			continue
		}
		lo = math.Min(lo, math.Floor(math.Log10(x)))
		hi = math.Max(hi, math.Ceil(math.Log10(x)))
	}
	if math.IsInf(lo, 0) {
		return 0, 1
	}
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// SVG draws bench.svg: for each workload a row of two log-log panels, one line per
// series, with min–max whiskers.
func (r *Report) SVG() []byte {
	workloads := r.workloads()
	if len(workloads) == 0 {
		workloads = []string{WorkloadEndpoint}
	}
	chartH := float64(len(workloads))*rowH + legendH
	var b bytes.Buffer
	svgOpen(&b, chartW, chartH, fmt.Sprintf("lab bench: bytes and time to converge against the number of clusters, per workload (%s)", strings.Join(workloads, ", ")))
	names := r.SeriesNames()
	colors := seriesColorMap(names)
	var ns []float64
	for _, c := range r.Configs {
		ns = append(ns, float64(c.N))
	}
	xlo, xhi := logRange(ns)
	for wi, w := range workloads {
		for pi, p := range r.Panels(w) {
			var vals []float64
			for _, s := range names {
				for _, pt := range r.points(w, s, p.Metric) {
					vals = append(vals, pt.min, pt.max, pt.med)
				}
			}
			a := logArea{x0: marginL + float64(pi)*(panelW+gapX+marginL), y0: float64(wi)*rowH + marginT, w: panelW, h: panelH, xlo: xlo, xhi: xhi}
			a.ylo, a.yhi = logRange(vals)
			r.drawPanel(&b, a, w, p, names, colors)
		}
	}
	seriesLegend(&b, names, colors, marginL, float64(len(workloads))*rowH+10)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// logArea is a log-log panel's frame: its top left corner, and the decades it spans
// across (clusters) and up (the metric).
type logArea struct {
	x0, y0, w, h, xlo, xhi, ylo, yhi float64
}

func (a logArea) px(n float64) float64 { return a.x0 + (math.Log10(n)-a.xlo)/(a.xhi-a.xlo)*a.w }

// py places v; a value at or below 0 has no logarithm and sits on the bottom decade.
func (a logArea) py(v float64) float64 {
	if v <= 0 {
		v = math.Pow(10, a.ylo)
	}
	return a.y0 + a.h - (math.Log10(v)-a.ylo)/(a.yhi-a.ylo)*a.h
}

// drawPanel draws panel p of workload w: its frame, a grid line per decade, and a curve
// per series.
func (r *Report) drawPanel(b *bytes.Buffer, a logArea, w string, p Panel, names []string, colors map[string]string) {
	x0, y0 := a.x0, a.y0
	fmt.Fprintf(b, `<g id="panel-%s" data-workload="%s">`+"\n", esc(p.ID), esc(w))
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="14" font-weight="bold">%s</text>`+"\n", x0+a.w/2, y0-20, esc(p.Title))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", x0, y0, a.w, a.h)
	for d := a.xlo; d <= a.xhi; d++ {
		x := a.px(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, y0, x, y0+a.h)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, y0+a.h+16, esc(fmtCount(math.Pow(10, d))))
	}
	for d := a.ylo; d <= a.yhi; d++ {
		y := a.py(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x0+a.w, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, y+4, esc(axisLabel(p.Unit, math.Pow(10, d))))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">clusters N (log scale)</text>`+"\n", x0+a.w/2, y0+a.h+36)
	for _, s := range names {
		if pts := r.points(w, s, p.Metric); len(pts) > 0 {
			a.drawSeries(b, w, p, s, pts, colors[s])
		}
	}
	b.WriteString("</g>\n")
}

// drawSeries draws series s's medians as a line, with a min–max whisker and a marker
// per N.
func (a logArea) drawSeries(b *bytes.Buffer, w string, p Panel, s string, pts []point, col string) {
	fmt.Fprintf(b, `<g id="%s-%s" class="series" data-series="%s" data-workload="%s">`+"\n", esc(p.ID), esc(SeriesID(s)), esc(s), esc(w))
	var poly []string
	for _, pt := range pts {
		poly = append(poly, fmt.Sprintf("%.1f,%.1f", a.px(float64(pt.n)), a.py(pt.med)))
	}
	dash, shape := style(s)
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", joinSpace(poly), col, dash)
	for _, pt := range pts {
		x := a.px(float64(pt.n))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x, a.py(pt.min), x, a.py(pt.max), col)
		tip := fmt.Sprintf("%s %s N=%d: median %s (min %s, max %s)", w, s, pt.n, format(p.Unit, pt.med), format(p.Unit, pt.min), format(p.Unit, pt.max))
		marker(b, shape, x, a.py(pt.med), col, tip)
	}
	b.WriteString("</g>\n")
}

// seriesLegend draws each series' line and marker, and what they mean, from (lx, ly).
func seriesLegend(b *bytes.Buffer, names []string, colors map[string]string, lx, ly float64) {
	for _, s := range names {
		dash, shape := style(s)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+28, ly, colors[s], dash)
		marker(b, shape, lx+14, ly, colors[s], s)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+34, ly+4, esc(s))
		lx += 34 + 7*float64(len(s)) + 20
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="#555">median of the repeats; whiskers: min–max</text>`+"\n", lx+10, ly+4)
}

// style is a series' dash pattern (an SVG attribute, or "") and marker shape: the
// shape says the protocol and version strategy, a dotted line the LinearCache.
func style(series string) (dash, shape string) {
	base, cache, linear := strings.Cut(series, "/")
	switch base {
	case "sotw-uniform":
		shape = "square"
	case "sotw-per-type":
		shape, dash = "triangle", ` stroke-dasharray="6 3"`
	default:
		shape = "circle"
	}
	if linear && cache != "" {
		dash = ` stroke-dasharray="2 3"`
	}
	return dash, shape
}

// marker draws one data point with its tooltip.
func marker(b *bytes.Buffer, shape string, x, y float64, col, tip string) {
	t := "<title>" + esc(tip) + "</title>"
	switch shape {
	case "square":
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="7" height="7" fill="%s">%s</rect>`+"\n", x-3.5, y-3.5, col, t)
	case "triangle":
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s">%s</polygon>`+"\n", x, y-4.5, x-4.5, y+3.5, x+4.5, y+3.5, col, t)
	default:
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s">%s</circle>`+"\n", x, y, col, t)
	}
}

func axisLabel(unit string, v float64) string {
	// Ticks are powers of ten, so plain numbers read best: 100 kB, not 100.0 kB.
	if unit == "B" {
		for _, u := range []struct {
			div  float64
			name string
		}{{1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}} {
			if v >= u.div {
				return fmt.Sprintf("%g %s", v/u.div, u.name)
			}
		}
		return fmt.Sprintf("%g B", v)
	}
	return fmt.Sprintf("%g", v)
}

func joinSpace(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x)
	}
	return b.String()
}

// svgOpen writes the XML declaration, the svg element of w x h, its title and the white
// background every chart starts with.
func svgOpen(b *bytes.Buffer, w, h float64, title string) {
	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" %s font-size="12">`+"\n", w, h, w, h, fontAttr)
	fmt.Fprintf(b, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
}

// seriesColorMap gives each series its fixed color, or one from the fallback palette.
func seriesColorMap(names []string) map[string]string {
	colors := make(map[string]string, len(names))
	for i, s := range names {
		if c, ok := seriesColors[s]; ok {
			colors[s] = c
		} else {
			colors[s] = fallbackColors[i%len(fallbackColors)]
		}
	}
	return colors
}

// BytesSVG draws one log-log panel per workload, side by side, each pw x ph: the bytes
// each series sent per change against N. It is the main report's scale chart (lab
// compare with a scale sweep), drawn by the same code as bench.svg's bytes panels.
func (r *Report) BytesSVG(pw, ph float64) []byte {
	workloads := r.workloads()
	if len(workloads) == 0 {
		workloads = []string{WorkloadEndpoint}
	}
	w := marginL + float64(len(workloads))*(pw+gapX+marginL) - gapX - marginL + 20
	var b bytes.Buffer
	svgOpen(&b, w, marginT+ph+marginB+legendH, "bytes sent per change against the number of clusters N ("+strings.Join(workloads, ", ")+")")
	names := r.SeriesNames()
	colors := seriesColorMap(names)
	var ns []float64
	for _, c := range r.Configs {
		ns = append(ns, float64(c.N))
	}
	xlo, xhi := logRange(ns)
	for i, wl := range workloads {
		p := r.Panels(wl)[0]
		var vals []float64
		for _, s := range names {
			for _, pt := range r.points(wl, s, p.Metric) {
				vals = append(vals, pt.min, pt.max, pt.med)
			}
		}
		a := logArea{x0: marginL + float64(i)*(pw+gapX+marginL), y0: marginT, w: pw, h: ph, xlo: xlo, xhi: xhi}
		a.ylo, a.yhi = logRange(vals)
		r.drawPanel(&b, a, wl, p, names, colors)
	}
	seriesLegend(&b, names, colors, marginL, marginT+ph+marginB+10)
	b.WriteString("</svg>\n")
	return b.Bytes()
}
