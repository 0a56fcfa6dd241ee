package render

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/xds-workbench/lab/experiments/compare"
)

// Vertical extent of SVG text at 10px (svg text's font): a glyph reaches about this far
// above its baseline and below it. svgRowGap is the least room between two rows: what
// one arrow's label keeps from the arrowhead above it.
const (
	svgAscent  = 8
	svgDescent = 3
	svgRowGap  = 4
)

// rowExtent is how far a laid-out row reaches up and down: its note box or its arrow
// (with the arrowhead), and every label line.
func rowExtent(r svgRow) (top, bottom int) {
	top, bottom = r.Y-4, r.Y+4 // the arrowhead
	if r.Note {
		top, bottom = r.NoteY, r.NoteY+r.NoteH
	}
	for _, l := range r.Lines {
		top, bottom = min(top, l.Y-svgAscent), max(bottom, l.Y+svgDescent)
	}
	return top, bottom
}

// TestDiagramRowsDoNotOverlap: in every laid-out diagram, each row (a publish box, an
// arrow with its label, a note) starts below the one before it ends, with room between:
// the first send's label used to touch the publish box above it.
func TestDiagramRowsDoNotOverlap(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{})
	wrapped := compare.Diagram{Run: "A", Mode: "sotw", ClientName: "Envoy", Messages: []compare.Message{
		{From: compare.ControlPlane, To: compare.ControlPlane, Kind: compare.KindPublish, Label: "publish v2 (changed EDS) " + string(slices.Repeat([]byte("x"), 80))},
		{From: compare.ControlPlane, To: compare.Client, Kind: compare.KindSend, Label: "send CDS n=5 v=2 [inventory] " + string(slices.Repeat([]byte("y"), 120))},
	}}
	for _, d := range append(slices.Clone(rep.Diagrams), wrapped) {
		sd := layoutDiagram(d)
		for i := 1; i < len(sd.Rows); i++ {
			_, prevBottom := rowExtent(sd.Rows[i-1])
			top, _ := rowExtent(sd.Rows[i])
			assert.GreaterOrEqual(t, top, prevBottom+svgRowGap, "%s %s: row %d (%q) starts before row %d (%q) ends",
				d.Run, d.Step, i, sd.Rows[i].Full, i-1, sd.Rows[i-1].Full)
		}
		_, bottom := rowExtent(sd.Rows[len(sd.Rows)-1])
		assert.LessOrEqual(t, bottom, sd.Height, "%s %s: the last row inside the drawing", d.Run, d.Step)
	}
}
