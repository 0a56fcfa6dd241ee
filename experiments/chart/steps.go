package chart

import (
	"bytes"
	"fmt"
	"strings"
)

// StepArea is one panel of step curves: time across (0..XMax, linear) and a count up
// (0..K), with its top left corner at (X0, Y0). lab bench's versions.svg draws one per
// workload and N: how many of K Envoys ran the new version against the time since the
// publish.
type StepArea struct {
	X0, Y0, W, H, XMax float64
	K                  int
}

// PX is time t's x; PY count n's y.
func (a StepArea) PX(t float64) float64 { return a.X0 + t/a.XMax*a.W }
func (a StepArea) PY(n float64) float64 { return a.Y0 + a.H - n/float64(a.K)*a.H }

// Open opens the panel's group (id and attrs, already escaped), with its title, frame,
// four time gridlines labelled by xLabel, one count gridline per step, and caption under
// the time axis. Close ends it.
func (a StepArea) Open(b *bytes.Buffer, id, attrs, title, caption string, xLabel func(float64) string) {
	x0, y0, w, h := a.X0, a.Y0, a.W, a.H
	fmt.Fprintf(b, `<g id="%s"%s>`+"\n", Esc(id), attrs)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="14" font-weight="bold">%s</text>`+"\n", x0+w/2, y0-20, Esc(title))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", x0, y0, w, h)
	for i := 0; i <= 4; i++ {
		t := a.XMax * float64(i) / 4
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", a.PX(t), y0, a.PX(t), y0+h)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", a.PX(t), y0+h+16, Esc(xLabel(t)))
	}
	for n := 0; n <= a.K; n++ {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x0, a.PY(float64(n)), x0+w, a.PY(float64(n)))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%d</text>`+"\n", x0-6, a.PY(float64(n))+4, n)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x0+w/2, y0+h+36, Esc(caption))
}

// Close ends a panel Open began.
func (a StepArea) Close(b *bytes.Buffer) { b.WriteString("</g>\n") }

// StepCurve is one series' curve: Times[i] is when the count reached i+1.
type StepCurve struct {
	// ID and Attrs are its group's id and further attributes (already escaped).
	ID, Attrs string
	Times     []float64
	Color     string
	Dashed    bool
	// Tip is the hover text of the point where the count reached i+1.
	Tip func(i int, t float64) string
}

// Curve draws c from count 0 at time 0 to its last count at XMax, a dot with its tip at
// each step.
func (a StepArea) Curve(b *bytes.Buffer, c StepCurve) {
	if len(c.Times) == 0 {
		return
	}
	dash := ""
	if c.Dashed {
		dash = ` stroke-dasharray="6 3"`
	}
	fmt.Fprintf(b, `<g id="%s"%s>`+"\n", c.ID, c.Attrs)
	pts := []string{fmt.Sprintf("%.1f,%.1f", a.PX(0), a.PY(0))}
	for i, t := range c.Times {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", a.PX(t), a.PY(float64(i))), fmt.Sprintf("%.1f,%.1f", a.PX(t), a.PY(float64(i+1))))
	}
	pts = append(pts, fmt.Sprintf("%.1f,%.1f", a.PX(a.XMax), a.PY(float64(len(c.Times)))))
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), c.Color, dash)
	for i, t := range c.Times {
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s</title></circle>`+"\n", a.PX(t), a.PY(float64(i+1)), c.Color, Esc(c.Tip(i, t)))
	}
	b.WriteString("</g>\n")
}

// LineLegend draws each series' color as a line sample and its name from (lx, ly), then
// note (what solid and dashed mean).
func LineLegend(b *bytes.Buffer, names []string, colors map[string]string, lx, ly float64, note string) {
	for _, s := range names {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", lx, ly, lx+28, ly, colors[s])
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+34, ly+4, Esc(s))
		lx += 34 + 7*float64(len(s)) + 20
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="#555">%s</text>`+"\n", lx+10, ly+4, Esc(note))
}

// Close ends a chart Open began.
func Close(b *bytes.Buffer) { b.WriteString("</svg>\n") }
