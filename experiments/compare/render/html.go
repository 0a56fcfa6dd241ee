package render

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/experiments/table"
)

// The HTML report is one self-contained file: inline CSS and SVG, no script, no external
// URL, so it opens from disk, offline, and can be attached to an issue as is.

// svgDiagram is a Diagram laid out for the SVG template.
type svgDiagram struct {
	Caption       string
	Width, Height int
	Participants  []svgParticipant
	Rows          []svgRow
}

type svgParticipant struct {
	X, BoxX, BoxW int
	Name          string
}

// svgRow is one message: an arrow (or a note box) with its label lines above it (inside
// the box for a note) and its time on the left.
type svgRow struct {
	Y, TimeY int
	X1, X2   int
	Time     string
	Lines    []svgText
	// Full is the whole label (also the SVG tooltip).
	Full, Class string
	Note        bool
	NoteX       int
	NoteY       int
	NoteW       int
	NoteH       int
	Arrow       string // polygon points of the arrowhead
	// Removal marks a send that removes names with a cross on the client's lifeline.
	Removal            bool
	RemovalX, RemovalY int
}

// svgText is one line of a label; End anchors it at its end (X is then its right edge).
type svgText struct {
	X, Y int
	End  bool
	Text string
}

// Layout of one diagram, in SVG user units.
const (
	svgWidth    = 700
	svgTop      = 44
	svgRowH     = 20
	svgLineH    = 12  // each further label line
	svgCharW    = 6.1 // monospace 10px, conservatively
	svgTimeW    = 62  // the time column on the left
	svgCPX      = 110
	svgClientX  = 400
	svgDataX    = 620
	svgNoteLeft = 74
)

// svgChars is how many label characters fit between two x positions.
func svgChars(from, to int) int { return max(int(float64(to-from)/svgCharW), 12) }

// wrapLabel splits a label into lines of at most n characters, at spaces where it can
// and inside a word only when the word alone is longer: nothing is ever cut off.
func wrapLabel(s string, n int) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(wrap(s, n, "", ""), "\n"), "\n") {
		r := []rune(l)
		for len(r) > n {
			lines = append(lines, string(r[:n]))
			r = r[n:]
		}
		lines = append(lines, string(r))
	}
	return lines
}

func layoutDiagram(d compare.Diagram) svgDiagram {
	x := map[string]int{compare.ControlPlane: svgCPX, compare.Client: svgClientX, compare.DataPlane: svgDataX}
	sd := svgDiagram{
		Caption: fmt.Sprintf("%s %s", d.Run, d.Mode),
		Width:   svgWidth,
		Participants: []svgParticipant{
			{X: svgCPX, Name: "control plane (" + d.Mode.String() + ")"},
			{X: svgClientX, Name: d.ClientName},
			{X: svgDataX, Name: "data plane"},
		},
	}
	for i := range sd.Participants {
		p := &sd.Participants[i]
		p.BoxW = min(max(utf8.RuneCountInString(p.Name)*7+16, 80), 2*(svgWidth-p.X)-4)
		p.BoxX = p.X - p.BoxW/2
	}
	shown, note := capMessages(d.Messages, DiagramCap)
	top := svgTop // the top of the next row
	for _, m := range shown {
		r := svgRow{Time: fmt.Sprintf("+%.1fms", m.OffsetMS), Full: words.Sanitize(m.Label), Class: "k-" + m.Kind}
		if m.From == m.To {
			// The next row starts below the box: its label, drawn above its arrow, would
			// otherwise touch the box's lower edge (a publish and its first send).
			top = layoutNote(&r, top, svgClientX-14, svgClientX-svgNoteLeft-10)
		} else {
			top = layoutArrow(&r, m, x[m.From], x[m.To], top)
		}
		sd.Rows = append(sd.Rows, r)
	}
	for _, extra := range []string{note, emptyNote(d)} {
		if extra == "" {
			continue
		}
		r := svgRow{Full: extra, Class: "k-more"}
		top = layoutNote(&r, top, svgWidth-14, svgWidth-svgNoteLeft-10)
		sd.Rows = append(sd.Rows, r)
	}
	sd.Height = top + svgRowH + 4
	return sd
}

// layoutNote lays r out as a note box below top, its text wrapped to end at textEnd in a
// box w wide, and returns the top of the next row: the box's bottom.
func layoutNote(r *svgRow, top, textEnd, w int) int {
	lines := wrapLabel(r.Full, svgChars(svgNoteLeft+6, textEnd))
	y := top + svgRowH
	r.Note, r.NoteX, r.NoteW = true, svgNoteLeft, w
	r.Y, r.TimeY, r.NoteY, r.NoteH = y, y+3, y-9, 15+(len(lines)-1)*svgLineH
	for i, l := range lines {
		r.Lines = append(r.Lines, svgText{X: svgNoteLeft + 6, Y: y + 3 + i*svgLineH, Text: l})
	}
	return r.NoteY + r.NoteH
}

// layoutArrow lays r out as an arrow from x1 to x2 below top, its label above it, and
// returns the top of the next row: the arrow's line.
func layoutArrow(r *svgRow, m compare.Message, x1, x2, top int) int {
	r.X1, r.X2 = x1, x2
	// A label reads from just right of the left end of its arrow (clear of a
	// left-pointing arrowhead) to the right edge; a data-plane answer, whose arrow is
	// short and at the right, ends at its arrowhead instead and uses the width on the
	// left, so the answer itself is never pushed out.
	from, to, end := min(r.X1, r.X2)+12, svgWidth-4, false
	if m.To == compare.DataPlane || m.From == compare.DataPlane {
		from, to, end = svgTimeW, max(r.X1, r.X2)-12, true
	}
	lines := wrapLabel(r.Full, svgChars(from, to))
	y := top + svgRowH + (len(lines)-1)*svgLineH
	r.Y, r.TimeY = y, y+3
	for i, l := range lines {
		t := svgText{X: from, Y: y - 4 - (len(lines)-1-i)*svgLineH, Text: l}
		if end {
			t.X, t.End = to, true
		}
		r.Lines = append(r.Lines, t)
	}
	if r.X2 > r.X1 {
		r.Arrow = fmt.Sprintf("%d,%d %d,%d %d,%d", r.X2, y, r.X2-8, y-4, r.X2-8, y+4)
	} else {
		r.Arrow = fmt.Sprintf("%d,%d %d,%d %d,%d", r.X2, y, r.X2+8, y-4, r.X2+8, y+4)
	}
	if len(m.Removed) > 0 {
		r.Removal, r.RemovalX, r.RemovalY = true, svgClientX+4, y+5
		r.Full += " — " + removalMark(m)
	}
	return y
}

func emptyNote(d compare.Diagram) string {
	if len(d.Messages) == 0 {
		return "no message recorded in this step"
	}
	return ""
}

// htmlPage is what both HTML reports show alike (a two-run report is a matrix of two):
// the template "top" draws it from the title down to the data plane and the traffic,
// "versions" and "diagrams" its sections of those names.
type htmlPage struct {
	Title string
	// Answer is the first screen; Sources the numbered notes that it and the findings
	// cite (answer_html.go).
	Answer    answerView
	Sources   []sourceNote
	Headline  string // the two-run report's headline, the matrix's summary
	Legend    string
	Simulated bool
	Runs      table.Table
	Steps     table.Table
	Versions  table.Table
	Probes    *table.Table // nil: no compared step has a probe
	Traffic   *trafficView // nil: no compared step has a traffic event
	ProbeNote string
	ProbeNone string
	StepNote  string
	VerNote   string
	Shared    string
	Selected  string
	// Grid is the class of a step's figures, a figure per run: "pair" (two side by
	// side) or "runs-grid".
	Grid     string
	Diagrams []stepDiagrams
}

// stepDiagrams is one step's diagrams, one per run.
type stepDiagrams struct {
	Step string
	SVG  []svgDiagram
}

// htmlView is the two-run report's page.
type htmlView struct {
	htmlPage
	OnDemand *onDemandView // nil: no compared step has an on-demand subscribe
	Findings []htmlFinding
	// Clients is the Clients section (nil: the runs' clients are the same).
	Clients      []htmlFinding
	ClientsIntro string
}

// htmlFinding is a finding with its text split at backticks, so resource names render
// as <code> rather than as literal backticks.
type htmlFinding struct {
	Segments    []textSegment
	Attribution string
	// Extra is why a finding is not attributed, or what a protocol finding was observed
	// with; Notes are its sources' note numbers.
	Extra string
	Notes []int
}

type textSegment struct {
	Text string
	Code bool
}

// codeSegments splits s at backticks: odd segments are code spans. Unbalanced backticks
// leave the text as it is.
func codeSegments(s string) []textSegment {
	parts := strings.Split(s, "`")
	if len(parts)%2 == 0 {
		return []textSegment{{Text: s}}
	}
	var out []textSegment
	for i, p := range parts {
		if p != "" {
			out = append(out, textSegment{Text: p, Code: i%2 == 1})
		}
	}
	return out
}

func renderHTML(w io.Writer, rep *compare.Report) error {
	rows := reportStepRows(rep)
	v := htmlView{htmlPage: htmlPage{
		Title:     fmt.Sprintf("lab compare: A %s vs B %s", rep.Runs[0].Mode, rep.Runs[1].Mode),
		Runs:      headerTable(rep),
		Steps:     stepTable(rep),
		Versions:  versionTable(rep),
		StepNote:  stepLegendOf(rows),
		VerNote:   reportVersionNote(rep),
		Shared:    words.ListOrNone(words.Steps(rep.SharedSteps)),
		Selected:  rep.Step,
		Headline:  rep.Headline.Text,
		Legend:    labelLegend,
		Probes:    htmlProbes(runTitles(rep.Runs[:]), rows),
		Traffic:   htmlTraffic(runTitles(rep.Runs[:]), rows, "pair"),
		ProbeNote: probeLegend,
		ProbeNone: upperFirst(probeNone) + ".",
		Grid:      "pair",
	}, OnDemand: htmlOnDemand(runLabels(rep.Runs[:]), rows)}
	nb := &noteBook{}
	v.Answer = answerHTML(reportAnswer(rep), "The runs: A "+runTitle(rep.Runs[0])+"; B "+runTitle(rep.Runs[1])+".", nb)
	for _, f := range rep.Findings {
		v.Findings = append(v.Findings, findingNotes(f.Text, f.Attribution, extra(f), f.Cites(), nb))
	}
	if c := rep.Clients; c != nil {
		v.ClientsIntro = clientsIntro(c)
		for _, d := range c.Differences {
			v.Clients = append(v.Clients, findingNotes(d.Text, d.Attribution, d.Why(), d.Cites(), nb))
		}
	}
	v.Sources = nb.notes()
	for _, h := range rep.Runs {
		v.Simulated = v.Simulated || h.Client == "simulated"
	}
	for _, r := range rep.Rows {
		for _, f := range r.Runs {
			v.Simulated = v.Simulated || (f.DataPlane != nil && f.DataPlane.Simulated)
		}
	}
	v.Simulated = v.Simulated || anySimulatedProbes(rows)
	for i := 0; i+1 < len(rep.Diagrams); i += 2 {
		v.Diagrams = append(v.Diagrams, stepDiagrams{Step: words.Step(rep.Diagrams[i].Step),
			SVG: []svgDiagram{layoutDiagram(rep.Diagrams[i]), layoutDiagram(rep.Diagrams[i+1])}})
	}
	return htmlTemplate.Execute(w, v)
}

// extra is what a finding says beside its notes: why it is not attributed, or what a
// protocol finding was observed with.
func extra(f compare.Finding) string {
	if f.ObservedWith != "" {
		return "observed with " + f.ObservedWith
	}
	return f.Why()
}

// The HTML pieces both reports share: the head up to the style sheet, the style sheet,
// and the diagram-figure template (tables are experiments/table's). The two-run report and the matrix are
// assembled from them, so that they look alike (and the two-run report stays byte for
// byte what it was before the matrix).
const (
	htmlHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
`
	htmlCSS = `body { font: 14px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #1b1f24; background: #fff; }
h1 { font-size: 22px; margin: 0 0 12px; }
h2 { font-size: 18px; margin: 24px 0 8px; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; font: 11.5px/1.3 ui-monospace, monospace; }
th, td { border: 1px solid #d0d7de; padding: 2px 4px; white-space: nowrap; }
th { background: #f3f4f6; white-space: normal; }
colgroup + colgroup { border-left: 3px solid #57606a; }
.scroll { overflow-x: auto; max-width: 100%; }
td.dp { white-space: normal; }
th.group { background: #e6ecf5; text-align: left; }
td.r { text-align: right; }
td.sim { background: #fff4d6; font-weight: bold; }
td.bad { background: #ffe1e1; }
td.warn { background: #fff8c5; }
td.moved { background: #dff3e4; font-weight: bold; }
svg.bar { width: auto; height: auto; border: 0; background: none; vertical-align: middle; }
svg.bar .axis { fill: #d0d7de; }
svg.bar .fail { fill: #cf222e; }
.note { color: #57606a; font-size: 12px; max-width: 1200px; }
.banner { background: #fff4d6; border: 1px solid #d4a72c; padding: 6px 10px; margin: 8px 0; }
ol li { margin: 3px 0; }
.headline { font-size: 15px; max-width: 1200px; background: #f6f8fa; border-left: 4px solid #0969da; padding: 8px 12px; }
code { font: 12.5px ui-monospace, monospace; background: #eff1f3; padding: 0 3px; border-radius: 3px; }
.src { color: #57606a; font-size: 12px; }
.attr { display: inline-block; font-size: 11px; font-weight: bold; padding: 0 5px; border-radius: 8px; margin-right: 4px; }
.attr-protocol { background: #ddf4ff; color: #0550ae; }
.attr-implementation { background: #fff1e5; color: #953800; }
.attr-unattributed { background: #eaeef2; color: #57606a; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
figure { margin: 0; }
figcaption { font-weight: bold; margin-bottom: 4px; }
svg { width: 100%; height: auto; border: 1px solid #d0d7de; background: #fcfcfd; }
svg text { font: 10px ui-monospace, monospace; fill: #1b1f24; }
svg .pname { font: bold 11px system-ui, sans-serif; }
svg .pbox { fill: #eaeef2; stroke: #8c959f; }
svg .life { stroke: #8c959f; stroke-dasharray: 3 3; }
svg .time { fill: #6e7781; }
svg line { stroke-width: 1.4; }
svg .k-send line, svg .k-send polygon { stroke: #0969da; fill: #0969da; }
svg .k-ack line, svg .k-ack polygon { stroke: #1a7f37; fill: #1a7f37; }
svg .k-nack line, svg .k-nack polygon, svg .k-refused line, svg .k-refused polygon { stroke: #cf222e; fill: #cf222e; }
svg .k-nack text, svg .k-refused text { fill: #cf222e; }
svg .k-request line, svg .k-request polygon { stroke: #6e7781; fill: #6e7781; }
svg .k-stale line, svg .k-stale polygon { stroke: #cf222e; fill: #cf222e; stroke-dasharray: 2 2; }
svg .k-stale text { fill: #953800; }
svg text.rm { font: bold 13px ui-monospace, monospace; fill: #cf222e; }
svg .k-unmatched line, svg .k-unmatched polygon { stroke: #953800; fill: #953800; stroke-dasharray: 4 2; }
svg .k-stream_open line, svg .k-stream_open polygon, svg .k-stream_close line, svg .k-stream_close polygon { stroke: #8250df; fill: #8250df; stroke-dasharray: 5 3; }
svg .k-dataplane line, svg .k-dataplane polygon { stroke: #bc4c00; fill: #bc4c00; }
svg .k-publish rect { fill: #fff8c5; stroke: #d4a72c; }
svg .k-more rect { fill: #f6f8fa; stroke: #8c959f; }
`
	// htmlShared defines "figure"; the newline before it is the one the two-run report
	// has always ended with.
	htmlShared = `
{{define "figure"}}<figure><figcaption>{{.Caption}}</figcaption>
<svg viewBox="0 0 {{.Width}} {{.Height}}" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="{{.Caption}}">
{{$h := .Height}}{{range .Participants}}<rect class="pbox" x="{{.BoxX}}" y="6" width="{{.BoxW}}" height="22" rx="3"></rect><text class="pname" x="{{.X}}" y="21" text-anchor="middle">{{.Name}}</text>
<line class="life" x1="{{.X}}" y1="28" x2="{{.X}}" y2="{{$h}}"></line>
{{end}}{{range .Rows}}<g class="{{.Class}}"><title>{{.Full}}</title>{{if .Note}}<rect x="{{.NoteX}}" y="{{.NoteY}}" width="{{.NoteW}}" height="{{.NoteH}}" rx="2"></rect>{{else}}<line x1="{{.X1}}" y1="{{.Y}}" x2="{{.X2}}" y2="{{.Y}}"></line><polygon points="{{.Arrow}}"></polygon>{{end}}<text class="time" x="4" y="{{.TimeY}}">{{.Time}}</text>{{range .Lines}}<text x="{{.X}}" y="{{.Y}}"{{if .End}} text-anchor="end"{{end}}>{{.Text}}</text>{{end}}{{if .Removal}}<text class="rm" x="{{.RemovalX}}" y="{{.RemovalY}}">✕</text>{{end}}</g>
{{end}}</svg>
</figure>{{end}}` + htmlPageTemplates + htmlTrafficTemplates + htmlAnswerTemplates
)

// htmlPageTemplates defines the sections both reports have (htmlPage): "top", from the
// title down to the data plane and the traffic; "versions"; "diagrams"; and "finding",
// a finding's list item, with "segments", its text with code spans. Nothing outside the
// definitions: a report's last bytes are what they were.
const htmlPageTemplates = `{{define "top"}}<p class="headline" id="headline">{{.Headline}}</p>
<p class="note" id="legend">{{.Legend}}</p>
{{if .Simulated}}<p class="banner">At least one run used the simulated client: its data-plane answers are computed from what it accepted, no proxy forwarded anything. They are marked SIMULATED.</p>{{end}}
<section id="runs">
<h2>Runs</h2>
{{.Runs.HTML}}
<p>Compared steps: {{.Shared}}{{if .Selected}}. Selected step: {{.Selected}}{{end}}</p>
</section>
<section id="steps">
<h2>Steps</h2>
{{.Steps.HTML}}
<p class="note">{{.StepNote}}</p>
</section>
<section id="dataplane">
<h2>Data plane</h2>
{{with .Probes}}{{.HTML}}
<p class="note">{{$.ProbeNote}}</p>{{else}}<p>{{$.ProbeNone}}</p>{{end}}
</section>
{{with .Traffic}}{{template "traffic" .}}{{end}}{{end}}{{define "versions"}}<section id="versions">
<h2>Versions at each checkpoint</h2>
{{.Versions.HTML}}
<p class="note">{{.VerNote}}</p>
</section>
{{end}}{{define "diagrams"}}<section id="diagrams">
<h2>Sequence diagrams</h2>
{{range .Diagrams}}
<h3>{{.Step}}</h3>
<div class="{{$.Grid}}">{{range .SVG}}
{{template "figure" .}}{{end}}
</div>
{{end}}
</section>
{{end}}{{define "finding"}}<li>{{template "segments" .Segments}}<br><span class="src"><span class="attr attr-{{.Attribution}}">{{.Attribution}}</span>{{.Extra}}{{template "refs" .Notes}}</span></li>{{end}}` +
	`{{define "segments"}}{{range .}}{{if .Code}}<code>{{.Text}}</code>{{else}}{{.Text}}{{end}}{{end}}{{end}}`

// htmlTrafficTemplates defines "traffic", the traffic section (trafficView), and "timeline", one
// run's timeline of a step (svgTimeline); trafficCSSIf adds their style to a report that
// has the section. Definitions print nothing, so a report without traffic is what it was.
const (
	htmlTrafficTemplates = `{{define "traffic"}}<section id="traffic">
<h2>Traffic</h2>
{{.Table.HTML}}
<p class="note">{{.Legend}}</p>
<p class="note">{{.TimelineLegend}}</p>
{{range .Steps}}<h3>{{.Step}}: traffic</h3>
<div class="{{$.Grid}}">{{range .Timelines}}
{{template "timeline" .}}{{end}}
</div>
{{end}}</section>
{{end}}{{define "timeline"}}<figure><figcaption>{{.Caption}}</figcaption>
{{if .Note}}<p class="note">{{.Note}}</p>{{else}}<svg class="timeline" viewBox="0 0 {{.Width}} {{.Height}}" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="{{.Title}}"><title>{{.Title}}</title>
<rect class="plot" x="{{.PlotX}}" y="{{.PlotY}}" width="{{.PlotW}}" height="{{.PlotH}}"></rect>
{{range .XTicks}}<line class="tick" x1="{{.X}}" y1="{{$.PlotBottom}}" x2="{{.X}}" y2="{{$.TickBottom}}"></line><text class="tl-axis" x="{{.X}}" y="{{.Y}}" text-anchor="middle">{{.Label}}</text>{{end}}
<text class="tl-axis" x="{{.YTop.X}}" y="{{.YTop.Y}}" text-anchor="end">{{.YTop.Label}}</text><text class="tl-axis" x="{{.YZero.X}}" y="{{.YZero.Y}}" text-anchor="end">{{.YZero.Label}}</text><text class="tl-axis" x="{{.Axis.X}}" y="{{.Axis.Y}}">{{.Axis.Label}}</text>
{{range .Series}}<path class="series" data-series="{{.Key}}" fill="{{.Colour}}"{{if .Path}} d="{{.Path}}"{{end}}><title>{{.Title}}</title></path>
{{end}}{{range .Marks}}<g class="mark mark-{{.Kind}}{{if .Thin}} thin{{end}}"><title>{{.Title}}</title><line x1="{{.X}}" y1="{{.Y1}}" x2="{{.X}}" y2="{{.Y2}}"></line>{{if .Label}}<text x="{{.LabelX}}" y="{{.LabelY}}"{{if .LabelEnd}} text-anchor="end"{{end}}>{{.Label}}</text>{{end}}</g>
{{end}}{{range .Legend}}<g class="legend{{if .Kind}} mark mark-{{.Kind}}{{end}}">{{if .Kind}}<line x1="{{.LineX}}" y1="{{.Y}}" x2="{{.LineX}}" y2="{{.LineY2}}"></line>{{else}}<rect x="{{.X}}" y="{{.Y}}" width="10" height="10" fill="{{.Colour}}"></rect>{{end}}<text x="{{.TextX}}" y="{{.TextY}}">{{.Text}}</text></g>
{{end}}</svg>{{end}}{{with .Problem}}<p class="note">{{.}}</p>{{end}}
</figure>{{end}}`
	trafficCSSIf = `{{if .Traffic}}svg.timeline { max-width: 560px; }
svg.timeline .plot { fill: #fff; stroke: #d0d7de; }
svg.timeline path.series { shape-rendering: crispEdges; }
svg.timeline .tick { stroke: #8c959f; stroke-width: 1; }
svg.timeline text.tl-axis { fill: #57606a; }
svg.timeline .mark line { stroke-width: 1.4; }
svg.timeline .mark-publish line { stroke: #1f2328; }
svg.timeline .mark-ack line { stroke: #1a7f37; stroke-dasharray: 3 2; }
svg.timeline .mark-nack line { stroke: #bc4c00; stroke-dasharray: 1 2; }
svg.timeline .mark-publish text { fill: #1f2328; }
svg.timeline .mark-ack text { fill: #1a7f37; }
svg.timeline .mark-nack text { fill: #bc4c00; }
svg.timeline .thin line { stroke-width: 0.6; stroke-dasharray: none; }
{{end}}`
)

// onDemandCSSIf styles on-demand subscribe arrows in a report that has them.
const onDemandCSSIf = `{{if .OnDemand}}svg .k-on_demand line, svg .k-on_demand polygon { stroke: #8250df; fill: #8250df; }
svg .k-on_demand text { fill: #6639ba; font-weight: bold; }
{{end}}`

var htmlTemplate = template.Must(template.New("report").Parse(htmlHead + htmlCSS + answerCSS + trafficCSSIf + onDemandCSSIf + `</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{template "answer" .Answer}}{{template "diagrams" .}}<details class="box" id="tables"><summary>Per-step tables: what each run sent, how its client answered, the data plane, the versions</summary>
{{template "top" .}}{{with .OnDemand}}<section id="ondemand">
<h2>On-demand</h2>
{{.Table.HTML}}
<p class="note">{{.Legend}}</p>
</section>
{{end}}{{template "versions" .}}</details>
<details class="box" id="findings-box" open><summary>Findings ({{len .Findings}}), each with its label and sources</summary>
<section id="findings">
{{if .Findings}}<ol>{{range .Findings}}
{{template "finding" .}}{{end}}
</ol>{{else}}<p>None: the figures show no difference worth stating.</p>{{end}}
</section>
</details>
{{if .ClientsIntro}}<section id="clients">
<h2>Clients</h2>
<p>{{.ClientsIntro}}</p>
{{if .Clients}}<ol>{{range .Clients}}
{{template "finding" .}}{{end}}
</ol>{{else}}<p>None: the compared steps show no client behaviour to set side by side.</p>{{end}}
</section>
{{end}}{{template "sources" .Sources}}</body>
</html>
` + htmlShared))
