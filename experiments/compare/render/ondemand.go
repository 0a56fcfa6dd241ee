package render

import (
	"fmt"
	"strings"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/experiments/table"
)

// onDemandColumns are the on-demand table's columns; onDemandLegend explains them.
var onDemandColumns = []string{"step", "run", "type", "name", "request", "subscribe-ms", "response-ms", "answer-ms", "answer", "data plane"}

const onDemandLegend = "every name a client subscribed to on demand (a delta request adding VHDS names after " +
	"its first request of the type, or CDS names without \"*\": Envoy asks for a virtual host \"<route>/<Host>\" " +
	"or a cluster when a request needs one it does not hold, and holds the request meanwhile); request = the data-plane request that " +
	"asked (the first sent that was in flight when the subscribe went out; for VHDS, the one whose Host names the " +
	"virtual host); subscribe-ms, response-ms, answer-ms = ms from that request's send to the subscribe, to the " +
	"response carrying the name, and to the request's answer; answer = found, not found (a bodiless \"does not " +
	"exist\" resource, which is not content), removed, or none (no response carried the name); data plane = the " +
	"request's status and backend"

// anyOnDemand reports whether a step of rows has an on-demand subscribe in any run.
func anyOnDemand(rows []stepFigures) bool {
	return anyFigures(rows, func(f compare.Figures) bool { return f.OnDemand != nil })
}

// onDemandTable is the on-demand table: a row per fetch, by step then run (titled by
// labels, "A" and "B").
func onDemandTable(labels []string, rows []stepFigures) table.Table {
	t := table.Table{Head: onDemandColumns}
	for _, row := range rows {
		for i, f := range row.runs {
			if f.OnDemand == nil {
				continue
			}
			for _, x := range f.OnDemand.Fetches {
				t.Rows = append(t.Rows, fetchCells(words.Step(row.step), labels[i], x))
			}
		}
	}
	return t
}

func fetchCells(step, run string, x analysis.Fetch) []table.Cell {
	answer := table.Cell{Text: words.OrDash(x.Answer)}
	switch x.Answer {
	case "":
		answer = table.Cell{Text: "none", Class: "bad"}
	case analysis.FetchNotFound, analysis.FetchRemoved:
		answer.Class = "warn"
	}
	dp := table.Cell{Text: "-", Class: "dp"}
	if x.RequestID != "" {
		dp.Text = fmt.Sprint(x.Status)
		if x.Status == 0 {
			dp.Text = "no-answer"
		}
		if x.Backend != "" {
			dp.Text += " " + words.Sanitize(x.Backend)
		}
	}
	req := words.OrDash(x.RequestID)
	if x.Host != "" {
		req += " (Host " + x.Host + ")"
	}
	return []table.Cell{{Text: step}, {Text: run}, {Text: words.Sanitize(x.Type)}, {Text: words.Sanitize(words.Clip(x.Name, 60)), Title: words.Sanitize(x.Name)},
		{Text: words.Sanitize(words.Clip(req, 50))}, msCell(x.SubscribeMS), msCell(x.ResponseMS), msCell(x.AnswerMS), answer, dp}
}

// writeTextOnDemand is the text report's on-demand section: nothing when no step has an
// on-demand subscribe.
func writeTextOnDemand(b *strings.Builder, labels []string, rows []stepFigures, width int) {
	if !anyOnDemand(rows) {
		return
	}
	b.WriteString("\nON-DEMAND\n")
	b.WriteString(onDemandTable(labels, rows).Text(width))
	b.WriteString(wrap(onDemandLegend, proseWidth(width), "  ", "  "))
}

// writeMDOnDemand is the Markdown report's on-demand section, like writeTextOnDemand.
func writeMDOnDemand(b *strings.Builder, labels []string, rows []stepFigures) {
	if !anyOnDemand(rows) {
		return
	}
	b.WriteString("\n## On-demand\n\n")
	b.WriteString(onDemandTable(labels, rows).Markdown(mdCell))
	b.WriteString("\n" + mdEscape(upperFirst(onDemandLegend)) + ".\n")
}

// onDemandView is the HTML on-demand section.
type onDemandView struct {
	Table  table.Table
	Legend string
}

// htmlOnDemand is the HTML on-demand section (nil when no step has an on-demand subscribe).
func htmlOnDemand(labels []string, rows []stepFigures) *onDemandView {
	if !anyOnDemand(rows) {
		return nil
	}
	return &onDemandView{Table: onDemandTable(labels, rows), Legend: upperFirst(onDemandLegend) + "."}
}
