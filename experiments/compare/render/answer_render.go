package render

import (
	"fmt"
	"strings"

	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/experiments/table"
)

// The answer sections, first in every format: what differs between SotW and delta by
// the protocol (ProtocolDifferences), then what this configuration adds
// (ConfigDifferences). The two-run report and the matrix write them alike.

// answer is what the answer sections show of a report or a matrix.
type answer struct {
	protocol []compare.ProtocolDifference
	config   []compare.ConfigDifference
	// same is the protocol both runs speak when there is no SotW/delta pair ("" else).
	same  string
	scale *compare.Scale
}

func reportAnswer(rep *compare.Report) answer {
	a := answer{protocol: rep.ProtocolDifferences, config: rep.ConfigDifferences, scale: rep.Scale}
	if len(rep.ProtocolDifferences) == 0 && rep.Runs[0].Mode == rep.Runs[1].Mode {
		a.same = rep.Runs[0].Mode.String()
	}
	return a
}

func (m matrix) answer() answer {
	a := answer{protocol: m.ProtocolDifferences, config: m.ConfigDifferences, scale: m.Scale}
	if len(m.ProtocolDifferences) == 0 && len(m.Runs) > 0 {
		a.same = "one protocol"
	}
	return a
}

// noProtocolText is what the answer says without a SotW/delta pair.
func (a answer) noProtocolText() string {
	return fmt.Sprintf("No protocol difference to show: the runs speak %s, and two runs of one protocol do not differ by it.", a.same)
}

const (
	answerTitle = "What differs between SotW and delta (the protocol, in these runs)"
	configTitle = "What this configuration adds (options and components, not the protocol)"
)

// writeTextAnswer writes the answer sections of a text report, wrapped at pw.
func writeTextAnswer(b *strings.Builder, a answer, pw int) {
	b.WriteString(strings.ToUpper(answerTitle) + "\n")
	if len(a.protocol) == 0 {
		b.WriteString(wrap(a.noProtocolText(), pw, "  ", "  "))
	}
	for i, d := range a.protocol {
		b.WriteString(wrap(fmt.Sprintf("%d. %s", i+1, d.Property), pw, "  ", "     "))
		for _, line := range [][2]string{{"SotW: ", d.SotW}, {"delta:", words.OrDash(d.Delta)}, {"why:  ", d.Source}, {"seen: ", words.OrDash(d.ObservedWith)}} {
			b.WriteString(wrap(line[0]+" "+words.Sanitize(line[1]), pw, "     ", "            "))
		}
	}
	if a.scale != nil && a.scale.Choosing() != "" {
		b.WriteString("\n" + wrap(a.scale.Choosing(), pw, "  ", "  "))
	}
	if len(a.config) > 0 {
		b.WriteString("\n" + strings.ToUpper(configTitle) + "\n")
		b.WriteString(wrap(configLine(a.config), pw, "  ", "  "))
	}
	for _, c := range a.config {
		b.WriteString(wrap("- "+words.Sanitize(configText(c)), pw, "  ", "    "))
	}
	b.WriteString("\n")
}

// configText is "--nack-policy hold (sotw/sotw.go, FrontEnd.onRequest) shows ...: in
// invalid-route, recover".
func configText(c compare.ConfigDifference) string {
	return fmt.Sprintf("%s (%s) %s: in %s", c.Who, c.Where, c.What, words.ListOrNone(c.Steps))
}

// writeMDAnswer writes the answer sections of a Markdown report.
func writeMDAnswer(b *strings.Builder, a answer) {
	b.WriteString("## " + answerTitle + "\n\n")
	if len(a.protocol) == 0 {
		b.WriteString(mdEscape(a.noProtocolText()) + "\n\n")
	} else {
		t := table.Table{Head: []string{"property", "SotW", "delta", "why", "seen with"}}
		for _, d := range a.protocol {
			t.Rows = append(t.Rows, table.Cells(d.Property, words.Sanitize(d.SotW), words.Sanitize(words.OrDash(d.Delta)), d.Source, words.OrDash(d.ObservedWith)))
		}
		b.WriteString(t.Markdown(mdCell) + "\n")
	}
	if a.scale != nil && a.scale.Choosing() != "" {
		b.WriteString(mdEscape(a.scale.Choosing()) + "\n\n")
	}
	if len(a.config) > 0 {
		b.WriteString("## " + configTitle + "\n\n" + mdEscape(configLine(a.config)) + "\n\n")
		for _, c := range a.config {
			b.WriteString("- " + mdEscape(words.Sanitize(configText(c))) + "\n")
		}
		b.WriteString("\n")
	}
}
