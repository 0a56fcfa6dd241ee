package chart

import (
	"bytes"
	"fmt"
)

// Strip is one series of a strip chart: its label and its value at each of the chart's
// times.
type Strip struct {
	Name   string
	Values []float64
}

// StripFrame is a strip chart's geometry: its width, each strip's height, and the pad
// around and between the strips (the label sits in the pad above its strip).
type StripFrame struct {
	W, StripH, Pad float64
}

// Strips draws a strip chart: one small panel per strip, stacked, each a line of the
// strip's values against at (elapsed seconds, 0 to the last), drawn against the strip's
// own maximum so that a panel shows shape (flat or growing) while its label says the
// range. A long run's samples (lab churn's samples.svg) read at a glance. Values[i] is
// the value at at[i]; a strip without a positive value is drawn against 1.
func Strips(f StripFrame, at []float64, strips []Strip) []byte {
	var b bytes.Buffer
	h := f.Pad + float64(len(strips))*(f.StripH+f.Pad)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", f.W, h)
	end := 1.0
	if n := len(at); n > 0 && at[n-1] > 0 {
		end = at[n-1]
	}
	for i, s := range strips {
		y0 := f.Pad + float64(i)*(f.StripH+f.Pad)
		hi := 0.0
		for _, v := range s.Values {
			hi = max(hi, v)
		}
		if hi == 0 {
			hi = 1
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s (0-%.1f) over %.0f s</text>`+"\n", f.Pad, y0-6, Esc(s.Name), hi, end)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#ccc"/>`+"\n", f.Pad, y0, f.W-2*f.Pad, f.StripH)
		b.WriteString(`<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="`)
		for j, v := range s.Values {
			x := f.Pad + at[j]/end*(f.W-2*f.Pad)
			y := y0 + f.StripH - v/hi*f.StripH
			fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
		}
		b.WriteString("\"/>\n")
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
