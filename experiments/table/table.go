// Package table is the workbench's one table kit: a Table of cells under a head, with
// column groups and hover tips where a report wants them, written as aligned text
// (split into stacked tables at a width), as Markdown, or as HTML, so that a table's
// formats show the same cells. It feeds every table the workbench prints: lab compare's
// reports and matrices (experiments/compare), lab bench's terminal tables and bench.md
// (experiments/bench), the lab sweep table (experiments/sweep) and the status tables
// of lab serve (cmd/lab).
package table

// Table is one table: a head, rows of cells under it, and optionally column groups.
type Table struct {
	// Groups label spans of columns, left to right (the first group is usually the row
	// header's, untitled); nil: no groups.
	Groups []Group
	Head   []string
	// RightHead aligns the head's texts right in text, over columns of figures (lab
	// bench, lab sweep); otherwise they align left.
	RightHead bool
	// Tips are hover texts of columns by heading (HTML only; nil for none).
	Tips map[string]string
	Rows [][]Cell
	// MarkdownRules are the rules under the Markdown head, a column each; nil: "--:"
	// under a column whose first row's cell aligns right, "---" under the others.
	MarkdownRules []string
}

// Group is a titled span of columns.
type Group struct {
	Title string
	Span  int
}

// Cell is one table cell. Title (the unabbreviated value, shown on hover), Class and
// Bar are for HTML only.
type Cell struct {
	Text, Title, Class string
	Right              bool
	// Bar is drawn before Text (HTML only; nil: none).
	Bar *Bar
}

// Bar is a window drawn on an axis, before a cell's text (HTML only): lab compare's
// data-plane table draws a step's failures on the step's time axis with it.
type Bar struct {
	// W is the axis' width in CSS pixels; X and FW place the window on it ("" FW: no
	// window). Label is its accessible name.
	W     int
	X, FW string
	Label string
}

// Cells are a row of cells of texts, aligned left.
func Cells(texts ...string) []Cell {
	out := make([]Cell, len(texts))
	for i, s := range texts {
		out[i] = Cell{Text: s}
	}
	return out
}

// RightCells are a row of cells of texts, aligned right (figures).
func RightCells(texts ...string) []Cell {
	out := Cells(texts...)
	for i := range out {
		out[i].Right = true
	}
	return out
}
