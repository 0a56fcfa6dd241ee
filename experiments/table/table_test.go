package table

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runsTable is two runs' column groups, as lab compare's step table has them.
var runsTable = Table{
	Groups: []Group{{Span: 1}, {Title: "A: sotw", Span: 3}, {Title: "B: delta", Span: 3}},
	Head:   []string{"step", "sent", "res", "bytes", "sent", "res", "bytes"},
	Rows:   [][]Cell{Cells("initial", "L1 R1 C1 E1", "4", "978", "L1 R1 C1 E1", "4", "1305")},
}

// TestSplit: a table wider than the width is stacked parts that each fit it and repeat
// the step column, a run's group kept whole when it fits alone, and no cell lost.
func TestSplit(t *testing.T) {
	for _, c := range []struct {
		width int
		want  []string
		why   string
	}{
		{0, []string{
			"          | A: sotw                 | B: delta",
			"  step    | sent         res  bytes | sent         res  bytes",
			"  initial | L1 R1 C1 E1  4    978   | L1 R1 C1 E1  4    1305",
		}, "width 0: never split"},
		{40, []string{
			"          | A: sotw", "  step    | sent         res  bytes", "  initial | L1 R1 C1 E1  4    978", "",
			"          | B: delta", "  step    | sent         res  bytes", "  initial | L1 R1 C1 E1  4    1305",
		}, "a group per part"},
		{28, []string{
			"          | A: sotw", "  step    | sent         res", "  initial | L1 R1 C1 E1  4", "",
			"          | A:...", "  step    | bytes", "  initial | 978", "",
			"          | B: delta", "  step    | sent         res", "  initial | L1 R1 C1 E1  4", "",
			"          | B:...", "  step    | bytes", "  initial | 1305",
		}, "narrower than a group: its columns split, its title repeated (clipped to fit) over " +
			"each part, and a group that fits alone starts a part of its own"},
	} {
		got := strings.Split(strings.TrimSuffix(runsTable.Text(c.width), "\n"), "\n")
		assert.Equal(t, c.want, got, c.why)
		for _, l := range got {
			if c.width > 0 {
				assert.LessOrEqual(t, utf8.RuneCountInString(l), c.width, l)
			}
		}
	}

	// A table that fits is left alone.
	assert.Len(t, runsTable.split(200), 1)
	// No groups (the run header): single columns are the units.
	runs := Table{Head: []string{"", "A", "B"}, Rows: [][]Cell{Cells("path", strings.Repeat("a", 30), strings.Repeat("b", 30))}}
	parts := runs.split(50)
	require.Len(t, parts, 2)
	assert.Equal(t, []string{"", "B"}, parts[1].Head)
	assert.Equal(t, "path", parts[1].Rows[0][0].Text)
}

// TestTextAlignment: a cell aligns right or left in its column, the head left unless
// RightHead, and no line ends in spaces.
func TestTextAlignment(t *testing.T) {
	tab := Table{Head: []string{"name", "count", "note"},
		Rows: [][]Cell{{{Text: "a"}, {Text: "1", Right: true}, {Text: ""}}, {{Text: "bbbbbb"}, {Text: "1234567", Right: true}, {Text: "x"}}}}
	assert.Equal(t, "  name    count    note\n  a             1\n  bbbbbb  1234567  x\n", tab.Text(0))
	tab.RightHead = true
	assert.Equal(t, "    name    count  note\n  a             1\n  bbbbbb  1234567  x\n", tab.Text(0))
}

// TestMarkdown: groups prefix their columns' headings and are listed under the table;
// esc escapes every heading, cell and group title; a right-aligned first row's cell
// right-aligns its column unless MarkdownRules say otherwise.
func TestMarkdown(t *testing.T) {
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	assert.Equal(t, "| step | A sent | A res | A bytes | B sent | B res | B bytes |\n"+
		"| --- | --- | --- | --- | --- | --- | --- |\n"+
		"| initial | L1 R1 C1 E1 | 4 | 978 | L1 R1 C1 E1 | 4 | 1305 |\n"+
		"\nA: sotw; B: delta\n", runsTable.Markdown(esc))

	figures := Table{Head: []string{"name", "n|m"}, Rows: [][]Cell{{{Text: "a|b"}, {Text: "1", Right: true}}}}
	assert.Equal(t, "| name | n\\|m |\n| --- | --: |\n| a\\|b | 1 |\n", figures.Markdown(esc))
	assert.Equal(t, "| name | n|m |\n| --- | --: |\n| a|b | 1 |\n", figures.Markdown(nil), "nil: the texts are Markdown already")
	figures.MarkdownRules = []string{"---", "---:"}
	assert.Equal(t, "| name | n|m |\n| --- | ---: |\n| a|b | 1 |\n", figures.Markdown(nil))
}

// TestHTML: the markup of a table with groups, tips, a class, a title, a right-aligned
// cell and a bar, every text escaped.
func TestHTML(t *testing.T) {
	tab := Table{
		Groups: []Group{{Span: 1}, {Title: "A: <sotw>", Span: 2}},
		Head:   []string{"step", "ok", "window"},
		Tips:   map[string]string{"ok": `2xx "answers"`},
		Rows: [][]Cell{{{Text: "initial"}, {Text: "7", Class: "bad", Right: true},
			{Title: "failures", Bar: &Bar{W: 120, X: "1.0", FW: "2.5", Label: "from 1 to 2 ms"}}}},
	}
	got, err := tab.HTML()
	require.NoError(t, err)
	assert.Equal(t, `<div class="scroll"><table>
<colgroup span="1"></colgroup><colgroup span="2"></colgroup>
<tr><th class="group" colspan="1"></th><th class="group" colspan="2">A: &lt;sotw&gt;</th></tr>
<tr><th>step</th><th title="2xx &#34;answers&#34;">ok</th><th>window</th></tr>
<tr><td>initial</td><td class="bad r">7</td><td title="failures"><svg class="bar" viewBox="0 0 120 10" width="120" height="10" role="img" aria-label="from 1 to 2 ms"><rect class="axis" x="0" y="3" width="120" height="4"></rect><rect class="fail" x="1.0" y="0" width="2.5" height="10"></rect></svg></td></tr>
</table></div>`, string(got))
}

// TestTextIsTabwriters: without groups, Text lays a table out as lab bench, lab sweep
// and lab serve's status did with text/tabwriter (two spaces of padding; figures
// AlignRight with every cell tab-terminated, names left-aligned with the last column
// trailing and each line trimmed), for cells without tabs or newlines, empty ones too,
// but for two: a line of empty cells (tabwriter's is empty, this one the indent) and
// figures with an empty last cell (tabwriter's line ends in spaces, this one trimmed).
func TestTextIsTabwriters(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		const letters = "ab×–→ 1.9"
		r := []rune(letters)
		n := rng.IntN(12)
		if n == 0 {
			return ""
		}
		out := make([]rune, n)
		for i := range out {
			out[i] = r[rng.IntN(len(r))]
		}
		return strings.TrimSpace(string(out)) + "x"
	}
	for i := 0; i < 200; i++ {
		cols, rows := 1+rng.IntN(6), rng.IntN(5)
		head := make([]string, cols)
		for j := range head {
			head[j] = word()
		}
		texts := make([][]string, rows)
		for r := range texts {
			texts[r] = make([]string, cols)
			for j := range texts[r] {
				texts[r][j] = word()
			}
		}
		for _, r := range append([][]string{head}, texts...) {
			r[0] += "x" // a row of empty cells keeps its indent here, not in tabwriter's
		}
		lastFigure := func(r []string) []string {
			out := append([]string(nil), r...)
			if out[len(out)-1] == "" {
				out[len(out)-1] = "-"
			}
			return out
		}

		// Figures: AlignRight, every cell tab-terminated.
		var want strings.Builder
		tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(lastFigure(head), "\t")+"\t")
		figures := Table{Head: lastFigure(head), RightHead: true}
		for _, r := range texts {
			fmt.Fprintln(tw, strings.Join(lastFigure(r), "\t")+"\t")
			figures.Rows = append(figures.Rows, RightCells(lastFigure(r)...))
		}
		require.NoError(t, tw.Flush())
		require.Equal(t, want.String(), figures.Text(0), "figures %d", i)

		// Names: left-aligned, the last column trailing, each line trimmed, the
		// indent part of the first cell.
		want.Reset()
		var raw strings.Builder
		tw = tabwriter.NewWriter(&raw, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  "+strings.Join(head, "\t"))
		names := Table{Head: head}
		for _, r := range texts {
			fmt.Fprintln(tw, "  "+strings.Join(r, "\t"))
			names.Rows = append(names.Rows, Cells(r...))
		}
		require.NoError(t, tw.Flush())
		for _, l := range strings.Split(strings.TrimSuffix(raw.String(), "\n"), "\n") {
			want.WriteString(strings.TrimRight(l, " ") + "\n")
		}
		require.Equal(t, want.String(), names.Text(0), "names %d", i)
	}
}
