package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/clientview"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/experiments/table"
)

// The data-plane section: every probe of each step, as analysis.Probes counts them
// (Figures.Probes). The table is built once here for text, Markdown and HTML, the two-run
// report and the matrix alike; only HTML adds a column, the error window drawn on the
// step's time axis.

// probeColumns are the per-run columns of the data-plane table; probeLegend explains them.
var probeColumns = []string{"probes", "sent as", "ok", "failed", "failures", "err-first", "err-last", "err-ms", "backends", "answered by"}

// probeTips are the data-plane table's hover texts.
var probeTips = map[string]string{
	"probes":      "data-plane probes sent in the step (a sampled success counts as the probes it stands for)",
	"sent as":     "r = expectation requests (sent until answered), w = traffic-window probes, o = probes sent while the control plane was down",
	"ok":          "2xx answers",
	"failed":      "every other answer, expected or not",
	"failures":    "failures by status and Envoy response flags (0 no-response: nothing answered)",
	"err-first":   "ms from the step's start to the first failure",
	"err-last":    "ms from the step's start to the last failure",
	"err-ms":      "the error window: err-last minus err-first",
	"backends":    "which backend answered the 2xx probes",
	"answered by": "the real client (envoy, grpc), or SIMULATED when the simulated client computed the answers",
}

const probeLegend = "every data-plane probe of the step, weighted: probes = how many were sent (a sampled " +
	"success counts as the probes it stands for); sent as = r expectation requests (sent until answered), " +
	"w traffic-window probes (every few ms for the whole step), o probes sent while the control plane was down; " +
	"ok = 2xx answers; failed = the rest, expected or not (the step table's data plane says whether the " +
	"step's expectation was met); failures = by status and Envoy response flags (0 no-response = nothing " +
	"answered); err-first, err-last = ms from the step's start to the first and the last failure, err-ms = the " +
	"error window between them; backends = which backend answered the 2xx probes; answered by = the real client (envoy, grpc), or " +
	"SIMULATED when the simulated client computed the answers (no proxy involved)"

// probeNone is what every format says when no compared step has a probe.
const probeNone = "none: no data-plane probe recorded in the compared steps"

// maxCellKeys is how many failure kinds or backends a cell lists before "+N more".
const maxCellKeys = 4

// probesTable is the data-plane table: a row per step, a column group per run titled by
// titles. bars adds the HTML column that draws each error window.
func probesTable(titles []string, rows []stepFigures, bars bool) table.Table {
	cols := probeColumns
	if bars {
		cols = slices.Insert(slices.Clone(cols), slices.Index(cols, "err-ms")+1, "window")
	}
	t := perRunTable(titles, rows, cols, func(f compare.Figures) []table.Cell { return probeCells(f.Probes, bars) })
	t.Tips = probeTips
	return t
}

// perRunTable is a table with a row per step and a group of cols per run, titled by titles;
// cells gives one run's cells of a step.
func perRunTable(titles []string, rows []stepFigures, cols []string, cells func(compare.Figures) []table.Cell) table.Table {
	t := table.Table{Groups: []table.Group{{Span: 1}}, Head: []string{"step"}}
	for _, title := range titles {
		t.Groups = append(t.Groups, table.Group{Title: title, Span: len(cols)})
		t.Head = append(t.Head, cols...)
	}
	for _, row := range rows {
		r := []table.Cell{{Text: words.Step(row.step)}}
		for _, f := range row.runs {
			r = append(r, cells(f)...)
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// anyProbes reports whether a step of rows has a probe in any run.
func anyProbes(rows []stepFigures) bool {
	return anyFigures(rows, func(f compare.Figures) bool { return f.Probes != nil })
}

// anyFigures reports whether some run's figures of some step of rows satisfy has.
func anyFigures(rows []stepFigures, has func(compare.Figures) bool) bool {
	return slices.ContainsFunc(rows, func(r stepFigures) bool { return slices.ContainsFunc(r.runs, has) })
}

func probeCells(p *analysis.Probes, bars bool) []table.Cell {
	n := len(probeColumns)
	if bars {
		n++
	}
	if p == nil {
		return dashCells(n)
	}
	num, ms := numCell, msCell
	failed, failures := num(p.Failed), table.Cell{Text: "-"}
	if p.Failed > 0 {
		failed.Class = "bad"
		failures = table.Cell{Text: countList(p.Failures, false), Class: "bad dp"}
	}
	by := table.Cell{Text: realClients(p)}
	if p.Simulated {
		by = table.Cell{Text: "SIMULATED", Class: "sim"}
	}
	out := []table.Cell{num(p.Probes), {Text: kindsText(p.Kinds)}, num(p.OK), failed, failures,
		ms(p.FirstFailureMS), ms(p.LastFailureMS), ms(p.ErrorWindowMS)}
	if bars {
		out = append(out, barCell(p))
	}
	return append(out, table.Cell{Text: countList(p.Backends, true), Class: "dp"}, by)
}

// dashCells is n cells of "-": a run without the step's figures.
func dashCells(n int) []table.Cell {
	out := make([]table.Cell, n)
	for i := range out {
		out[i] = table.Cell{Text: "-"}
	}
	return out
}

// numCell is a right-aligned count; msCell a right-aligned ms figure, "-" when absent.
func numCell(v int) table.Cell { return table.Cell{Text: fmt.Sprint(v), Right: true} }

func msCell(v *float64) table.Cell {
	if v == nil {
		return table.Cell{Text: "-", Right: true}
	}
	return table.Cell{Text: fmt.Sprintf("%.1f", *v), Right: true}
}

// kindsText is "r1 w206 o0"-style, kinds without probes left out.
func kindsText(k analysis.ProbeKinds) string {
	var parts []string
	for _, x := range []struct {
		abbr string
		n    int
	}{{"r", k.Request}, {"w", k.Window}, {"o", k.Outage}, {"?", k.Other}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%s%d", x.abbr, x.n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// countList is "503 NC ×5, 0 no-response ×1": most first (byName: in name order, for
// backends, whose names order themselves: v1, v2), at most maxCellKeys, then "+N more".
func countList(m map[string]int, byName bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if !byName {
			if c := cmp.Compare(m[b], m[a]); c != 0 {
				return c
			}
		}
		return strings.Compare(a, b)
	})
	if len(keys) == 0 {
		return "-"
	}
	var parts []string
	for i, k := range keys {
		if i == maxCellKeys {
			parts = append(parts, fmt.Sprintf("+%d more", len(keys)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", words.Clip(words.Sanitize(k), 40), m[k]))
	}
	return strings.Join(parts, ", ")
}

// barWidth is the HTML bar's width in CSS pixels.
const barWidth = 120

// barCell draws the step's axis, from its start to its latest event, and the failures'
// window on it, at least a pixel wide so that a single failure shows.
func barCell(p *analysis.Probes) table.Cell {
	b := &table.Bar{W: barWidth, Label: fmt.Sprintf("no failure in %.1f ms", p.StepMS)}
	if p.FirstFailureMS != nil {
		first, last := *p.FirstFailureMS, *p.LastFailureMS
		axis := max(p.StepMS, last)
		x0, x1 := 0.0, float64(barWidth)
		if axis > 0 {
			x0 = min(max(first/axis, 0), 1) * barWidth
			x1 = min(max(last/axis, 0), 1) * barWidth
		}
		w := max(x1-x0, 1)
		x0 = min(x0, barWidth-w)
		b.X, b.FW = fmt.Sprintf("%.1f", x0), fmt.Sprintf("%.1f", w)
		b.Label = fmt.Sprintf("failures from %.1f to %.1f ms of a %.1f ms step", first, last, axis)
	}
	return table.Cell{Bar: b, Title: b.Label}
}

// writeTextProbes is the text section's body: the table and its legend, or probeNone.
func writeTextProbes(b *strings.Builder, titles []string, rows []stepFigures, width int) {
	pw := proseWidth(width)
	if !anyProbes(rows) {
		b.WriteString("  " + probeNone + "\n")
		return
	}
	b.WriteString(probesTable(titles, rows, false).Text(width))
	b.WriteString(wrap(probeLegend, pw, "  ", "  "))
}

// writeMDProbes is the Markdown section's body, like writeTextProbes.
func writeMDProbes(b *strings.Builder, titles []string, rows []stepFigures) {
	if !anyProbes(rows) {
		b.WriteString(mdEscape(upperFirst(probeNone)) + ".\n")
		return
	}
	b.WriteString(probesTable(titles, rows, false).Markdown(mdCell))
	b.WriteString("\n" + mdEscape(probeLegend) + "\n")
}

// htmlProbes is the HTML section's table (nil when no step has a probe).
func htmlProbes(titles []string, rows []stepFigures) *table.Table {
	if !anyProbes(rows) {
		return nil
	}
	t := probesTable(titles, rows, true)
	return &t
}

// anySimulatedProbes reports whether a step of rows has a probe labelled SIMULATED.
func anySimulatedProbes(rows []stepFigures) bool {
	return slices.ContainsFunc(rows, func(r stepFigures) bool {
		return slices.ContainsFunc(r.runs, func(f compare.Figures) bool { return f.Probes != nil && f.Probes.Simulated })
	})
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// realClients names the real clients that answered p's probes ("envoy", "grpc"), "envoy"
// when none is named (a run before the grpc client).
func realClients(p *analysis.Probes) string {
	var names []string
	for c := range p.Clients {
		if compare.RealClient(c) {
			names = append(names, c)
		}
	}
	if len(names) == 0 {
		return clientview.ClientEnvoy
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
