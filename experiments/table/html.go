package table

import (
	"html/template"
	"strings"
)

// HTML is t as an HTML table in a scrolling div: a colgroup per group and a row of
// group titles, the head with its hover tips, and the rows, a cell's class "r" when it
// aligns right. The page styles it (lab compare's style sheet).
func (t Table) HTML() (template.HTML, error) {
	v := htmlView{Groups: t.Groups, Rows: t.Rows, Head: make([]headCell, len(t.Head))}
	for i, h := range t.Head {
		v.Head[i] = headCell{h, t.Tips[h]}
	}
	var b strings.Builder
	if err := htmlTemplate.Execute(&b, v); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil // html/template's own output, escaped
}

// htmlView is a Table for the template: its headings with their hover texts.
type htmlView struct {
	Groups []Group
	Head   []headCell
	Rows   [][]Cell
}

// headCell is a column heading with its hover text.
type headCell struct{ Text, Tip string }

// htmlTemplate draws a table; "bar" draws a cell's Bar.
var htmlTemplate = template.Must(template.New("table").Parse(`<div class="scroll"><table>
{{range .Groups}}<colgroup span="{{.Span}}"></colgroup>{{end}}
{{if .Groups}}<tr>{{range .Groups}}<th class="group" colspan="{{.Span}}">{{.Title}}</th>{{end}}</tr>{{end}}
<tr>{{range .Head}}<th{{with .Tip}} title="{{.}}"{{end}}>{{.Text}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{if or .Class .Right}} class="{{.Class}}{{if .Right}} r{{end}}"{{end}}{{if .Title}} title="{{.Title}}"{{end}}>{{with .Bar}}{{template "bar" .}}{{end}}{{.Text}}</td>{{end}}</tr>
{{end}}</table></div>{{define "bar"}}<svg class="bar" viewBox="0 0 {{.W}} 10" width="{{.W}}" height="10" role="img" aria-label="{{.Label}}"><rect class="axis" x="0" y="3" width="{{.W}}" height="4"></rect>{{if .FW}}<rect class="fail" x="{{.X}}" y="0" width="{{.FW}}" height="10"></rect>{{end}}</svg>{{end}}`))
