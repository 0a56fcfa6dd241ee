// Package chart is the workbench's one SVG chart kit: self-contained SVG (no scripts,
// fonts or external references, so a chart opens offline and renders the same on
// GitHub), the series' colours, dashes and markers, the log-log panel grid that
// bench.svg and the compare report's scale chart are drawn with (Grid), and the strip
// chart of lab churn's samples.svg (Strips). A series is named as
// lab bench names it ("sotw-per-type", "delta/linear"): the name picks its style, so a
// series looks the same in every chart.
package chart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strings"
)

// Geometry of a grid of panels: the margins around each panel, the gap between panels
// of a row, and the legend's row.
const (
	MarginL = 70.0
	MarginT = 50.0
	MarginB = 60.0
	GapX    = 40.0
	LegendH = 40.0
)

// seriesColors tell the series apart; so do dash patterns and marker shapes (Style),
// for readers and printers without colour.
var seriesColors = map[string]string{
	"sotw-uniform": "#d62728", "sotw-per-type": "#ff7f0e", "delta": "#1f77b4",
	"sotw-per-type/linear": "#9467bd", "delta/linear": "#2ca02c",
}

var fallbackColors = []string{"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"}

// Colors gives each series its fixed colour, or one from the fallback palette.
func Colors(names []string) map[string]string {
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

// Style is a series' dash pattern (an SVG attribute, or "") and marker shape: the shape
// says the protocol and version strategy, a dotted line the LinearCache.
func Style(series string) (dash, shape string) {
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

// Marker draws one data point with its tooltip.
func Marker(b *bytes.Buffer, shape string, x, y float64, col, tip string) {
	t := "<title>" + Esc(tip) + "</title>"
	switch shape {
	case "square":
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="7" height="7" fill="%s">%s</rect>`+"\n", x-3.5, y-3.5, col, t)
	case "triangle":
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s">%s</polygon>`+"\n", x, y-4.5, x-4.5, y+3.5, x+4.5, y+3.5, col, t)
	default:
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s">%s</circle>`+"\n", x, y, col, t)
	}
}

// Esc escapes s for SVG text and attributes.
func Esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Open writes the XML declaration, the svg element of w x h, its title and the white
// background every chart starts with.
func Open(b *bytes.Buffer, w, h float64, title string) {
	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(b, "<title>%s</title>\n", Esc(title))
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
}

// LogRange is a whole-decade range covering the positive values of v.
func LogRange(v []float64) (lo, hi float64) {
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

// AxisLabel is a tick's label: ticks are powers of ten, so plain numbers read best
// (100 kB, not 100.0 kB).
func AxisLabel(unit string, v float64) string {
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

// Legend draws each series' line and marker, and what they mean, from (lx, ly), then
// note.
func Legend(b *bytes.Buffer, names []string, colors map[string]string, lx, ly float64, note string) {
	for _, s := range names {
		dash, shape := Style(s)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+28, ly, colors[s], dash)
		Marker(b, shape, lx+14, ly, colors[s], s)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+34, ly+4, Esc(s))
		lx += 34 + 7*float64(len(s)) + 20
	}
	if note != "" {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="#555">%s</text>`+"\n", lx+10, ly+4, Esc(note))
	}
}
