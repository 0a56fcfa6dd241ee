package render

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/experiments/table"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Formats accepted by Report and Matrix.
var Formats = []string{"text", "markdown", "json", "html"}

// DiagramCap is how many messages a rendered diagram shows before summarizing the rest
// (a NACK storm can be thousands of messages). The Diagram structure keeps them all.
const DiagramCap = 50

// Report writes the report in format (text, markdown, json or html). width bounds the
// text tables: one wider is split into stacked tables (0: never split); the other
// formats have no width.
func Report(w io.Writer, rep *compare.Report, format string, width int) error {
	var err error
	switch format {
	case "text", "":
		err = renderText(w, rep, width)
	case "markdown":
		err = renderMarkdown(w, rep)
	case "json":
		err = writeJSON(w, rep)
	case "html":
		err = renderHTML(w, rep)
	default:
		return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return fmt.Errorf("render %s: %w", format, err)
	}
	return nil
}

// writeJSON writes a report or a matrix as the json format has it: indented, its field
// names the stable interface their types document.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// headerTable lists each run's origin and options.
func headerTable(rep *compare.Report) table.Table { return runsTable(rep.Runs[:], []string{"A", "B"}) }

// runsTable lists each run's origin and options, a column per run headed by labels.
func runsTable(runs []compare.RunHeader, labels []string) table.Table {
	t := table.Table{Head: append([]string{""}, labels...)}
	row := func(name string, f func(h compare.RunHeader) string) {
		r := []table.Cell{{Text: name}}
		for _, h := range runs {
			r = append(r, table.Cell{Text: words.Sanitize(f(h))})
		}
		t.Rows = append(t.Rows, r)
	}
	opt := func(h compare.RunHeader, v string, sotwOnly bool) string {
		switch {
		case sotwOnly && h.Mode != protocol.SotW:
			return "n/a"
		case !h.OptionsKnown:
			return "unknown"
		case v == "":
			return "-"
		}
		return v
	}
	row("path", func(h compare.RunHeader) string { return words.OrDash(h.Path) })
	row("mode", func(h compare.RunHeader) string { return h.Mode.String() })
	row("options", func(h compare.RunHeader) string {
		if h.OptionsKnown {
			return "from run.json"
		}
		return "options unknown (no run.json; mode from xds.log)"
	})
	row("client", func(h compare.RunHeader) string { return opt(h, h.Client, false) })
	row("--sotw-versions", func(h compare.RunHeader) string { return opt(h, h.SotwVersions, true) })
	row("--nack-policy", func(h compare.RunHeader) string { return opt(h, h.NackPolicy, true) })
	// Runs older than --cache have no cache in run.json (they used the snapshot cache);
	// the row appears once a run says which.
	if slices.ContainsFunc(runs, func(h compare.RunHeader) bool { return h.Cache != "" }) {
		row("--cache", func(h compare.RunHeader) string {
			if h.OptionsKnown && h.Cache == "" {
				return "snapshot"
			}
			return opt(h, h.Cache, false)
		})
	}
	row("Envoy version", func(h compare.RunHeader) string { return opt(h, h.EnvoyVersion, false) })
	row("envoy.result", func(h compare.RunHeader) string {
		if h.EnvoyResult == "" {
			return "not recorded"
		}
		return h.EnvoyResult
	})
	row("started", func(h compare.RunHeader) string { return opt(h, h.Started, false) })
	row("events", func(h compare.RunHeader) string {
		s := fmt.Sprint(h.Events)
		if h.SkippedLines > 0 {
			s += fmt.Sprintf(" (%s skipped; first %s)", words.Count(h.SkippedLines, "unreadable line"), words.Clip(h.FirstSkip, 80))
		}
		return s
	})
	row("steps only in this run", func(h compare.RunHeader) string { return words.ListOrNone(words.Steps(h.OnlyHere)) })
	return t
}

// stepColumns are the per-run columns of the step table, in plain words; stepTips says
// what each counts (the HTML's hover text), and the legend says it all once.
var stepColumns = []string{"responses", "resources", "unchanged", "removed", "absent", "ack", "nack", "re-rejected", "bytes",
	"to ACK ms", "to OK ms", "data plane"}

var stepTips = map[string]string{
	"responses":   "responses per type: L=LDS R=RDS C=CDS E=EDS",
	"resources":   "resources sent",
	"unchanged":   "resources sent that the client already ran with exactly this content (redundant)",
	"removed":     "names removed explicitly, in delta removed_resources",
	"absent":      "names removed by absence: a SotW LDS/CDS response without a name the previous one had",
	"ack":         "ACKs from the client",
	"nack":        "NACKs from the client",
	"re-rejected": "re-sends of content the client had already rejected",
	"bytes":       "proto.Size of each response, without gRPC's message prefix or HTTP/2 framing",
	"to ACK ms":   "ms from the step's publish to each ACK, median",
	"to OK ms":    "ms from the step's publish to the first correct data-plane request",
	"data plane":  "the step's last data-plane request: status and backend (SIMULATED: the simulated client computed it)",
}

const stepLegend = "responses = responses per type (L=LDS R=RDS C=CDS E=EDS); resources = resources sent; " +
	"unchanged = redundant resources: the client already ran exactly this content (what it ACKed on that stream, " +
	"what a delta client declared in initial_resource_versions, or what a SotW resume label maps to when the server " +
	"knows; not counted when unknown); removed = removed explicitly (removed_resources); " +
	"absent = removed by absence (a SotW LDS/CDS response without a name the previous one had); ack, nack = client answers; " +
	"re-rejected = re-sends of already rejected content; bytes = proto.Size of each response (the serialized " +
	"DiscoveryResponse or DeltaDiscoveryResponse, without gRPC's 5-byte message prefix or HTTP/2 framing); " +
	"to ACK ms = publish to ACK, median; to OK ms = publish to first correct data-plane request; " +
	"data plane = last request of the step (SIMULATED = answered by the simulated client, no proxy involved)"

// labelLegend explains the abbreviations of the diagram labels; every format shows it
// near the top, since findings and the headline use them too.
const labelLegend = "In the diagrams, n= is a nonce: which response a message belongs to (nonces count per stream " +
	"and start again on every stream; an ACK or NACK names the nonce it answers). v= is a version: on a send the SotW " +
	"version_info or the delta system_version_info, on an ACK or NACK the version that was sent, keeps v= the version " +
	"the client still runs, resume v= the version_info a SotW client reconnects with. Requests say what they did: " +
	"wildcard, initial, resume, subscribe +added -removed, unsubscribe, re-request; stale n= is a request the server " +
	"dropped because it had sent a newer response. A send that removes names says so (removed [...], or removes [...] " +
	"by absence)."

func stepTable(rep *compare.Report) table.Table {
	return figuresTable(runTitles(rep.Runs[:]), reportStepRows(rep), rep.Total[:])
}

// stepFigures is one step's figures, a value per run.
type stepFigures struct {
	step string
	runs []compare.Figures
}

// reportStepRows are the two-run report's steps, for the step, data-plane and traffic
// tables.
func reportStepRows(rep *compare.Report) []stepFigures {
	rows := make([]stepFigures, len(rep.Rows))
	for i, r := range rep.Rows {
		rows[i] = stepFigures{r.Step, r.Runs[:]}
	}
	return rows
}

// matrixStepRows are the matrix's steps, for the step, data-plane and traffic tables.
func matrixStepRows(m matrix) []stepFigures {
	rows := make([]stepFigures, len(m.Rows))
	for i, r := range m.Rows {
		rows[i] = stepFigures{r.Step, r.Runs}
	}
	return rows
}

// figuresTable is the step table: a row per step and a total, a column group per run
// titled by titles.
func figuresTable(titles []string, rows []stepFigures, total []compare.Figures) table.Table {
	t := table.Table{Groups: []table.Group{{Span: 1}}, Head: []string{"step"}, Tips: stepTips}
	for _, title := range titles {
		t.Groups = append(t.Groups, table.Group{Title: title, Span: len(stepColumns)})
		t.Head = append(t.Head, stepColumns...)
	}
	add := func(name string, f []compare.Figures) {
		r := []table.Cell{{Text: name}}
		for _, x := range f {
			r = append(r, figureCells(x)...)
		}
		t.Rows = append(t.Rows, r)
	}
	for _, row := range rows {
		add(words.Step(row.step), row.runs)
	}
	add("total", total)
	return t
}

// stepLegendOf is stepLegend, with V=VHDS when a step of rows sent virtual hosts.
func stepLegendOf(rows []stepFigures) string {
	if !anyFigures(rows, func(f compare.Figures) bool { return f.Responses["VHDS"] > 0 }) {
		return stepLegend
	}
	return strings.Replace(stepLegend, "E=EDS)", "E=EDS V=VHDS)", 1)
}

// runLabels are the runs' labels ("A", "B").
func runLabels(runs []compare.RunHeader) []string {
	out := make([]string, len(runs))
	for i, h := range runs {
		out[i] = h.Label
	}
	return out
}

func runTitles(runs []compare.RunHeader) []string {
	out := make([]string, len(runs))
	for i, h := range runs {
		out[i] = runTitle(h)
	}
	return out
}

func figureCells(f compare.Figures) []table.Cell {
	num := func(n int) table.Cell { return table.Cell{Text: fmt.Sprint(n), Right: true} }
	msCell := func(p *float64) table.Cell {
		if p == nil {
			return table.Cell{Text: "-", Right: true}
		}
		return table.Cell{Text: fmt.Sprintf("%.1f", *p), Right: true}
	}
	nack := num(f.Nacks)
	if f.Nacks > 0 {
		nack.Class = "bad"
	}
	rrej := num(f.RejectedResends)
	if f.RejectedResends > 0 {
		rrej.Class = "bad"
	}
	unch := num(f.Redundant)
	if f.Redundant > 0 {
		unch.Class = "warn"
	}
	dp := table.Cell{Text: "-", Class: "dp"}
	if f.DataPlane != nil {
		dp = table.Cell{Text: words.Sanitize(f.DataPlane.Text), Title: "request " + words.Sanitize(f.DataPlane.RequestID), Class: "dp"}
		switch {
		case f.DataPlane.Simulated:
			dp.Class += " sim"
		case !f.DataPlane.Correct:
			dp.Class += " bad"
		}
	}
	return []table.Cell{{Text: sentCell(f.Responses)}, num(f.Resources), unch, num(f.RemovedExplicit), num(f.RemovedByAbsence),
		num(f.Acks), nack, rrej, num(f.Bytes), msCell(f.PublishToAckMS), msCell(f.PublishToCorrectMS), dp}
}

// sentCell is "L1 R1 C1 E1": responses per type, types that sent nothing left out.
func sentCell(m map[string]int) string {
	var parts []string
	for _, t := range xdslog.Types {
		if n := m[t]; n > 0 {
			parts = append(parts, fmt.Sprintf("%c%d", t[0], n))
		}
	}
	for _, t := range words.SortedKeys(m) {
		if !slices.Contains(xdslog.Types, t) && m[t] > 0 {
			parts = append(parts, fmt.Sprintf("%s%d", words.Sanitize(t), m[t]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// versionTable shows the tracked resources' versions at each checkpoint; "*" marks a
// version that moved since the run's previous checkpoint.
func versionTable(rep *compare.Report) table.Table {
	return versionsTable(runTitles(rep.Runs[:]), reportVersions(rep))
}

func reportVersions(rep *compare.Report) []stepVersions {
	cps := make([]stepVersions, len(rep.Versions))
	for i, cp := range rep.Versions {
		cps[i] = stepVersions{cp.Step, cp.Runs[:]}
	}
	return cps
}

// reportVersionNote is the two-run report's versions legend.
func reportVersionNote(rep *compare.Report) string {
	return versionNote(runLabels(rep.Runs[:]), reportVersions(rep))
}

// stepVersions is one checkpoint's versions, a set per run.
type stepVersions struct {
	step string
	runs []compare.VersionSet
}

// versionsTable is the checkpoint table, a column group per run titled by titles, a
// column per resource the runs name (versionColumns: whole types folded into one when
// they are many); with client views (hasViews), each group ends with the "own view" column.
func versionsTable(titles []string, cps []stepVersions) table.Table {
	views := hasViews(cps)
	cols := versionColumns(firstResources(cps))
	t := table.Table{Groups: []table.Group{{Span: 1}}, Head: []string{"end of step"}}
	for _, title := range titles {
		span := len(cols) + 1
		for _, c := range cols {
			t.Head = append(t.Head, c.head)
		}
		t.Head = append(t.Head, "moved")
		if views {
			t.Head = append(t.Head, "own view")
			span++
		}
		t.Groups = append(t.Groups, table.Group{Title: title, Span: span})
	}
	for _, cp := range cps {
		r := []table.Cell{{Text: words.Step(cp.step)}}
		for _, vs := range cp.runs {
			for _, c := range cols {
				r = append(r, versionCell(vs, c))
			}
			r = append(r, table.Cell{Text: fmt.Sprintf("%d/%d", vs.Moved, len(vs.Resources)), Right: true})
			if views {
				r = append(r, viewCell(vs.ClientView))
			}
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// firstResources is the resources of the checkpoints' first version set (every set of a
// report or a matrix lists the same), nil when there is none.
func firstResources(cps []stepVersions) []compare.ResourceVersion {
	for _, cp := range cps {
		if len(cp.runs) > 0 {
			return cp.runs[0].Resources
		}
	}
	return nil
}

func hasViews(cps []stepVersions) bool {
	for _, cp := range cps {
		for _, vs := range cp.runs {
			if vs.ClientView != nil {
				return true
			}
		}
	}
	return false
}

// viewCell says how a checkpoint's client-view check came out: "agrees", "N findings"
// (the findings in its title), "not checked", or "-" without one.
func viewCell(v *analysis.ClientView) table.Cell {
	switch {
	case v == nil:
		return table.Cell{Text: "-"}
	case v.Error != "":
		return table.Cell{Text: "not checked", Title: words.Sanitize(v.Error)}
	case len(v.Findings) == 0:
		return table.Cell{Text: "agrees", Title: fmt.Sprintf("%d resources", v.Checked)}
	}
	return table.Cell{Text: words.Count(len(v.Findings), "finding"), Class: "moved", Title: words.Sanitize(strings.Join(v.Findings, "; "))}
}

// maxNoteFindings bounds the client-view findings a legend lists.
const maxNoteFindings = 8

// versionNote is the versions legend; with client views it says what the "own view"
// column is and lists the findings, each with its run and step.
func versionNote(labels []string, cps []stepVersions) string {
	legend := versionLegend
	if folds(versionColumns(firstResources(cps))) {
		legend += "; " + foldLegend
	}
	if !hasViews(cps) {
		return legend
	}
	var lines []string
	total := 0
	for _, cp := range cps {
		for i, vs := range cp.runs {
			if vs.ClientView == nil || i >= len(labels) {
				continue
			}
			for _, f := range vs.ClientView.Findings {
				total++
				if len(lines) < maxNoteFindings {
					lines = append(lines, fmt.Sprintf("%s %s: %s", labels[i], words.Step(cp.step), words.Clip(f, 240)))
				}
			}
		}
	}
	note := legend + "; " + viewLegend
	if total == 0 {
		return note + ". Every client view agrees."
	}
	note += ". Findings: " + strings.Join(lines, " | ")
	if total > len(lines) {
		note += fmt.Sprintf(" | and %d more (each checkpoint's client_view lists them)", total-len(lines))
	}
	return words.Sanitize(note)
}

const viewLegend = "own view = the client's own view of what it holds (Envoy's /config_dump, grpc-go's CSDS) " +
	"checked against xds.log's model of its stream at the checkpoint (experiments/clientview): agrees, or the " +
	"number of findings, where the two disagree"

const versionLegend = "the version the client ran at the end of each step, from the ACKs in xds.log " +
	"(SotW: version_info; delta: the resource's content hash, first 8 of 64 hex); " +
	"* = moved since the previous step; - = none"

func runTitle(h compare.RunHeader) string {
	s := h.Label + ": " + h.Mode.String()
	var opts []string
	if h.Mode == protocol.SotW && h.SotwVersions != "" {
		opts = append(opts, h.SotwVersions)
	}
	if h.Mode == protocol.SotW && h.NackPolicy != "" {
		opts = append(opts, "nack "+h.NackPolicy)
	}
	if h.Cache == "linear" || h.Cache == "indexed" {
		opts = append(opts, h.Cache+" cache")
	}
	if h.Client != "" {
		opts = append(opts, h.Client)
	}
	if len(opts) > 0 {
		s += " (" + strings.Join(opts, ", ") + ")"
	}
	return words.Sanitize(s)
}

// ---- text ----

func renderText(w io.Writer, rep *compare.Report, width int) error {
	var b strings.Builder
	pw := proseWidth(width)
	fmt.Fprintf(&b, "lab compare: A %s vs B %s\n\n", rep.Runs[0].Mode, rep.Runs[1].Mode)
	writeTextAnswer(&b, reportAnswer(rep), pw)
	b.WriteString(wrap(words.Sanitize(rep.Headline.Text), pw, "", ""))
	b.WriteString("\n")
	b.WriteString(wrap(labelLegend, pw, "", ""))
	b.WriteString("\n")
	b.WriteString(headerTable(rep).Text(width))
	b.WriteString("\n" + wrap("compared steps: "+words.ListOrNone(words.Steps(rep.SharedSteps)), pw, "", "  "))
	if rep.Step != "" {
		fmt.Fprintf(&b, "selected step: %s\n", rep.Step)
	}
	b.WriteString("\nSTEPS\n")
	b.WriteString(stepTable(rep).Text(width))
	b.WriteString(wrap(stepLegendOf(reportStepRows(rep)), pw, "  ", "  "))
	b.WriteString("\nDATA PLANE\n")
	writeTextProbes(&b, runTitles(rep.Runs[:]), reportStepRows(rep), width)
	writeTextTraffic(&b, runTitles(rep.Runs[:]), reportStepRows(rep), width)
	writeTextOnDemand(&b, runLabels(rep.Runs[:]), reportStepRows(rep), width)
	b.WriteString("\nVERSIONS\n")
	b.WriteString(versionTable(rep).Text(width))
	b.WriteString(wrap(reportVersionNote(rep), pw, "  ", "  "))
	b.WriteString("\nFINDINGS\n")
	if len(rep.Findings) == 0 {
		b.WriteString("  none: the figures show no difference worth stating\n")
	}
	for i, f := range rep.Findings {
		writeTextFinding(&b, i, f, pw)
	}
	writeTextClients(&b, rep.Clients, pw)
	if rep.Step != "" {
		fmt.Fprintf(&b, "\nSEQUENCE %s\n", rep.Step)
		writeTextDiagrams(&b, rep.Diagrams, width)
	} else {
		b.WriteString("\n" + wrap(diagramsHint, pw, "", "  "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// diagramsHint ends a text report without --step: how to see the diagrams.
const diagramsHint = "sequence diagrams: lab compare --step NAME (text, markdown), or --format html for every step"

// proseColumns is where the text report wraps its prose: headline, legends, findings.
const proseColumns = 100

// proseWidth is where the prose wraps for tables of width: proseColumns, or width when
// that is narrower (0: never split, so proseColumns).
func proseWidth(width int) int {
	if width > 0 && width < proseColumns {
		return width
	}
	return proseColumns
}

// writeTextFinding writes finding i of a text report, wrapped at pw: its text, numbered,
// then its attribution and source, indented under it.
func writeTextFinding(b *strings.Builder, i int, f compare.Finding, pw int) {
	b.WriteString(wrap(fmt.Sprintf("%d. %s", i+1, words.Sanitize(f.Text)), pw, "  ", "     "))
	b.WriteString(wrap(fmt.Sprintf("%s: %s", f.Attribution, words.Sanitize(cited(f))), pw, "     ", "       "))
}

// cited is the finding's source as the reports show it: for a protocol finding, followed
// by what it was observed with.
func cited(f compare.Finding) string {
	if f.ObservedWith == "" {
		return f.Source
	}
	return f.Source + " (observed with " + f.ObservedWith + ")"
}

// writeTextDiagrams prints each step's two diagrams side by side, one message per line,
// or one after the other when the two sides do not fit width (0: any width).
func writeTextDiagrams(b *strings.Builder, ds []compare.Diagram, width int) {
	if width > 0 && width < 2+2*textColumn+3 {
		writeStackedDiagrams(b, ds)
		return
	}
	for i := 0; i+1 < len(ds); i += 2 {
		left, right := textDiagram(ds[i]), textDiagram(ds[i+1])
		w := 0
		for _, l := range left {
			w = max(w, utf8.RuneCountInString(l))
		}
		for j := 0; j < max(len(left), len(right)); j++ {
			l, r := "", ""
			if j < len(left) {
				l = left[j]
			}
			if j < len(right) {
				r = right[j]
			}
			b.WriteString(strings.TrimRight("  "+l+strings.Repeat(" ", w-utf8.RuneCountInString(l))+" | "+r, " ") + "\n")
		}
	}
}

// writeStackedDiagrams prints the diagrams one after the other.
func writeStackedDiagrams(b *strings.Builder, ds []compare.Diagram) {
	for _, d := range ds {
		for _, l := range textDiagram(d) {
			b.WriteString(strings.TrimRight("  "+l, " ") + "\n")
		}
		b.WriteString("\n")
	}
}

// textColumn bounds one side of the side-by-side text diagram.
const textColumn = 72

func textDiagram(d compare.Diagram) []string {
	out := []string{
		words.Clip(fmt.Sprintf("%s %s: CP = control plane, C = %s, DP = data plane", d.Run, d.Mode, d.ClientName), textColumn),
		"",
	}
	shown, note := capMessages(d.Messages, DiagramCap)
	for _, m := range shown {
		// Long labels wrap under themselves instead of being cut: the end of a label
		// (a data-plane answer, a removal) is often what matters.
		lead := fmt.Sprintf("%9s %-6s ", fmt.Sprintf("+%.1fms", m.OffsetMS), arrow(m))
		pad := strings.Repeat(" ", utf8.RuneCountInString(lead))
		lines := strings.Split(strings.TrimSuffix(wrap(words.Sanitize(m.Label), textColumn, lead, pad), "\n"), "\n")
		out = append(out, lines...)
	}
	if len(d.Messages) == 0 {
		out = append(out, "(no message recorded)")
	}
	if note != "" {
		out = append(out, note)
	}
	return out
}

func arrow(m compare.Message) string {
	abbr := map[string]string{compare.ControlPlane: "CP", compare.Client: "C", compare.DataPlane: "DP"}
	if m.From == m.To {
		return abbr[m.From]
	}
	return abbr[m.From] + "->" + abbr[m.To]
}

// wrap folds text at width: the first line starts with first, the others with indent.
func wrap(text string, width int, first, indent string) string {
	var b strings.Builder
	line, empty := first, true
	for _, word := range strings.Fields(text) {
		if !empty && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			b.WriteString(line + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}

// ---- Markdown ----

func renderMarkdown(w io.Writer, rep *compare.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# lab compare: A %s vs B %s\n\n", rep.Runs[0].Mode, rep.Runs[1].Mode)
	writeMDAnswer(&b, reportAnswer(rep))
	b.WriteString(mdEscape(words.Sanitize(rep.Headline.Text)) + "\n\n")
	b.WriteString(mdEscape(labelLegend) + "\n\n")
	b.WriteString(headerTable(rep).Markdown(mdCell))
	fmt.Fprintf(&b, "\nCompared steps: %s.", mdEscape(words.ListOrNone(words.Steps(rep.SharedSteps))))
	if rep.Step != "" {
		fmt.Fprintf(&b, " Selected step: %s.", mdEscape(rep.Step))
	}
	b.WriteString("\n\n## Steps\n\n")
	b.WriteString(stepTable(rep).Markdown(mdCell))
	b.WriteString("\n" + mdEscape(stepLegendOf(reportStepRows(rep))) + "\n\n## Data plane\n\n")
	writeMDProbes(&b, runTitles(rep.Runs[:]), reportStepRows(rep))
	writeMDTraffic(&b, runTitles(rep.Runs[:]), reportStepRows(rep))
	writeMDOnDemand(&b, runLabels(rep.Runs[:]), reportStepRows(rep))
	b.WriteString("\n## Versions\n\n")
	b.WriteString(versionTable(rep).Markdown(mdCell))
	b.WriteString("\n" + mdEscape(reportVersionNote(rep)) + "\n\n## Findings\n\n")
	if len(rep.Findings) == 0 {
		b.WriteString("None: the figures show no difference worth stating.\n")
	}
	for i, f := range rep.Findings {
		// Backticks in findings mark resource names and stay code spans; everything else
		// is escaped. The attribution is a sub-item, indented to the item's text ("10. "
		// is 4 wide) so that Markdown nests it.
		marker := fmt.Sprintf("%d. ", i+1)
		fmt.Fprintf(&b, "%s%s\n%s- *%s*: %s\n", marker, mdEscapeKeepTicks(words.Sanitize(f.Text)),
			strings.Repeat(" ", len(marker)), mdEscape(f.Attribution), mdEscape(words.Sanitize(cited(f))))
	}
	writeMDClients(&b, rep.Clients)
	b.WriteString("\n## Sequence diagrams\n")
	for i := 0; i+1 < len(rep.Diagrams); i += 2 {
		fmt.Fprintf(&b, "\n### %s\n", mdEscape(words.Step(rep.Diagrams[i].Step)))
		for _, d := range rep.Diagrams[i : i+2] {
			fmt.Fprintf(&b, "\n#### %s %s\n\n", d.Run, d.Mode)
			writeMermaid(&b, d)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdCell makes a table's text Markdown (the esc of table.Table.Markdown): escaped, and
// a space when empty.
func mdCell(s string) string {
	if s == "" {
		return " "
	}
	return mdEscape(s)
}

var mdReplacer = strings.NewReplacer(`\`, `\\`, "|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`)

func mdEscape(s string) string { return mdReplacer.Replace(s) }

var mdTickReplacer = strings.NewReplacer(`\`, `\\`, "|", `\|`, "*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`)

func mdEscapeKeepTicks(s string) string {
	// Inside backticks Markdown takes text literally, so escape only outside them.
	parts := strings.Split(s, "`")
	if len(parts)%2 == 0 { // unbalanced: escape everything
		return mdEscape(s)
	}
	for i := range parts {
		if i%2 == 0 {
			parts[i] = mdTickReplacer.Replace(parts[i])
		}
	}
	return strings.Join(parts, "`")
}

// writeMermaid renders a diagram as a Mermaid sequenceDiagram. Publishes are notes over
// the control plane; NACKs and refusals are crossed arrows.
func writeMermaid(b *strings.Builder, d compare.Diagram) {
	b.WriteString("```mermaid\nsequenceDiagram\n")
	fmt.Fprintf(b, "    participant CP as control plane (%s)\n", d.Mode)
	fmt.Fprintf(b, "    participant C as %s\n", mermaidText(d.ClientName))
	b.WriteString("    participant DP as data plane\n")
	shown, note := capMessages(d.Messages, DiagramCap)
	id := map[string]string{compare.ControlPlane: "CP", compare.Client: "C", compare.DataPlane: "DP"}
	for _, m := range shown {
		text := mermaidText(fmt.Sprintf("+%.1fms %s", m.OffsetMS, m.Label))
		if m.From == m.To {
			fmt.Fprintf(b, "    Note over %s: %s\n", id[m.From], text)
			continue
		}
		op := "->>"
		switch m.Kind {
		case compare.KindOnDemand:
			op = "-)" // open arrow: a subscribe traffic asked for
		case compare.KindNack, compare.KindRefused:
			op = "-x"
		case compare.KindStale:
			op = "--x" // dotted and crossed: sent, but dropped by the server
		case compare.KindStreamOpen, compare.KindStreamClose:
			op = "--)"
		case compare.KindUnmatched:
			op = "-->>"
		}
		fmt.Fprintf(b, "    %s%s%s: %s\n", id[m.From], op, id[m.To], text)
		if len(m.Removed) > 0 {
			fmt.Fprintf(b, "    Note over %s: %s\n", id[m.To], mermaidText(removalMark(m)))
		}
	}
	if len(d.Messages) == 0 {
		b.WriteString("    Note over CP,C: no message recorded\n")
	}
	if note != "" {
		fmt.Fprintf(b, "    Note over CP,C: %s\n", mermaidText(note))
	}
	b.WriteString("```\n")
}

// removalMark is the marker renderers put on a send that removes names.
func removalMark(m compare.Message) string {
	how := "removed_resources"
	if m.ByAbsence {
		how = "absent from this " + m.Type + " response"
	}
	return fmt.Sprintf("✕ %s removed (%s)", words.NameList(m.Removed, "names"), how)
}

// mermaidText keeps a label inside one Mermaid message: ";" and "#" are Mermaid syntax
// (statement separator, entity codes) and a newline would end the statement.
// Angle brackets become look-alikes: an HTML entity would bring its own ";".
var mermaidReplacer = strings.NewReplacer(";", ",", "#", "no.", "\n", " ", "\r", " ", "%%", "%", "<", "‹", ">", "›")

func mermaidText(s string) string { return mermaidReplacer.Replace(words.Sanitize(s)) }

// ---- helpers ----
