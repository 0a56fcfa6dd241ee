package render

import (
	"fmt"
	"strings"

	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
)

// clientsIntro opens the section in every format.
func clientsIntro(c *compare.Clients) string {
	return fmt.Sprintf("A runs %s and B runs %s: where the clients themselves differ, read from each run's "+
		"xds.log. The protocol only where the xDS protocol document says so and both clients do so.",
		c.Names[0], c.Names[1])
}

// writeTextClients writes the CLIENTS section of a text report (nothing when c is nil).
func writeTextClients(b *strings.Builder, c *compare.Clients, pw int) {
	if c == nil {
		return
	}
	b.WriteString("\nCLIENTS\n")
	b.WriteString(wrap(clientsIntro(c), pw, "  ", "  "))
	if len(c.Differences) == 0 {
		b.WriteString("  none: the compared steps show no client behaviour to set side by side\n")
	}
	for i, d := range c.Differences {
		writeTextFinding(b, i, compare.Finding{Text: d.Text, Attribution: d.Attribution, Source: d.Source}, pw)
	}
}

// writeMDClients writes the "Clients" section of a Markdown report (nothing when c is nil).
func writeMDClients(b *strings.Builder, c *compare.Clients) {
	if c == nil {
		return
	}
	b.WriteString("\n## Clients\n\n" + mdEscape(clientsIntro(c)) + "\n\n")
	if len(c.Differences) == 0 {
		b.WriteString("None: the compared steps show no client behaviour to set side by side.\n")
	}
	for i, d := range c.Differences {
		marker := fmt.Sprintf("%d. ", i+1)
		fmt.Fprintf(b, "%s%s\n%s- *%s*: %s\n", marker, mdEscape(words.Sanitize(d.Text)),
			strings.Repeat(" ", len(marker)), mdEscape(d.Attribution), mdEscape(words.Sanitize(d.Source)))
	}
}
