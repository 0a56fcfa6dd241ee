package render

import (
	"fmt"
	"html/template"
	"regexp"
	"strings"

	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
)

// The HTML answer: the first screen of both reports (the protocol differences, the scale
// chart, what this configuration adds, and the key to the runs), and the numbered
// source notes every row and finding refers to, each source listed once.

// noteBook numbers sources in the order a page first cites them.
type noteBook struct {
	list  []cite.Source
	index map[cite.Source]int
}

// refs are the note numbers of srcs, numbering the new ones.
func (nb *noteBook) refs(srcs []cite.Source) []int {
	if nb.index == nil {
		nb.index = map[cite.Source]int{}
	}
	var out []int
	for _, s := range srcs {
		n, ok := nb.index[s]
		if !ok {
			nb.list = append(nb.list, s)
			n = len(nb.list)
			nb.index[s] = n
		}
		out = append(out, n)
	}
	return out
}

// sourceNote is one numbered source at the foot of the page.
type sourceNote struct {
	N          int
	Kind, Text string
}

func (nb *noteBook) notes() []sourceNote {
	out := make([]sourceNote, 0, len(nb.list))
	for i, s := range nb.list {
		out = append(out, sourceNote{N: i + 1, Kind: string(s.Kind), Text: words.Sanitize(s.String())})
	}
	return out
}

// answerView is the first screen.
type answerView struct {
	Lead string
	// ConfigLine says how many of the differences shown are options and components,
	// naming the options, above their list.
	ConfigLine string
	// Choosing is the decision guide's summary with the scale sweep's figures.
	Choosing  string
	Rows      []diffRowView
	NoRows    string
	Chart     template.HTML
	ChartNote string
	Config    []configView
	Key       string
}

type diffRowView struct {
	Property, Section, Seen string
	SotW, Delta             []textSegment
	Notes                   []int
}

type configView struct {
	Text  string
	Notes []int
}

// answerHTML is the first screen of a report, citing its sources in nb; key says which
// run is which.
func answerHTML(a answer, key string, nb *noteBook) answerView {
	v := answerView{Key: key}
	if len(a.protocol) == 0 {
		v.NoRows = a.noProtocolText()
	}
	shown := 0
	for _, d := range a.protocol {
		v.Rows = append(v.Rows, diffRowView{Property: d.Property, SotW: codeSegments(words.Sanitize(d.SotW)), Delta: codeSegments(words.Sanitize(words.OrDash(d.Delta))),
			Section: d.Cites().Section, Seen: words.Sanitize(words.OrDash(d.ObservedWith)), Notes: nb.refs([]cite.Source{d.Cites()})})
		if d.ObservedWith != "" {
			shown++
		}
	}
	if len(a.protocol) > 0 {
		v.Lead = fmt.Sprintf("SotW and delta differ by the protocol in %d ways, %d of them seen in these runs: what each did here, "+
			"and the section of the xDS protocol document that makes it so.", len(a.protocol), shown)
	}
	if a.scale != nil {
		v.Choosing = a.scale.Choosing()
		v.Chart = scaleChart(a.scale)
		v.ChartNote = fmt.Sprintf("Bytes sent per change against N: the scale sweep (%s; series %s). A cluster add grows "+
			"with N in SotW under both caches: CDS is full state (the protocol). It grows in delta too, more slowly: the route "+
			"configuration that names every cluster is one resource, sent whole in both protocols. An endpoint change grows only "+
			"with SotW on the SnapshotCache, which re-sends the whole EDS type (the cache, not the protocol: the LinearCache "+
			"sends one).", a.scale.ClientWord(), strings.Join(series(a.scale), ", "))
	}
	v.ConfigLine = configLine(a.config)
	for _, c := range a.config {
		v.Config = append(v.Config, configView{Text: words.Sanitize(fmt.Sprintf("%s: %s (in %s)", c.Who, c.What, words.ListOrNone(c.Steps))),
			Notes: nb.refs([]cite.Source{c.Cites()})})
	}
	return v
}

// optionFlag finds the options a source names: "--sotw-versions uniform".
var optionFlag = regexp.MustCompile(`--[a-z-]+(?: [a-z][a-z-]*)?`)

// componentTitles name a component kind in prose.
var componentTitles = map[string]string{string(cite.GoControlPlane): "go-control-plane", string(cite.Envoy): "Envoy", string(cite.GRPCGo): "grpc-go"}

// configLine is "Beyond these rows, 9 differences the runs show come from options
// chosen here (--sotw-versions uniform, --nack-policy hold) and 9 from components
// (go-control-plane, Envoy): not the protocol."
func configLine(cs []compare.ConfigDifference) string {
	var options, components []string
	for _, c := range cs {
		if c.Kind != string(cite.Workbench) {
			components = words.AppendNew(components, componentTitles[c.Kind])
			continue
		}
		for _, flag := range optionFlag.FindAllString(c.Who, -1) {
			options = words.AppendNew(options, flag)
		}
	}
	if len(cs) == 0 {
		return ""
	}
	line := fmt.Sprintf("Beyond these rows, %s of the runs come from choices, not the protocol", words.Count(len(cs), "difference"))
	var parts []string
	if len(options) > 0 {
		parts = append(parts, "options chosen here ("+words.AndList(options)+")")
	}
	if len(components) > 0 {
		parts = append(parts, "components ("+words.AndList(components)+")")
	}
	return line + ": " + words.AndList(parts) + "."
}

// findingNotes is a finding's label, what it adds (why it is not attributed, or what a
// protocol finding was observed with) and its note numbers.
func findingNotes(text, attr, extra string, srcs []cite.Source, nb *noteBook) htmlFinding {
	return htmlFinding{Segments: codeSegments(words.Sanitize(text)), Attribution: attr, Extra: words.Sanitize(extra), Notes: nb.refs(srcs)}
}

// htmlAnswerTemplates define "answer", the first screen, and "sources", the notes.
const htmlAnswerTemplates = `{{define "answer"}}<section id="answer">
{{with .Lead}}<p class="lead">{{.}}</p>{{end}}{{with .NoRows}}<p class="lead">{{.}}</p>{{end}}
{{if .Rows}}<div class="scroll"><table id="differences" class="diff">
<colgroup><col class="c-prop"><col class="c-run"><col class="c-run"><col class="c-why"><col class="c-seen"></colgroup>
<tr><th>property</th><th>SotW</th><th>delta</th><th title="the section of the xDS protocol document; the note has its rule">why</th><th title="the SotW/delta pairs, with their cache and client, that showed it">seen with</th></tr>
{{range .Rows}}<tr><th scope="row">{{.Property}}</th><td>{{template "segments" .SotW}}</td><td>{{template "segments" .Delta}}</td><td>{{.Section}}{{template "refs" .Notes}}</td><td>{{.Seen}}</td></tr>
{{end}}</table></div>{{end}}
{{if .Chart}}<figure id="scale">{{.Chart}}<figcaption class="note">{{.ChartNote}}</figcaption></figure>{{end}}
{{with .Choosing}}<p id="choosing">{{.}}</p>{{end}}
{{with .Key}}<p class="note" id="key">{{.}}</p>{{end}}
{{with .ConfigLine}}<p class="note" id="config-line">{{.}}</p>{{end}}{{if .Config}}<details id="config"><summary>What this configuration adds ({{len .Config}}): options and components, not the protocol</summary><ul>{{range .Config}}
<li>{{.Text}}{{template "refs" .Notes}}</li>{{end}}
</ul></details>{{end}}
</section>
{{end}}{{define "refs"}}{{range .}} <a class="ref" href="#note-{{.}}">[{{.}}]</a>{{end}}{{end}}{{define "sources"}}<section id="sources">
<h2>Sources</h2>
<ol class="sources">{{range .}}
<li id="note-{{.N}}"><span class="kind">{{.Kind}}</span> {{.Text}}</li>{{end}}
</ol>
</section>
{{end}}`

// answerCSS styles the first screen and the notes.
const answerCSS = `p.lead { font-size: 14px; margin: 4px 0 8px; }
table.diff { font: 12.5px/1.35 system-ui, sans-serif; width: 100%; table-layout: fixed; }
table.diff th, table.diff td { white-space: normal; vertical-align: top; padding: 3px 6px; text-align: left; }
table.diff th[scope=row] { background: #f6f8fa; }
table.diff col.c-prop { width: 12%; } table.diff col.c-run { width: 29%; }
table.diff col.c-why { width: 14%; } table.diff col.c-seen { width: 16%; }
#scale { margin: 10px 0 4px; }
#scale svg { max-width: 100%; height: auto; border: 0; background: #fff; }
#scale svg text { font: 12px sans-serif; fill: #1b1f24; }
a.ref { font-size: 11px; text-decoration: none; }
ol.sources li { font-size: 12px; margin-bottom: 3px; overflow-wrap: anywhere; }
ol.sources .kind { font-weight: bold; color: #57606a; }
details > summary { cursor: pointer; font-weight: bold; margin: 12px 0 6px; }
details.box > summary { font-size: 18px; border-bottom: 1px solid #d0d7de; }
`
