package render

import (
	"bytes"
	"encoding/json"
	"html/template"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare"
)

// TestClientsSectionInEveryFormat: a report of two different clients has the Clients
// section in every format, and one of the same client none.
func TestClientsSectionInEveryFormat(t *testing.T) {
	same := report(t, envoyClientRun, envoyClientRun, compare.Options{})
	mixed := report(t, envoyClientRun, grpcClientRun, compare.Options{})
	for format, marker := range map[string]string{"text": "\nCLIENTS\n", "markdown": "\n## Clients\n", "html": `<section id="clients">`} {
		var withC, without bytes.Buffer
		require.NoError(t, Report(&withC, mixed, format, 0))
		require.NoError(t, Report(&without, same, format, 0))
		assert.Contains(t, withC.String(), marker, format)
		assert.Contains(t, withC.String(), "have a path specifier", format)
		assert.NotContains(t, without.String(), marker, format)
	}
	var js bytes.Buffer
	require.NoError(t, Report(&js, mixed, "json", 0))
	var back compare.Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	require.NotNil(t, back.Clients)
	want, err := json.Marshal(mixed.Clients.Differences)
	require.NoError(t, err)
	got, err := json.Marshal(back.Clients.Differences)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got), "the differences read back as written")
}

// TestAttributionInEveryFormat: every format gives each finding its attribution and
// source, the HTML report as a numbered note.
func TestAttributionInEveryFormat(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{})
	// Every format shows it.
	removal := finding(rep, "remove-cluster", "removal")
	text := string(render(t, rep, "text"))
	assert.Contains(t, text, "     protocol: xDS protocol, \"Deleting Resources\"")
	assert.Contains(t, text, "     implementation: go-control-plane SnapshotCache (pkg/cache/v3/simple.go, CreateWatch)")
	md := string(render(t, rep, "markdown"))
	assert.Contains(t, md, "   - *protocol*: "+mdEscape(cited(removal))+"\n")
	assert.Contains(t, md, "    - *implementation*: ", "items from 10 on indent their sub-item by 4")
	var back struct {
		Findings []struct {
			Attribution, Source string
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal(render(t, rep, "json"), &back))
	require.Len(t, back.Findings, len(rep.Findings))
	for i, f := range back.Findings {
		assert.Equal(t, rep.Findings[i].Attribution, f.Attribution)
		assert.Equal(t, rep.Findings[i].Source, f.Source)
	}
	html := string(render(t, rep, "html"))
	assert.Contains(t, html, `<span class="attr attr-protocol">protocol</span>`+template.HTMLEscapeString(extra(removal))+` <a class="ref" href="#note-`)
	assert.Contains(t, html, `<span class="kind">protocol</span> `+template.HTMLEscapeString(cite.SpecDeleting.String()), "the removal's source is a numbered note")
	assert.Equal(t, len(rep.Findings), strings.Count(html, `<span class="attr attr-`))
}

// TestHeadlineOpensEveryFormat: every format opens with the answer, then the headline,
// followed by the legend of n= and v=.
func TestHeadlineOpensEveryFormat(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{})
	// Every format opens with it, followed by the legend of n= and v=.
	text := string(render(t, rep, "text"))
	assert.True(t, strings.HasPrefix(text, "lab compare: A sotw vs B delta\n\nWHAT DIFFERS BETWEEN SOTW AND DELTA"), text[:200])
	assert.Contains(t, text, "\nNACKs differed most: ", "the headline follows the answer")
	assert.Contains(t, text, "\nIn the diagrams, n= is a nonce")
	md := string(render(t, rep, "markdown"))
	assert.True(t, strings.HasPrefix(md, "# lab compare: A sotw vs B delta\n\n## What differs between SotW and delta"))
	assert.Contains(t, md, "\nNACKs differed most: ")
	html := string(render(t, rep, "html"))
	assert.Less(t, strings.Index(html, `<p class="headline" id="headline">NACKs differed most`), strings.Index(html, `<section id="runs">`))
	assert.Contains(t, html, `<p class="note" id="legend">In the diagrams, n= is a nonce`)
}

// TestProtocolDifferencesInEveryFormat: the protocol differences are in every format,
// JSON as protocol_differences, beside the configuration's.
func TestProtocolDifferencesInEveryFormat(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{})
	rm := rep.ProtocolDifferences[1]
	require.Equal(t, "removal", rm.Key)

	var back struct {
		ProtocolDifferences []compare.ProtocolDifference `json:"protocol_differences"`
		ConfigDifferences   []compare.ConfigDifference   `json:"configuration_differences"`
	}
	require.NoError(t, json.Unmarshal(render(t, rep, "json"), &back))
	require.Len(t, back.ProtocolDifferences, len(rep.ProtocolDifferences))
	assert.Equal(t, rm.SotW, back.ProtocolDifferences[1].SotW)
	assert.NotEmpty(t, back.ConfigDifferences)
	assert.Contains(t, string(render(t, rep, "text")), "WHAT DIFFERS BETWEEN SOTW AND DELTA")
	assert.Contains(t, string(render(t, rep, "markdown")), "| How a removal is said | remove-cluster: removed \\`inventory\\` by absence")
	assert.Contains(t, string(render(t, rep, "html")), `<table id="differences" class="diff">`)
}

// TestScaleChartInMatrix: a matrix given a scale sweep draws its chart in HTML.
func TestScaleChartInMatrix(t *testing.T) {
	m := loadMatrix(t, teaching4, compare.Options{Scale: scaleFixture(t)})
	assert.Contains(t, string(renderMatrix(t, m, "html")), `<figure id="scale"><svg`)
}

// TestMatrixUnattributedText: an unattributed matrix finding says why in its text.
func TestMatrixUnattributedText(t *testing.T) {
	m := loadMatrix(t, []string{sotwRun, deltaRun, sotwHoldRun}, compare.Options{})
	text := string(renderMatrix(t, m, "text"))
	assert.Contains(t, text, "\n     unattributed: only snapshot runs given\n")
	assert.NotContains(t, text, "\n     protocol: ")
}

// TestMatrixStepDiagrams: --step shows one diagram per run, in text and Markdown.
func TestMatrixStepDiagrams(t *testing.T) {
	m := loadMatrix(t, teaching4, compare.Options{Step: "remove-cluster"})
	text := string(renderMatrix(t, m, "text"))
	assert.Contains(t, text, "\nSEQUENCE remove-cluster\n")
	assert.Equal(t, 4, strings.Count(text, ": CP = control plane, C = simulated client, DP = data plane"))
	md := string(renderMatrix(t, m, "markdown"))
	assert.Equal(t, 4, strings.Count(md, "```mermaid\nsequenceDiagram\n"))
	assert.Contains(t, md, "#### C sotw · linear · per-type · nack hold\n")
}
