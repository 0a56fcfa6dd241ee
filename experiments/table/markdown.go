package table

import "strings"

// Markdown is t as a Markdown table. esc makes a heading or a cell's text Markdown
// (nil: the texts are Markdown already). Markdown has one header row: each heading is
// prefixed with its group's label (the group title up to a ":"), and the groups after
// the first are listed under the table, their titles separated by "; ".
func (t Table) Markdown(esc func(string) string) string {
	if esc == nil {
		esc = func(s string) string { return s }
	}
	var b strings.Builder
	head := make([]string, len(t.Head))
	copy(head, t.Head)
	col := 0
	for _, g := range t.Groups {
		if g.Title != "" {
			lbl := strings.SplitN(g.Title, ":", 2)[0]
			for i := col; i < col+g.Span; i++ {
				head[i] = lbl + " " + head[i]
			}
		}
		col += g.Span
	}
	cells := func(cs []string) string {
		for i := range cs {
			cs[i] = esc(cs[i])
		}
		return "| " + strings.Join(cs, " | ") + " |\n"
	}
	b.WriteString(cells(head))
	b.WriteString("| " + strings.Join(t.rules(), " | ") + " |\n")
	for _, r := range t.Rows {
		cs := make([]string, len(r))
		for i, c := range r {
			cs[i] = c.Text
		}
		b.WriteString(cells(cs))
	}
	if len(t.Groups) > 1 {
		var gs []string
		for _, g := range t.Groups[1:] {
			gs = append(gs, esc(g.Title))
		}
		b.WriteString("\n" + strings.Join(gs, "; ") + "\n")
	}
	return b.String()
}

// rules are the Markdown rules under the head (MarkdownRules).
func (t Table) rules() []string {
	if t.MarkdownRules != nil {
		return t.MarkdownRules
	}
	rules := make([]string, len(t.Head))
	for i := range rules {
		rules[i] = "---"
		if len(t.Rows) > 0 && i < len(t.Rows[0]) && t.Rows[0][i].Right {
			rules[i] = "--:"
		}
	}
	return rules
}
