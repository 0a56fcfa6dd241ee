package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/experiments/table"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// The traffic section: each step's steady load (lab run --load), as analysis.Traffic has
// it (Figures.Traffic). Like the data-plane section, the table is built once here for
// text, Markdown and HTML, the two-run report and the matrix alike; the timelines below
// it are sparklines in text and Markdown and an SVG per step and run in HTML
// (timeline.go). A comparison of runs without a traffic event has no such section.

// trafficColumns are the per-run columns of the traffic table; trafficLegend explains
// them. trafficLogColumn is added when a step's answers disagree with the backends' logs.
var trafficColumns = []string{"requests", "rate/s", "ok", "backends", "failures", "p50", "p99", "max",
	"move", "old-first", "old-last", "old-answered", "all-new", "old-after"}

const trafficLogColumn = "backend logs"

var trafficLegend = fmt.Sprintf("the steady load of lab run --load, counted from every response to a request "+
	"sent in the step: requests = how many (with overflow = past the generator's bound, counted without an "+
	"answer); rate/s = achieved/asked requests per second, ⚠ behind when under %.0f%% of asked over a second or more; ok = 2xx "+
	"answers; backends = which backend answered them (the body; ? = none named); failures = by status and "+
	"Envoy response flags (0 timeout, 0 refused, 0 no-response: nothing answered); p50, p99, max = latency "+
	"in ms; move = the backend the load moved from and to in the step; old-first, old-last = ms from the "+
	"step's publish to the first and the last answer of the old backend to a request sent after it; old-answered = ms from the publish to the arrival of the old backend's last answer, requests sent before the publish included (requests already routed finish on the old endpoint); all-new = ms from the publish to "+
	"the first request after which every answer came from the new backend (never: it did not get there); "+
	"old-after = the old backend's answers to requests sent after the publish", xdslog.BehindShare*100)

const trafficLogLegend = "; backend logs = answers the backends' own request logs do not confirm: " +
	"unlogged (no line with the request's ID) and misattributed (another backend's line)"

// trafficTable is the traffic table: a row per step, a column group per run titled by
// titles, and the legend that explains its columns.
func trafficTable(titles []string, rows []stepFigures) (table.Table, string) {
	cols, legend := trafficColumns, trafficLegend
	logs := anyFigures(rows, func(f compare.Figures) bool {
		return f.Traffic != nil && f.Traffic.Unlogged+f.Traffic.Misattributed != 0
	})
	if logs {
		cols, legend = append(slices.Clone(cols), trafficLogColumn), legend+trafficLogLegend
	}
	return perRunTable(titles, rows, cols, func(f compare.Figures) []table.Cell { return trafficCells(f.Traffic, logs) }), legend
}

// anyTraffic reports whether a step of rows has a traffic event in any run.
func anyTraffic(rows []stepFigures) bool {
	return anyFigures(rows, func(f compare.Figures) bool { return f.Traffic != nil })
}

func trafficCells(t *analysis.Traffic, logs bool) []table.Cell {
	n := len(trafficColumns)
	if logs {
		n++
	}
	if t == nil {
		return dashCells(n)
	}
	num, ms := numCell, msCell
	requests := num(t.Requests)
	if t.Overflow != 0 {
		requests.Text += fmt.Sprintf(" (%d overflow)", t.Overflow)
	}
	rate := table.Cell{Text: fmt.Sprintf("%.0f/%.0f", t.AchievedRate, t.AskedRate), Right: true,
		Title: fmt.Sprintf("%.1f of %.1f requests/s asked", t.AchievedRate, t.AskedRate)}
	if t.Behind {
		rate.Text += " ⚠ behind"
		rate.Class = "warn"
	}
	failures := table.Cell{Text: "-"}
	if len(t.Failures) > 0 {
		failures = table.Cell{Text: countList(t.Failures, false), Class: "bad dp"}
	}
	out := []table.Cell{requests, rate, num(t.OK), {Text: countList(t.ByBackend, true), Class: "dp"}, failures,
		ms(&t.P50MS), ms(&t.P99MS), ms(&t.MaxMS)}
	if mv := t.Move; mv != nil {
		allNew := ms(mv.AllNewMS)
		if mv.AllNewMS == nil {
			allNew = table.Cell{Text: "never", Right: true, Class: "bad"}
		}
		out = append(out, table.Cell{Text: words.Clip(words.Sanitize(mv.From), 20) + "→" + words.Clip(words.Sanitize(mv.To), 20)},
			ms(mv.FirstOldMS), ms(mv.LastOldMS), ms(mv.LastOldAnsweredMS), allNew, num(mv.OldAfter))
	} else {
		out = append(out, table.Cell{Text: "-"}, ms(nil), ms(nil), ms(nil), ms(nil), ms(nil))
	}
	if logs {
		c := table.Cell{Text: "-"}
		if t.Unlogged+t.Misattributed != 0 {
			c = table.Cell{Text: fmt.Sprintf("%d unlogged, %d misattributed", t.Unlogged, t.Misattributed), Class: "bad dp"}
		}
		out = append(out, c)
	}
	return out
}

// timelineIndent is how much shorter than the prose a timeline's list of marks wraps:
// the text report indents it by four, and a code block's lines must not be longer.
const timelineIndent = 6

// writeTextTraffic is the text report's traffic section: the table, its legend and the
// timelines. Nothing when no step has a traffic event.
func writeTextTraffic(b *strings.Builder, titles []string, rows []stepFigures, width int) {
	pw := proseWidth(width)
	if !anyTraffic(rows) {
		return
	}
	t, legend := trafficTable(titles, rows)
	b.WriteString("\nTRAFFIC\n")
	b.WriteString(t.Text(width))
	b.WriteString(wrap(legend, pw, "  ", "  "))
	b.WriteString("\n")
	b.WriteString(wrap("timelines: "+timelineLegend, pw, "  ", "  "))
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("  " + words.Step(row.step) + "\n")
		for i, f := range row.runs {
			// The timelines are indented, and their marks' list wraps short of the prose.
			for _, l := range textTimeline(titles[i], f.Traffic, pw-timelineIndent) {
				b.WriteString(strings.TrimRight("    "+l, " ") + "\n")
			}
		}
	}
}

// writeMDTraffic is the Markdown report's traffic section, like writeTextTraffic, each
// step's timelines in a code block (the sparklines need a fixed-width font).
func writeMDTraffic(b *strings.Builder, titles []string, rows []stepFigures) {
	if !anyTraffic(rows) {
		return
	}
	t, legend := trafficTable(titles, rows)
	b.WriteString("\n## Traffic\n\n")
	b.WriteString(t.Markdown(mdCell))
	b.WriteString("\n" + mdEscape(upperFirst(legend)) + ".\n\n### Timelines\n\n" + mdEscape(upperFirst(timelineLegend)) + ".\n")
	for _, row := range rows {
		var lines []string
		for i, f := range row.runs {
			lines = append(lines, textTimeline(titles[i], f.Traffic, proseColumns-timelineIndent)...)
		}
		fmt.Fprintf(b, "\n#### %s\n\n", mdEscape(words.Step(row.step)))
		writeCodeBlock(b, lines)
	}
}

// writeCodeBlock writes lines as a fenced code block, its fence longer than any run of
// backticks in them: a backend name from the log cannot close it.
func writeCodeBlock(b *strings.Builder, lines []string) {
	longest, run := 0, 0
	for _, l := range lines {
		for _, r := range l {
			if r == '`' {
				run++
				longest = max(longest, run)
			} else {
				run = 0
			}
		}
		run = 0
	}
	fence := strings.Repeat("`", max(3, longest+1))
	b.WriteString(fence + "text\n")
	for _, l := range lines {
		b.WriteString(strings.TrimRight(l, " ") + "\n")
	}
	b.WriteString(fence + "\n")
}

// trafficView is the HTML traffic section: the table and a timeline per step and run,
// laid out in Grid (the two-run report's "pair", the matrix's "runs-grid").
type trafficView struct {
	Table          table.Table
	Legend         string
	TimelineLegend string
	Grid           string
	Steps          []trafficStep
}

type trafficStep struct {
	Step      string
	Timelines []svgTimeline
}

// htmlTraffic is the HTML traffic section (nil when no step has a traffic event).
func htmlTraffic(titles []string, rows []stepFigures, grid string) *trafficView {
	if !anyTraffic(rows) {
		return nil
	}
	t, legend := trafficTable(titles, rows)
	v := &trafficView{Table: t, Legend: upperFirst(legend) + ".", TimelineLegend: upperFirst(svgTimelineLegend) + ".", Grid: grid}
	colours := seriesColours(rows)
	for _, row := range rows {
		s := trafficStep{Step: words.Step(row.step)}
		for i, f := range row.runs {
			s.Timelines = append(s.Timelines, layoutTimeline(words.Step(row.step), titles[i], f.Traffic, colours))
		}
		v.Steps = append(v.Steps, s)
	}
	return v
}
