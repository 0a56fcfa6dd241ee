package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// render renders rep as --wide does: tables as wide as their content, one line per row,
// which the tests that read the text tables rely on.
func render(t *testing.T, rep *compare.Report, format string) []byte {
	t.Helper()
	return renderWidth(t, rep, format, 0)
}

func renderWidth(t *testing.T, rep *compare.Report, format string, width int) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Report(&buf, rep, format, width))
	return buf.Bytes()
}

// narrowWidth is the narrowed goldens' width: lab compare's when the output is no
// terminal and COLUMNS is unset.
const narrowWidth = 100

// TestGolden renders the committed pair and compares byte for byte with the golden files
// (regenerated with -update). Every figure, including timings, comes from the recorded
// timestamps, so the output is deterministic.
func TestGolden(t *testing.T) {
	if *update {
		writeGoldens(t)
		return
	}
	for _, c := range goldens {
		t.Run(c.file, func(t *testing.T) {
			got := renderWidth(t, report(t, sotwRun, deltaRun, c.opt), c.format, c.width)
			path := filepath.Join("testdata", c.file)
			want, err := os.ReadFile(path)
			require.NoError(t, err, "missing golden file: go test ./experiments/compare -update")
			if !bytes.Equal(want, got) {
				t.Fatalf("%s differs from the rendered report (regenerate with -update if intended):\n%s", path, firstDiff(want, got))
			}
		})
	}
}

var goldens = []struct {
	file, format string
	opt          compare.Options
	width        int // text only: 0 is --wide
}{
	{"golden.txt", "text", compare.Options{}, 0},
	// The same as lab compare prints it into a pipe: tables split to fit 100 columns.
	{"golden-narrow.txt", "text", compare.Options{}, narrowWidth},
	{"golden.md", "markdown", compare.Options{}, 0},
	{"golden.json", "json", compare.Options{}, 0},
	// One step with its side-by-side text diagrams, including the capped NACK storm.
	{"golden-invalid-route.txt", "text", compare.Options{Step: "invalid-route"}, 0},
}

// writeGoldens renders the committed pair into the golden files.
func writeGoldens(t *testing.T) {
	t.Helper()
	for _, c := range goldens {
		got := renderWidth(t, report(t, sotwRun, deltaRun, c.opt), c.format, c.width)
		require.NoError(t, os.WriteFile(filepath.Join("testdata", c.file), got, 0o644))
	}
	for _, c := range matrixGoldens {
		got := renderMatrixWidth(t, loadMatrix(t, c.runs, c.opt), c.format, c.width)
		require.NoError(t, os.WriteFile(filepath.Join("testdata", c.file), got, 0o644))
	}
}

func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n want %q\n  got %q", i+1, w, g)
		}
	}
	return "(same lines, different bytes)"
}

// TestDiagramListsEverySendAckNack: for every step of both runs, the parsed diagram holds
// every send, ACK and NACK of that step, in time order, matching the log's own events
// one for one, even where the rendering caps the step.
func TestDiagramListsEverySendAckNack(t *testing.T) {
	a, b := loadPair(t, sotwRun, deltaRun)
	capped := false
	for _, r := range []*compare.Run{a, b} {
		for _, st := range r.Summary.Steps {
			d := compare.BuildDiagram(r, st.Name)
			var want []xdslog.Event
			for _, e := range r.Events {
				if e.Step == st.Name && (e.Event == xdslog.EventSend || e.Event == xdslog.EventAck || e.Event == xdslog.EventNack) {
					want = append(want, e)
				}
			}
			var got []compare.Message
			for _, m := range d.Messages {
				if m.Kind == compare.KindSend || m.Kind == compare.KindAck || m.Kind == compare.KindNack {
					got = append(got, m)
				}
			}
			require.Len(t, got, len(want), "%s %s", r.Name(), st.Name)
			for i, e := range want {
				m := got[i]
				assert.Equal(t, e.Event, m.Kind, "%s %s #%d", r.Name(), st.Name, i)
				assert.Equal(t, e.Type, m.Type)
				assert.Equal(t, e.Nonce, m.Nonce)
				assert.Equal(t, e.Server, m.Server)
				assert.Equal(t, e.Stream, m.Stream)
				assert.True(t, e.TS.Equal(m.Time))
				assert.Contains(t, m.Label, "n="+e.Nonce)
			}
			for i := 1; i < len(d.Messages); i++ {
				assert.False(t, d.Messages[i].Time.Before(d.Messages[i-1].Time), "%s %s: time order at %d", r.Name(), st.Name, i)
			}
			if len(d.Messages) > DiagramCap {
				capped = true
				md := render(t, &compare.Report{Diagrams: []compare.Diagram{d, d}}, "markdown")
				assert.Contains(t, string(md), fmt.Sprintf("... %d more (", len(d.Messages)-DiagramCap))
			}
		}
	}
	assert.True(t, capped, "the committed SotW NACK storm should exceed the rendering cap")
}

// TestDifferentStepsAndNoRunJSON: a bare xds.log (no run.json) with a step missing is
// compared on the shared steps; the header says options are unknown and lists the step
// present in one run only.
func TestDifferentStepsAndNoRunJSON(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(deltaRun, "xds.log"))
	require.NoError(t, err)
	var kept []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if !strings.Contains(l, `"step":"invalid-route"`) {
			kept = append(kept, l)
		}
	}
	bare := filepath.Join(t.TempDir(), "partial.log")
	require.NoError(t, os.WriteFile(bare, []byte(strings.Join(kept, "")), 0o644))

	rep := report(t, sotwRun, bare, compare.Options{})
	shared := []string{"initial", "port-change", "recover", "envoy-restart", "control-plane-restart", "remove-cluster", "restore"}
	assert.Equal(t, shared, rep.SharedSteps)
	assert.Equal(t, []string{"invalid-route"}, rep.Runs[0].OnlyHere)
	assert.Empty(t, rep.Runs[1].OnlyHere)
	assert.False(t, rep.Runs[1].OptionsKnown)
	assert.Equal(t, protocol.Delta, rep.Runs[1].Mode, "mode from the log")
	assert.True(t, rep.Runs[0].OptionsKnown)
	for _, r := range rep.Rows {
		assert.NotEqual(t, "invalid-route", r.Step)
	}
	text := string(render(t, rep, "text"))
	assert.Contains(t, text, "options unknown (no run.json; mode from xds.log)")
	assert.Regexp(t, `steps only in this run\s+invalid-route\s+none`, text)
	// Without run.json the simulated answers still say so (the events name the client).
	assert.Contains(t, text, "200 v2 SIMULATED")

	// The selected step must be shared.
	ra, rb := loadPair(t, sotwRun, bare)
	_, err = compare.Compare(ra, rb, compare.Options{Step: "invalid-route"})
	require.EqualError(t, err, `step "invalid-route" is not in both runs (shared steps: `+strings.Join(shared, ", ")+`)`)
}

// TestStepOption: --step narrows every section to that step and adds its diagrams.
func TestStepOption(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{Step: "remove-cluster"})
	require.Len(t, rep.Rows, 1)
	require.Len(t, rep.Versions, 1)
	require.Len(t, rep.Diagrams, 2)
	assert.Equal(t, []string{"A", "B"}, []string{rep.Diagrams[0].Run, rep.Diagrams[1].Run})
	for _, f := range rep.Findings {
		assert.Contains(t, []string{"remove-cluster", ""}, f.Step)
	}
	md := string(render(t, rep, "markdown"))
	assert.Equal(t, 2, strings.Count(md, "```mermaid\nsequenceDiagram\n"))
	assert.Contains(t, md, "participant C as simulated client")
	assert.Contains(t, md, "removed [inventory]")
}

// TestJSONRoundTrip: the JSON is the documented struct, with full delta hashes.
func TestJSONRoundTrip(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{})
	var back compare.Report
	require.NoError(t, json.Unmarshal(render(t, rep, "json"), &back))
	assert.Equal(t, rep.SharedSteps, back.SharedSteps)
	assert.Len(t, back.Diagrams, 2*len(rep.SharedSteps))
	assert.Equal(t, len(rep.Diagrams[4].Messages), len(back.Diagrams[4].Messages), "JSON diagrams are not capped")
	assert.Len(t, back.Versions[0].Runs[1].Resources[0].Version, 64)
}

// TestHTMLSelfContained: one file, no script, no external reference, every section.
func TestHTMLSelfContained(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{})
	html := string(render(t, rep, "html"))
	for _, banned := range []string{"<script", "http://", "https://", " src=", "@import", "url(", "<link", "javascript:"} {
		assert.NotContains(t, strings.ToLower(html), banned)
	}
	for _, s := range rep.SharedSteps {
		assert.Contains(t, html, "<h3>"+s+"</h3>")
	}
	assert.Equal(t, 2*len(rep.SharedSteps), strings.Count(html, "<svg viewBox="), "a diagram per run and step")
	assert.Equal(t, 2*len(rep.SharedSteps), strings.Count(html, `<svg class="bar"`), "an error-window bar per run and step")
	for _, id := range []string{`id="runs"`, `id="steps"`, `id="dataplane"`, `id="versions"`, `id="findings"`, `id="diagrams"`} {
		assert.Contains(t, html, id)
	}
	assert.Contains(t, html, "SIMULATED")
}

// TestHostileLabels: text from the log (errors, names) cannot break out of a table cell,
// a Mermaid statement or the HTML.
func TestHostileLabels(t *testing.T) {
	log := `{"ts":"2026-01-01T00:00:00Z","event":"publish","mode":"sotw","step":"x|<b>;#","version":"1"}
{"ts":"2026-01-01T00:00:00.001Z","event":"send","mode":"sotw","step":"x|<b>;#","server":1,"stream":1,"type":"RDS","nonce":"1","version":"1","resources":[{"name":"a|b<script>;#\n","hash":"h"}],"bytes":10}
{"ts":"2026-01-01T00:00:00.002Z","event":"nack","mode":"sotw","step":"x|<b>;#","server":1,"stream":1,"type":"RDS","nonce":"1","sent_version":"1","error":"bad\nline <script>alert(1)</script>"}
`
	a, err := compare.FromLog("A", []byte(log))
	require.NoError(t, err)
	b, err := compare.FromLog("B", []byte(log))
	require.NoError(t, err)
	rep, err := compare.Compare(a, b, compare.Options{})
	require.NoError(t, err)
	html := string(render(t, rep, "html"))
	assert.NotContains(t, html, "<script")
	assert.NotContains(t, html, "<b>")
	md := string(render(t, rep, "markdown"))
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "    C") || strings.HasPrefix(l, "    Note") {
			assert.NotContains(t, l, ";", "a ';' would end the Mermaid statement")
			assert.NotContains(t, l, "#", "'#' starts a Mermaid entity")
		}
	}
	assert.Contains(t, md, `x\|&lt;b&gt;`, "table cells escape pipes and tags")
}

// TestRenderUnknownFormat names the accepted formats.
func TestRenderUnknownFormat(t *testing.T) {
	err := Report(&bytes.Buffer{}, &compare.Report{}, "pdf", 0)
	require.EqualError(t, err, `unknown format "pdf" (want text, markdown, json, html)`)
}

// TestCapMessages counts what the note hides.
func TestCapMessages(t *testing.T) {
	var msgs []compare.Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, compare.Message{Kind: compare.KindSend}, compare.Message{Kind: compare.KindNack})
	}
	shown, note := capMessages(msgs, 5)
	assert.Len(t, shown, 5)
	assert.Equal(t, "... 15 more (8 nacks, 7 sends)", note) // the hidden tail starts with a NACK
	shown, note = capMessages(msgs, 20)
	assert.Len(t, shown, 20)
	assert.Empty(t, note)
	assert.Equal(t, msgs, shown)
}

// TestRequestLabels: a request is labelled by what it did to the subscription, in the
// committed runs and for every kind the recorder writes.
func TestRequestLabels(t *testing.T) {
	sotwR, deltaR := loadPair(t, sotwRun, deltaRun)
	assert.Equal(t, []string{"wildcard CDS", "wildcard LDS", "initial EDS [inventory]", "initial RDS [quote-route]"},
		messagesOf(compare.BuildDiagram(sotwR, "initial"), compare.KindRequest))
	assert.Equal(t, []string{"resume CDS v=4 (held 1 resource)", "resume LDS v=4 (held 1 resource)",
		"resume EDS [inventory] v=4 (held 1 resource)", "resume RDS [quote-route] v=4 (held 1 resource)"},
		messagesOf(compare.BuildDiagram(sotwR, "control-plane-restart"), compare.KindRequest))
	assert.Contains(t, messagesOf(compare.BuildDiagram(deltaR, "control-plane-restart"), compare.KindRequest), "resume EDS [inventory] initial_versions=1")
	assert.Equal(t, []string{"unsubscribe EDS -[inventory]"}, messagesOf(compare.BuildDiagram(deltaR, "remove-cluster"), compare.KindRequest))
	stale := messagesOf(compare.BuildDiagram(sotwR, "remove-cluster"), compare.KindStale)
	require.Len(t, stale, 1, "the committed SotW run has Envoy's stale EDS unsubscribe after the cluster removal")
	assert.Regexp(t, `^stale EDS n=\d+ \(latest n=\d+\) unsubscribe -\[inventory\]$`, stale[0])

	// Every kind, as the recorder writes them.
	log := `{"ts":"2026-01-01T00:00:00Z","event":"publish","mode":"sotw","step":"s","server":1,"version":"1","changed":["EDS"]}
{"ts":"2026-01-01T00:00:00.001Z","event":"request","mode":"sotw","step":"s","server":1,"stream":1,"type":"CDS","kind":"wildcard","wildcard":true,"names":[]}
{"ts":"2026-01-01T00:00:00.002Z","event":"request","mode":"sotw","step":"s","server":1,"stream":1,"type":"EDS","kind":"initial","added":["a"],"names":["a"],"missing":["a"]}
{"ts":"2026-01-01T00:00:00.003Z","event":"request","mode":"sotw","step":"s","server":1,"stream":1,"type":"EDS","kind":"subscribe","added":["b"],"removed":["a"],"names":["b"],"nonce":"2"}
{"ts":"2026-01-01T00:00:00.004Z","event":"request","mode":"sotw","step":"s","server":1,"stream":1,"type":"EDS","kind":"re-request","names":["b"],"nonce":"3"}
{"ts":"2026-01-01T00:00:00.005Z","event":"request","mode":"sotw","step":"s","server":1,"stream":1,"type":"EDS","kind":"unsubscribe","removed":["b"],"names":[],"nonce":"4"}
{"ts":"2026-01-01T00:00:00.006Z","event":"request","mode":"sotw","step":"s","server":1,"stream":2,"type":"RDS","kind":"resume","version":"7","held_unknown":true,"added":["r"],"names":["r"]}
{"ts":"2026-01-01T00:00:00.007Z","event":"stale","mode":"sotw","step":"s","server":1,"stream":2,"type":"RDS","nonce":"5","latest_nonce":"6","error":"bad route\nsecond line"}
`
	r, err := compare.FromLog("A", []byte(log))
	require.NoError(t, err)
	d := compare.BuildDiagram(r, "s")
	assert.Equal(t, []string{"wildcard CDS", "initial EDS [a] missing [a]", "subscribe EDS +[b] -[a]", "re-request EDS n=3",
		"unsubscribe EDS -[b]", "resume RDS [r] v=7 (held unknown)"}, messagesOf(d, compare.KindRequest))
	assert.Equal(t, []string{"stale RDS n=5 (latest n=6) NACK: bad route"}, messagesOf(d, compare.KindStale))
	md := string(render(t, &compare.Report{Diagrams: []compare.Diagram{d, d}}, "markdown"))
	assert.Contains(t, md, "    C--xCP: +7.0ms stale RDS n=5 (latest n=6) NACK: bad route\n", "a stale request is a dotted, crossed arrow")
}

// TestRemovalMarker: a SotW LDS/CDS response that leaves out a name the previous
// response on the stream had is marked as a removal in every rendering, like delta's
// removed_resources.
func TestRemovalMarker(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{Step: "remove-cluster"})
	var marked [2][]compare.Message
	for i, d := range rep.Diagrams {
		for _, m := range d.Messages {
			if len(m.Removed) > 0 {
				marked[i] = append(marked[i], m)
			}
		}
	}
	require.Len(t, marked[0], 1, "SotW: one CDS response without the cluster")
	assert.Equal(t, "CDS", marked[0][0].Type)
	assert.Equal(t, []string{"inventory"}, marked[0][0].Removed)
	assert.True(t, marked[0][0].ByAbsence)
	assert.Contains(t, marked[0][0].Label, "[] removes [inventory] by absence")
	require.Len(t, marked[1], 2, "delta: removed_resources on CDS and EDS")
	for _, m := range marked[1] {
		assert.False(t, m.ByAbsence)
		assert.Contains(t, m.Label, "removed [inventory]")
	}
	md := string(render(t, rep, "markdown"))
	assert.Contains(t, md, "    Note over C: ✕ [inventory] removed (absent from this CDS response)\n")
	assert.Equal(t, 2, strings.Count(md, "    Note over C: ✕ [inventory] removed (removed_resources)\n"))
	html := string(render(t, rep, "html"))
	assert.Equal(t, 3, strings.Count(html, `<text class="rm" `), "one cross per removing send")
	// Only the removing response is marked: the next one without the name removes nothing.
	for _, d := range report(t, sotwRun, deltaRun, compare.Options{Step: "restore"}).Diagrams {
		for _, m := range d.Messages {
			assert.Empty(t, m.Removed, "%s %s", d.Run, m.Label)
		}
	}
}

// TestLabelsNotCutOff: no label is clipped in the text diagrams or the SVG, however long
// (data-plane answers end with the part that matters), and every SVG line fits the
// drawing.
func TestLabelsNotCutOff(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{})
	long := compare.Message{From: compare.Client, To: compare.DataPlane, Kind: compare.KindDataPlane,
		Label: "request sotw-control-plane-restart-2-outage-17: 200 v1 SIMULATED (want 200 from v2 after the reconnect)"}
	diagrams := append(slices.Clone(rep.Diagrams), compare.Diagram{Run: "A", Mode: "sotw", ClientName: "Envoy", Messages: []compare.Message{long}})
	for _, d := range diagrams {
		shown, _ := capMessages(d.Messages, DiagramCap)
		text := strings.Join(textDiagram(d), "\n")
		flat := strings.Join(strings.Fields(text), " ")
		for _, m := range shown {
			assert.Contains(t, flat, strings.Join(strings.Fields(m.Label), " "), "text diagram %s %s", d.Run, d.Step)
		}
		sd := layoutDiagram(d)
		for i, r := range sd.Rows[:len(shown)] {
			var got []string
			for _, l := range r.Lines {
				got = append(got, l.Text)
				width := int(float64(utf8.RuneCountInString(l.Text)) * svgCharW)
				if l.End {
					assert.GreaterOrEqual(t, l.X-width, 0, "%q starts inside the drawing", l.Text)
				} else {
					assert.LessOrEqual(t, l.X+width, sd.Width, "%q ends inside the drawing", l.Text)
				}
			}
			assert.Equal(t, strings.Join(strings.Fields(shown[i].Label), " "), strings.Join(got, " "), "SVG %s %s", d.Run, d.Step)
		}
	}
	// The data-plane answer stays on the right, ending at its arrowhead, and a label too
	// long for one line takes two.
	sd := layoutDiagram(diagrams[len(diagrams)-1])
	lines := sd.Rows[0].Lines
	require.Len(t, lines, 2)
	assert.True(t, lines[1].End)
	assert.Equal(t, svgDataX-12, lines[1].X)
	assert.True(t, strings.HasSuffix(lines[1].Text, "reconnect)"), lines[1].Text)
}

// TestHTMLCodeSpans: backticks in findings are code spans: <code> in HTML, kept as code
// in Markdown, never literal backticks in HTML.
func TestHTMLCodeSpans(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{})
	removal := finding(rep, "remove-cluster", "removal").Text
	require.Contains(t, removal, "`inventory`")
	html := string(render(t, rep, "html"))
	findingsHTML := html[strings.Index(html, `<section id="findings">`):strings.Index(html, `<section id="sources">`)]
	assert.NotContains(t, findingsHTML, "`")
	assert.Contains(t, findingsHTML, "remove-cluster: A sotw removed <code>inventory</code> by absence (CDS); B delta removed <code>inventory</code> explicitly (CDS, EDS)")
	md := string(render(t, rep, "markdown"))
	assert.Contains(t, md, "remove-cluster: A sotw removed `inventory` by absence (CDS)")
	assert.Equal(t, []textSegment{{Text: "a `b"}}, codeSegments("a `b"), "an unbalanced backtick stays text")
	assert.Equal(t, []textSegment{{Text: "x<y", Code: true}, {Text: " z"}}, codeSegments("`x<y` z"))
	assert.NotContains(t, string(render(t, &compare.Report{Findings: []compare.Finding{{Text: "`<b>x</b>`"}}}, "html")), "<b>x</b>", "code spans are escaped")
}

// messagesOf returns the labels of a diagram's messages of one kind.
func messagesOf(d compare.Diagram, kind string) []string {
	var out []string
	for _, m := range d.Messages {
		if m.Kind == kind {
			out = append(out, m.Label)
		}
	}
	return out
}

// TestRequestLabelsOfOlderLogs: a log written before the recorder classified requests
// (no kind) is not reclassified here (the rules live in the recorder alone): its
// requests are labelled with what they hold.
func TestRequestLabelsOfOlderLogs(t *testing.T) {
	log := `{"ts":"2026-01-01T00:00:00Z","event":"publish","mode":"sotw","step":"s","server":1,"version":"1"}
{"ts":"2026-01-01T00:00:00.001Z","event":"request","mode":"sotw","step":"s","server":1,"stream":1,"type":"CDS","names":[]}
{"ts":"2026-01-01T00:00:00.002Z","event":"request","mode":"sotw","step":"s","server":1,"stream":1,"type":"EDS","names":["a"]}
`
	r, err := compare.FromLog("A", []byte(log))
	require.NoError(t, err)
	assert.Equal(t, []string{"request CDS *", "request EDS [a]"}, messagesOf(compare.BuildDiagram(r, "s"), compare.KindRequest))
}
