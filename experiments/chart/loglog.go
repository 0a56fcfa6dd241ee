package chart

import (
	"bytes"
	"fmt"
	"math"
	"strings"
)

// Point is one N of a series: the median, with a min–max whisker, and its tooltip.
type Point struct {
	N             int
	Med, Min, Max float64
	Tip           string
}

// Series is one line of a panel.
type Series struct {
	Name   string
	Points []Point
}

// Panel is one log-log panel: a metric against N. ID and Group become the panel's id and
// data-workload attribute (tests and readers find panels by them).
type Panel struct {
	ID, Group, Title, Unit string
	Series                 []Series
}

// Grid draws panels in rows of perRow, each pw x ph, on one shared N axis, then the
// legend of every series named in names (in that order) and note.
func Grid(title string, panels []Panel, perRow int, pw, ph float64, names []string, note string) []byte {
	perRow = max(perRow, 1)
	rows := max((len(panels)+perRow-1)/perRow, 1)
	cols := min(perRow, max(len(panels), 1))
	rowH := MarginT + ph + MarginB
	w := MarginL + float64(cols)*(pw+GapX+MarginL) - GapX - MarginL + 20
	var b bytes.Buffer
	Open(&b, w, float64(rows)*rowH+LegendH, title)
	colors := Colors(names)
	var ns []float64
	for _, p := range panels {
		for _, s := range p.Series {
			for _, pt := range s.Points {
				ns = append(ns, float64(pt.N))
			}
		}
	}
	xlo, xhi := LogRange(ns)
	for i, p := range panels {
		var vals []float64
		for _, s := range p.Series {
			for _, pt := range s.Points {
				vals = append(vals, pt.Min, pt.Max, pt.Med)
			}
		}
		a := LogArea{X0: MarginL + float64(i%perRow)*(pw+GapX+MarginL), Y0: float64(i/perRow)*rowH + MarginT, W: pw, H: ph, XLo: xlo, XHi: xhi}
		a.YLo, a.YHi = LogRange(vals)
		a.Draw(&b, p, colors)
	}
	Legend(&b, names, colors, MarginL, float64(rows)*rowH+10, note)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// LogArea is a log-log panel's frame: its top left corner and size, and the decades it
// spans across (N) and up (the metric).
type LogArea struct {
	X0, Y0, W, H, XLo, XHi, YLo, YHi float64
}

// PX places N across.
func (a LogArea) PX(n float64) float64 { return a.X0 + (math.Log10(n)-a.XLo)/(a.XHi-a.XLo)*a.W }

// PY places v up; a value at or below 0 has no logarithm and sits on the bottom decade.
func (a LogArea) PY(v float64) float64 {
	if v <= 0 {
		v = math.Pow(10, a.YLo)
	}
	return a.Y0 + a.H - (math.Log10(v)-a.YLo)/(a.YHi-a.YLo)*a.H
}

// Draw draws panel p: its frame, a grid line per decade, and a curve per series.
func (a LogArea) Draw(b *bytes.Buffer, p Panel, colors map[string]string) {
	x0, y0 := a.X0, a.Y0
	fmt.Fprintf(b, `<g id="panel-%s" data-workload="%s">`+"\n", Esc(p.ID), Esc(p.Group))
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="14" font-weight="bold">%s</text>`+"\n", x0+a.W/2, y0-20, Esc(p.Title))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", x0, y0, a.W, a.H)
	for d := a.XLo; d <= a.XHi; d++ {
		x := a.PX(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, y0, x, y0+a.H)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`+"\n", x, y0+a.H+16, math.Pow(10, d))
	}
	for d := a.YLo; d <= a.YHi; d++ {
		y := a.PY(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x0+a.W, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, y+4, Esc(AxisLabel(p.Unit, math.Pow(10, d))))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">clusters N (log scale)</text>`+"\n", x0+a.W/2, y0+a.H+36)
	for _, s := range p.Series {
		if len(s.Points) > 0 {
			a.series(b, p, s, colors[s.Name])
		}
	}
	b.WriteString("</g>\n")
}

// series draws s's medians as a line, with a min–max whisker and a marker per N.
func (a LogArea) series(b *bytes.Buffer, p Panel, s Series, col string) {
	fmt.Fprintf(b, `<g id="%s-%s" class="series" data-series="%s" data-workload="%s">`+"\n", Esc(p.ID), Esc(SeriesID(s.Name)), Esc(s.Name), Esc(p.Group))
	var poly []string
	for _, pt := range s.Points {
		poly = append(poly, fmt.Sprintf("%.1f,%.1f", a.PX(float64(pt.N)), a.PY(pt.Med)))
	}
	dash, shape := Style(s.Name)
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(poly, " "), col, dash)
	for _, pt := range s.Points {
		x := a.PX(float64(pt.N))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x, a.PY(pt.Min), x, a.PY(pt.Max), col)
		Marker(b, shape, x, a.PY(pt.Med), col, pt.Tip)
	}
	b.WriteString("</g>\n")
}

// SeriesID is a series name as it appears in ids ("sotw-per-type-linear"): "/" and "+"
// are not in an XML name.
func SeriesID(series string) string { return seriesIDs.Replace(series) }

var seriesIDs = strings.NewReplacer("/", "-", "+", "-")
