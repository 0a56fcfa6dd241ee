package render

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/experiments/table"
)

// Matrix writes the matrix in format (text, markdown, json or html), its text tables
// bounded by width as Report's. The tables are the two-run report's (runsTable,
// figuresTable, versionsTable) with a column group per run, so that both read alike.
func Matrix(w io.Writer, cm *compare.Matrix, format string, width int) error {
	m := matrix{cm}
	var err error
	switch format {
	case "text", "":
		err = renderMatrixText(w, m, width)
	case "markdown":
		err = renderMatrixMarkdown(w, m)
	case "json":
		err = writeJSON(w, cm)
	case "html":
		err = renderMatrixHTML(w, m)
	default:
		return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return fmt.Errorf("render %s: %w", format, err)
	}
	return nil
}

// matrixLegend says how a matrix finding is labelled; every format shows it above the
// findings.
const matrixLegend = "Each finding is a SotW-vs-delta difference in one step as every pair of a SotW run and a " +
	"delta run with the same cache shows it (without the figures that vary from run to run). It is the protocol " +
	"only when every pair shows it alike with the SnapshotCache and with the LinearCache and each pair attributes " +
	"it to the protocol; an implementation when the cache or another option changes it, or when both caches' " +
	"servers made the same choice; unattributed when the runs given cannot tell (not both caches, or runs with " +
	"the same options that disagree). Below each, every pair's own two-run finding."

const notesLegend = "What concerns one run (stale requests, anomalies) or the data planes' answers, as a " +
	"two-run report states it."

// matrix is a compare.Matrix with what its renderers derive from it.
type matrix struct{ *compare.Matrix }

func (m matrix) headers() []compare.RunHeader {
	out := make([]compare.RunHeader, len(m.Runs))
	for i, r := range m.Runs {
		out[i] = r.RunHeader
	}
	return out
}

func (m matrix) labels() []string {
	out := make([]string, len(m.Runs))
	for i, r := range m.Runs {
		out[i] = r.Label
	}
	return out
}

// titles head each run's column group: "A: sotw · snapshot · uniform".
func (m matrix) titles() []string {
	out := make([]string, len(m.Runs))
	for i, r := range m.Runs {
		out[i] = words.Sanitize(r.Label + ": " + r.Axes)
	}
	return out
}

func (m matrix) title() string {
	return "lab compare: " + strings.Join(m.titles(), ", ")
}

func (m matrix) tables() (runs, steps, versions table.Table) {
	return runsTable(m.headers(), m.labels()), figuresTable(m.titles(), matrixStepRows(m), m.Total), versionsTable(m.titles(), m.versions())
}

func (m matrix) versions() []stepVersions {
	cps := make([]stepVersions, len(m.Versions))
	for i, cp := range m.Versions {
		cps[i] = stepVersions{cp.Step, cp.Runs}
	}
	return cps
}

// versionNote is the matrix's versions legend (versionNote).
func (m matrix) versionNote() string { return versionNote(m.labels(), m.versions()) }

// pairLine is one pair's observation under a finding: its two-run finding, or what it
// shows when it has none.
func pairLine(p compare.PairObservation) string {
	if p.Finding == "" {
		return fmt.Sprintf("%s (%s): no such finding (%s)", p.Pair, p.Cache, p.Shape)
	}
	return fmt.Sprintf("%s (%s): %s", p.Pair, p.Cache, p.Finding)
}

// ---- text ----

func renderMatrixText(w io.Writer, m matrix, width int) error {
	var b strings.Builder
	pw := proseWidth(width)
	runs, steps, versions := m.tables()
	b.WriteString(wrap(words.Sanitize(m.title()), pw, "", "  "))
	b.WriteString("\n")
	writeTextAnswer(&b, m.answer(), pw)
	b.WriteString(wrap(words.Sanitize(m.Summary), pw, "", ""))
	b.WriteString("\n")
	b.WriteString(wrap(labelLegend, pw, "", ""))
	b.WriteString("\n")
	b.WriteString(runs.Text(width))
	b.WriteString("\n" + wrap("compared steps: "+words.ListOrNone(words.Steps(m.SharedSteps)), pw, "", "  "))
	if m.Step != "" {
		fmt.Fprintf(&b, "selected step: %s\n", m.Step)
	}
	b.WriteString("\nSTEPS\n")
	b.WriteString(steps.Text(width))
	b.WriteString(wrap(stepLegendOf(matrixStepRows(m)), pw, "  ", "  "))
	b.WriteString("\nDATA PLANE\n")
	writeTextProbes(&b, m.titles(), matrixStepRows(m), width)
	writeTextTraffic(&b, m.titles(), matrixStepRows(m), width)
	b.WriteString("\nVERSIONS\n")
	b.WriteString(versions.Text(width))
	b.WriteString(wrap(m.versionNote(), pw, "  ", "  "))
	b.WriteString("\nFINDINGS\n")
	b.WriteString(wrap(matrixLegend, pw, "  ", "  "))
	if len(m.Findings) == 0 {
		b.WriteString("  none: no pair shows a SotW-vs-delta difference worth stating\n")
	}
	for i, f := range m.Findings {
		b.WriteString(wrap(fmt.Sprintf("%d. %s", i+1, words.Sanitize(f.Text)), pw, "  ", "     "))
		b.WriteString(wrap(fmt.Sprintf("%s: %s", f.Attribution, words.Sanitize(f.Basis)), pw, "     ", "       "))
		if f.Source != "" {
			b.WriteString(wrap("source: "+words.Sanitize(f.Source), pw, "       ", "         "))
		}
		for _, p := range f.Pairs {
			b.WriteString(wrap(words.Sanitize(pairLine(p)), pw, "       - ", "         "))
		}
	}
	b.WriteString("\nNOTES\n")
	b.WriteString(wrap(notesLegend, pw, "  ", "  "))
	if len(m.Notes) == 0 {
		b.WriteString("  none\n")
	}
	for i, f := range m.Notes {
		writeTextFinding(&b, i, f, pw)
	}
	if m.Step != "" {
		// One run after the other: side by side, N columns would not fit a terminal.
		fmt.Fprintf(&b, "\nSEQUENCE %s\n", m.Step)
		writeStackedDiagrams(&b, m.Diagrams)
	} else {
		b.WriteString("\n" + wrap(diagramsHint, pw, "", "  "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ---- Markdown ----

func renderMatrixMarkdown(w io.Writer, m matrix) error {
	var b strings.Builder
	runs, steps, versions := m.tables()
	fmt.Fprintf(&b, "# %s\n\n", mdEscape(m.title()))
	writeMDAnswer(&b, m.answer())
	b.WriteString(mdEscape(words.Sanitize(m.Summary)) + "\n\n")
	b.WriteString(mdEscape(labelLegend) + "\n\n")
	b.WriteString(runs.Markdown(mdCell))
	fmt.Fprintf(&b, "\nCompared steps: %s.", mdEscape(words.ListOrNone(words.Steps(m.SharedSteps))))
	if m.Step != "" {
		fmt.Fprintf(&b, " Selected step: %s.", mdEscape(m.Step))
	}
	b.WriteString("\n\n## Steps\n\n")
	b.WriteString(steps.Markdown(mdCell))
	b.WriteString("\n" + mdEscape(stepLegendOf(matrixStepRows(m))) + "\n\n## Data plane\n\n")
	writeMDProbes(&b, m.titles(), matrixStepRows(m))
	writeMDTraffic(&b, m.titles(), matrixStepRows(m))
	b.WriteString("\n## Versions\n\n")
	b.WriteString(versions.Markdown(mdCell))
	b.WriteString("\n" + mdEscape(m.versionNote()) + "\n\n## Findings\n\n" + mdEscape(matrixLegend) + "\n\n")
	if len(m.Findings) == 0 {
		b.WriteString("None: no pair shows a SotW-vs-delta difference worth stating.\n")
	}
	for i, f := range m.Findings {
		// Sub-items are indented to the item's text, so that Markdown nests them.
		marker := fmt.Sprintf("%d. ", i+1)
		pad := strings.Repeat(" ", len(marker))
		fmt.Fprintf(&b, "%s%s\n%s- *%s*: %s\n", marker, mdEscapeKeepTicks(words.Sanitize(f.Text)), pad,
			mdEscape(f.Attribution), mdEscape(words.Sanitize(f.Basis)))
		if f.Source != "" {
			fmt.Fprintf(&b, "%s- source: %s\n", pad, mdEscape(words.Sanitize(f.Source)))
		}
		for _, p := range f.Pairs {
			fmt.Fprintf(&b, "%s- %s\n", pad, mdEscapeKeepTicks(words.Sanitize(pairLine(p))))
		}
	}
	b.WriteString("\n## Notes\n\n" + mdEscape(notesLegend) + "\n\n")
	if len(m.Notes) == 0 {
		b.WriteString("None.\n")
	}
	for i, f := range m.Notes {
		marker := fmt.Sprintf("%d. ", i+1)
		fmt.Fprintf(&b, "%s%s\n%s- *%s*: %s\n", marker, mdEscapeKeepTicks(words.Sanitize(f.Text)),
			strings.Repeat(" ", len(marker)), mdEscape(f.Attribution), mdEscape(words.Sanitize(f.Source)))
	}
	b.WriteString("\n## Sequence diagrams\n")
	step := "\x00" // no step has this name: the first diagram opens a section
	for _, d := range m.Diagrams {
		if d.Step != step {
			step = d.Step
			fmt.Fprintf(&b, "\n### %s\n", mdEscape(words.Step(step)))
		}
		fmt.Fprintf(&b, "\n#### %s %s\n\n", d.Run, mdEscape(m.axesOf(d.Run)))
		writeMermaid(&b, d)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// axesOf is the axes of the run labelled label ("" when none is).
func (m matrix) axesOf(label string) string {
	for _, r := range m.Runs {
		if r.Label == label {
			return r.Axes
		}
	}
	return ""
}

// ---- HTML ----

// matrixView is the matrix's page.
type matrixView struct {
	htmlPage
	MatrixLegend, NotesLegend string
	Findings                  []matrixFindingView
	Notes                     []htmlFinding
}

type matrixFindingView struct {
	Segments            []textSegment
	Attribution, Basis  string
	Notes               []int
	Pairs               [][]textSegment
	Kind, Step, TypeKey string
}

func renderMatrixHTML(w io.Writer, m matrix) error {
	runs, steps, versions := m.tables()
	rows := matrixStepRows(m)
	v := matrixView{htmlPage: htmlPage{Title: fmt.Sprintf("lab compare: SotW vs delta over %d runs", len(m.Runs)), Headline: m.Summary, Legend: labelLegend,
		Runs: runs, Steps: steps, Versions: versions, StepNote: stepLegendOf(rows), VerNote: m.versionNote(),
		Shared: words.ListOrNone(words.Steps(m.SharedSteps)), Selected: m.Step, ProbeNote: probeLegend, ProbeNone: upperFirst(probeNone) + ".",
		Grid: "runs-grid"}, MatrixLegend: matrixLegend, NotesLegend: notesLegend}
	for _, r := range m.Runs {
		v.Simulated = v.Simulated || r.Client == "simulated"
	}
	v.Probes = htmlProbes(m.titles(), rows)
	v.Simulated = v.Simulated || anySimulatedProbes(rows)
	v.Traffic = htmlTraffic(m.titles(), rows, v.Grid)
	nb := &noteBook{}
	v.Answer = answerHTML(m.answer(), m.key(), nb)
	for _, f := range m.Findings {
		fv := matrixFindingView{Segments: codeSegments(words.Sanitize(f.Text)), Attribution: f.Attribution, Basis: words.Sanitize(f.Basis),
			Notes: nb.refs(f.Cites()), Kind: f.Kind, Step: f.Step, TypeKey: strings.Join(f.Types, ",")}
		for _, p := range f.Pairs {
			fv.Pairs = append(fv.Pairs, codeSegments(words.Sanitize(pairLine(p))))
		}
		v.Findings = append(v.Findings, fv)
	}
	for _, f := range m.Notes {
		v.Notes = append(v.Notes, findingNotes(f.Text, f.Attribution, f.Why(), f.Cites(), nb))
	}
	v.Sources = nb.notes()
	for _, d := range m.Diagrams {
		sd := layoutDiagram(d)
		sd.Caption = words.Sanitize(d.Run + ": " + m.axesOf(d.Run))
		if n := len(v.Diagrams); n > 0 && v.Diagrams[n-1].Step == words.Step(d.Step) {
			v.Diagrams[n-1].SVG = append(v.Diagrams[n-1].SVG, sd)
			continue
		}
		v.Diagrams = append(v.Diagrams, stepDiagrams{Step: words.Step(d.Step), SVG: []svgDiagram{sd}})
	}
	return matrixTemplate.Execute(w, v)
}

// key is the one line that says which run is which and why there are several: each
// SotW/delta pair with one cache is compared, and runs that differ in one option or
// the cache show what that option or cache adds.
func (m matrix) key() string {
	var runs, pairs []string
	for _, r := range m.Runs {
		runs = append(runs, r.Label+" "+r.Axes)
	}
	for _, p := range m.Pairs {
		pairs = append(pairs, p.Name+" ("+p.Cache+")")
	}
	k := "The runs: " + strings.Join(runs, "; ") + "."
	if len(pairs) > 0 {
		k += fmt.Sprintf(" Why %d runs: each SotW/delta pair with one cache (%s) shows the protocols' differences, which must hold in "+
			"every pair; runs that differ only in an option or the cache show what that option or cache adds.", len(m.Runs), strings.Join(pairs, ", "))
	}
	return k
}

// matrixCSS is what the matrix adds to the shared style sheet: the third label and a
// grid of one diagram per run.
const matrixCSS = `.basis { font-size: 12px; }
ul.pairs { margin: 2px 0 6px; padding-left: 20px; font-size: 12px; color: #3d444d; }
.runs-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 16px; }
`

var matrixTemplate = template.Must(template.New("matrix").Parse(htmlHead + htmlCSS + answerCSS + matrixCSS + trafficCSSIf + `</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{template "answer" .Answer}}{{template "diagrams" .}}<details class="box" id="tables"><summary>Per-step tables: what each run sent, how its client answered, the data plane, the versions</summary>
{{template "top" .}}{{template "versions" .}}</details>
<details class="box" id="findings-box" open><summary>Findings ({{len .Findings}}), each with its label, how the pairs decided it, and its sources</summary>
<section id="findings">
<p class="note">{{.MatrixLegend}}</p>
{{if .Findings}}<ol>{{range .Findings}}
<li class="finding" data-step="{{.Step}}" data-kind="{{.Kind}}"{{if .TypeKey}} data-types="{{.TypeKey}}"{{end}}>{{template "segments" .Segments}}<br><span class="src basis"><span class="attr attr-{{.Attribution}}">{{.Attribution}}</span>{{.Basis}}{{template "refs" .Notes}}</span>
<ul class="pairs">{{range .Pairs}}<li>{{template "segments" .}}</li>{{end}}</ul></li>{{end}}
</ol>{{else}}<p>None: no pair shows a SotW-vs-delta difference worth stating.</p>{{end}}
</section>
<section id="notes">
<h2>Notes</h2>
<p class="note">{{.NotesLegend}}</p>
{{if .Notes}}<ol>{{range .Notes}}
{{template "finding" .}}{{end}}
</ol>{{else}}<p>None.</p>{{end}}
</section>
</details>
{{template "sources" .Sources}}</body>
</html>
` + htmlShared))
