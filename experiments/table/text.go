package table

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Text is t as aligned text, split into stacked tables of at most width columns each
// when it is wider (width 0: never split). Each line starts two spaces in, a column is
// as wide as its widest cell, two spaces apart or " | " where a group starts, and a
// line's spaces after its last cell's text are trimmed. Each part of a split repeats the row header (the first column)
// and keeps a group whole when the group fits alone; a single column wider than width
// is a part of its own.
func (t Table) Text(width int) string {
	var b strings.Builder
	for i, part := range t.split(width) {
		if i > 0 {
			b.WriteString("\n")
		}
		part.writeText(&b)
	}
	return b.String()
}

// columnWidths is each column's width in text: its widest cell or heading.
func (t Table) columnWidths() []int {
	width := make([]int, len(t.Head))
	for i, h := range t.Head {
		width[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c.Text))
		}
	}
	return width
}

// split cuts t's columns after the first into parts that fit width, as writeText lays
// them out: a two-space indent, the row header, then each column after its separator
// (" | " where a group starts, two spaces otherwise).
func (t Table) split(width int) []Table {
	colWidth := t.columnWidths()
	if width <= 0 || len(t.Head) < 2 {
		return []Table{t}
	}
	// groupOf is each column's group; the units to keep together are the groups after the
	// row header's, or single columns when the table has no groups.
	grouped := len(t.Groups) > 1
	groupOf := make([]int, len(t.Head))
	var units [][]int
	col := 0
	for gi, g := range t.Groups {
		for i := col; i < col+g.Span && i < len(t.Head); i++ {
			groupOf[i] = gi
		}
		if gi > 0 {
			units = append(units, seq(col, col+g.Span))
		}
		col += g.Span
	}
	if !grouped {
		units = nil
		for i := 1; i < len(t.Head); i++ {
			units = append(units, []int{i})
		}
	}
	lineWidth := func(cols []int) int {
		w := 2 + colWidth[0]
		for k, c := range cols {
			sep := 2
			if grouped && (k == 0 || groupOf[c] != groupOf[cols[k-1]]) {
				sep = 3
			}
			w += sep + colWidth[c]
		}
		return w
	}
	if lineWidth(seq(1, len(t.Head))) <= width {
		return []Table{t}
	}
	var parts [][]int
	var cur []int
	flush := func() {
		if len(cur) > 0 {
			parts, cur = append(parts, cur), nil
		}
	}
	fits := func(cols []int) bool { return lineWidth(append(slices.Clone(cur), cols...)) <= width }
	for _, u := range units {
		switch {
		case fits(u):
			cur = append(cur, u...)
		case lineWidth(u) <= width:
			flush()
			cur = u
		default:
			for _, c := range u {
				if !fits([]int{c}) {
					flush()
				}
				cur = append(cur, c)
			}
		}
	}
	flush()
	out := make([]Table, len(parts))
	for i, cols := range parts {
		out[i] = t.columns(cols, groupOf)
	}
	return out
}

// columns is t's row header and cols, with the groups that cover them.
func (t Table) columns(cols, groupOf []int) Table {
	all := append([]int{0}, cols...)
	s := Table{RightHead: t.RightHead}
	for k, c := range all {
		s.Head = append(s.Head, t.Head[c])
		if len(t.Groups) > 1 {
			if k > 0 && groupOf[c] == groupOf[all[k-1]] {
				s.Groups[len(s.Groups)-1].Span++
			} else {
				s.Groups = append(s.Groups, Group{t.Groups[groupOf[c]].Title, 1})
			}
		}
	}
	for _, r := range t.Rows {
		row := make([]Cell, 0, len(all))
		for _, c := range all {
			if c < len(r) {
				row = append(row, r[c])
			}
		}
		s.Rows = append(s.Rows, row)
	}
	return s
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// writeText writes t as one table, however wide.
func (t Table) writeText(b *strings.Builder) {
	width := t.columnWidths()
	// Column i starts a new group when a group begins there: a "|" separates groups.
	starts := map[int]bool{}
	col := 0
	for _, g := range t.Groups {
		starts[col] = true
		col += g.Span
	}
	line := func(cells []Cell) {
		var s strings.Builder
		for i, c := range cells {
			switch {
			case i == 0:
			case starts[i]:
				s.WriteString(" | ")
			default:
				s.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c.Text))
			if c.Right {
				s.WriteString(pad + c.Text)
			} else {
				s.WriteString(c.Text + pad)
			}
		}
		b.WriteString("  " + strings.TrimRight(s.String(), " ") + "\n")
	}
	if len(t.Groups) > 1 {
		b.WriteString("  " + strings.TrimRight(strings.Join(t.groupTitles(width), " | "), " ") + "\n")
	}
	head := make([]Cell, len(t.Head))
	for i, h := range t.Head {
		head[i] = Cell{Text: h, Right: t.RightHead}
	}
	line(head)
	for _, r := range t.Rows {
		line(r)
	}
}

// groupTitles are the groups' titles, each padded to span its columns (of widths
// width). Within the span, "..." included: a longer title would push the next one off
// its columns, and a split table past its width.
func (t Table) groupTitles(width []int) []string {
	var titles []string
	col := 0
	for _, g := range t.Groups {
		span := 2 * (g.Span - 1)
		for i := col; i < col+g.Span; i++ {
			span += width[i]
		}
		title := g.Title
		if utf8.RuneCountInString(title) > span {
			title = string([]rune(title)[:max(span-3, 0)]) + "..."
		}
		titles = append(titles, title+strings.Repeat(" ", max(0, span-utf8.RuneCountInString(title))))
		col += g.Span
	}
	return titles
}
