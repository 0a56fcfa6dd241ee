package benchcore

import (
	"fmt"
	"io"
	"strings"

	"github.com/xds-workbench/lab/experiments/table"
)

// Block is one titled table of the report, written as text (the terminal) or Markdown
// (bench.md) from the same cells, so that the two never disagree. Its cells are figures
// (add): in text every cell and heading aligns right; in Markdown the columns of names
// (leftColumns) align left.
type Block struct {
	Title, Note string
	table.Table
}

// Add appends a row of figures.
func (b *Block) Add(row []string) { b.Rows = append(b.Rows, table.RightCells(row...)) }

func (b Block) Text(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n", b.Title)
	if b.Note != "" {
		fmt.Fprintf(w, "%s\n", b.Note)
	}
	t := b.Table
	t.RightHead = true
	_, _ = io.WriteString(w, t.Text(0))
}

func (b Block) Markdown(sb *strings.Builder) {
	fmt.Fprintf(sb, "\n### %s\n\n", b.Title)
	if b.Note != "" {
		fmt.Fprintf(sb, "%s\n\n", b.Note)
	}
	t := b.Table
	t.MarkdownRules = make([]string, len(t.Head))
	for i, h := range t.Head {
		t.MarkdownRules[i] = "---:"
		if leftColumns[h] {
			t.MarkdownRules[i] = "---"
		}
	}
	sb.WriteString(t.Markdown(nil))
}

// leftColumns are the columns of names, left-aligned in Markdown; figures align right.
var leftColumns = map[string]bool{"workload": true, "cache": true, "series": true}

// FmtBytes uses decimal units (kB = 1000 B), as network figures usually are.
func FmtBytes(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2f GB", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2f MB", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f kB", v/1e3)
	}
	return fmt.Sprintf("%.0f B", v)
}

func FmtMS(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func FmtCount(v float64) string { return fmt.Sprintf("%.0f", v) }

func FmtRatio(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0fx", v)
	case v >= 10:
		return fmt.Sprintf("%.1fx", v)
	}
	return fmt.Sprintf("%.2fx", v)
}

func Format(unit string, v float64) string {
	switch unit {
	case "B":
		return FmtBytes(v)
	case "ms":
		return FmtMS(v)
	}
	return FmtCount(v)
}

func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
