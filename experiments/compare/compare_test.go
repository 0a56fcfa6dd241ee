package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// The committed pair (see generate_test.go).
const (
	sotwRun  = "testdata/sotw"
	deltaRun = "testdata/delta"
)

func loadPair(t *testing.T, a, b string) (*Run, *Run) {
	t.Helper()
	ra, err := Load("A", a)
	require.NoError(t, err)
	rb, err := Load("B", b)
	require.NoError(t, err)
	return ra, rb
}

func report(t *testing.T, a, b string, opt Options) *Report {
	t.Helper()
	ra, rb := loadPair(t, a, b)
	rep, err := Compare(ra, rb, opt)
	require.NoError(t, err)
	return rep
}

func render(t *testing.T, rep *Report, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Render(&buf, rep, format))
	return buf.Bytes()
}

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
			got := render(t, report(t, sotwRun, deltaRun, c.opt), c.format)
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
	opt          Options
}{
	{"golden.txt", "text", Options{}},
	{"golden.md", "markdown", Options{}},
	{"golden.json", "json", Options{}},
	// One step with its side-by-side text diagrams, including the capped NACK storm.
	{"golden-invalid-route.txt", "text", Options{Step: "invalid-route"}},
}

// writeGoldens renders the committed pair into the golden files.
func writeGoldens(t *testing.T) {
	t.Helper()
	for _, c := range goldens {
		got := render(t, report(t, sotwRun, deltaRun, c.opt), c.format)
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
	for _, r := range []*Run{a, b} {
		for _, st := range r.Summary.Steps {
			d := BuildDiagram(r, st.Name)
			var want []xdslog.Event
			for _, e := range r.Events {
				if e.Step == st.Name && (e.Event == xdslog.EventSend || e.Event == xdslog.EventAck || e.Event == xdslog.EventNack) {
					want = append(want, e)
				}
			}
			var got []Message
			for _, m := range d.Messages {
				if m.Kind == KindSend || m.Kind == KindAck || m.Kind == KindNack {
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
				md := render(t, &Report{Diagrams: []Diagram{d, d}}, "markdown")
				assert.Contains(t, string(md), fmt.Sprintf("... %d more (", len(d.Messages)-DiagramCap))
			}
		}
	}
	assert.True(t, capped, "the committed SotW NACK storm should exceed the rendering cap")
}

// TestFindings: the findings of the committed pair state what the data shows, with the
// figures from the rows.
func TestFindings(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{})
	byKind := func(step, kind string) string {
		for _, f := range rep.Findings {
			if f.Step == step && f.Kind == kind {
				return f.Text
			}
		}
		return ""
	}
	row := func(step string) Row {
		for _, r := range rep.Rows {
			if r.Step == step {
				return r
			}
		}
		t.Fatalf("no row %s", step)
		return Row{}
	}

	pc := row("port-change")
	assert.Equal(t, map[string]int{"EDS": 1}, pc.Runs[1].Responses, "delta sends only the changed type")
	assert.Equal(t, 3, pc.Runs[0].Redundant, "uniform SotW re-sends the three unchanged types")
	assert.Equal(t, fmt.Sprintf("port-change: A sotw re-sent 3 unchanged resources (%d bytes) among 4 resources in 4 responses (%d bytes); B delta sent 1 resource in 1 response (%d bytes), none unchanged",
		pc.Runs[0].RedundantBytes, pc.Runs[0].Bytes, pc.Runs[1].Bytes), byKind("port-change", "redundant"))
	assert.Equal(t, "port-change: A sotw moved 4 of 4 tracked versions (LDS, RDS, CDS, EDS); B delta moved 1 of 4 tracked versions (EDS)",
		byKind("port-change", "versions"))

	ir := row("invalid-route")
	require.GreaterOrEqual(t, ir.Runs[0].RejectedResends, 2)
	assert.Contains(t, byKind("invalid-route", "nack"), fmt.Sprintf("A sotw re-sent the rejected RDS content %d times (NACK storm: %d NACKs, %.0f NACKs/s)",
		ir.Runs[0].RejectedResends, ir.Runs[0].Nacks, ir.Runs[0].NackRate))
	assert.Contains(t, byKind("invalid-route", "nack"), "B delta got 1 NACK (RDS) and re-sent the rejected content 0 times")

	assert.Equal(t, "remove-cluster: A sotw removed `inventory` by absence (CDS); B delta removed `inventory` explicitly (CDS, EDS)",
		byKind("remove-cluster", "removal"))
	assert.Empty(t, byKind("initial", "versions"), "both runs move every version at the start: nothing to state")
	assert.Empty(t, byKind("port-change", "dataplane"), "both data planes agree")

	total := rep.Findings[len(rep.Findings)-1]
	assert.Equal(t, "total", total.Kind)
	assert.Contains(t, total.Text, fmt.Sprintf("bytes A/B = %.2f", float64(rep.Total[0].Bytes)/float64(rep.Total[1].Bytes)))

	// Versions: SotW moves every version together, delta only what changed.
	for _, cp := range rep.Versions {
		if cp.Step == "port-change" {
			assert.Equal(t, 4, cp.Runs[0].Moved)
			assert.Equal(t, 1, cp.Runs[1].Moved)
			assert.True(t, isHash(cp.Runs[1].Resources[3].Version), "delta versions are full hashes in the report")
		}
	}
	// Simulated answers are labelled as such, everywhere.
	for _, r := range rep.Rows {
		for _, f := range r.Runs {
			require.NotNil(t, f.DataPlane, r.Step)
			assert.True(t, f.DataPlane.Simulated)
			assert.Contains(t, f.DataPlane.Text, "SIMULATED")
		}
	}
}

// TestRestartFindings: the reconnect findings of the committed restart pair say what each
// control plane sent on the new stream.
func TestRestartFindings(t *testing.T) {
	rep := report(t, "testdata/restart-sotw", "testdata/restart-delta", Options{})
	var envoy, cp string
	for _, f := range rep.Findings {
		if f.Kind == "reconnect" {
			switch f.Step {
			case "envoy-restart":
				envoy = f.Text
			case "control-plane-restart":
				cp = f.Text
			}
		}
	}
	assert.Contains(t, envoy, "envoy-restart: after the client reconnected, A sotw sent 4 responses with 4 resources")
	assert.Contains(t, cp, "control-plane-restart: after the control plane restarted (server 2), A sotw sent 4 responses with 4 resources")
	assert.Contains(t, cp, "4 identical to what the client last ACKed (the client resumed from version_info 1)")
	assert.Contains(t, cp, "B delta sent 2 responses without resources")
	assert.Contains(t, cp, "(the client sent 4 initial_resource_versions)")
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

	rep := report(t, sotwRun, bare, Options{})
	assert.Equal(t, []string{"initial", "port-change", "recover", "remove-cluster", "restore"}, rep.SharedSteps)
	assert.Equal(t, []string{"invalid-route"}, rep.Runs[0].OnlyHere)
	assert.Empty(t, rep.Runs[1].OnlyHere)
	assert.False(t, rep.Runs[1].OptionsKnown)
	assert.Equal(t, "delta", rep.Runs[1].Mode, "mode from the log")
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
	_, err = Compare(ra, rb, Options{Step: "invalid-route"})
	require.EqualError(t, err, `step "invalid-route" is not in both runs (shared steps: initial, port-change, recover, remove-cluster, restore)`)
}

// TestStepOption: --step narrows every section to that step and adds its diagrams.
func TestStepOption(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{Step: "remove-cluster"})
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
	rep := report(t, sotwRun, deltaRun, Options{})
	var back Report
	require.NoError(t, json.Unmarshal(render(t, rep, "json"), &back))
	assert.Equal(t, rep.SharedSteps, back.SharedSteps)
	assert.Len(t, back.Diagrams, 2*len(rep.SharedSteps))
	assert.Equal(t, len(rep.Diagrams[4].Messages), len(back.Diagrams[4].Messages), "JSON diagrams are not capped")
	assert.Len(t, back.Versions[0].Runs[1].Resources[0].Version, 64)
}

// TestHTMLSelfContained: one file, no script, no external reference, every section.
func TestHTMLSelfContained(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{})
	html := string(render(t, rep, "html"))
	for _, banned := range []string{"<script", "http://", "https://", " src=", "@import", "url(", "<link", "javascript:"} {
		assert.NotContains(t, strings.ToLower(html), banned)
	}
	for _, s := range rep.SharedSteps {
		assert.Contains(t, html, "<h3>"+s+"</h3>")
	}
	assert.Equal(t, 2*len(rep.SharedSteps), strings.Count(html, "<svg "))
	for _, id := range []string{`id="runs"`, `id="steps"`, `id="versions"`, `id="findings"`, `id="diagrams"`} {
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
	a, err := FromLog("A", []byte(log))
	require.NoError(t, err)
	b, err := FromLog("B", []byte(log))
	require.NoError(t, err)
	rep, err := Compare(a, b, Options{})
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

// TestLoadErrors: every bad input gives one line naming the run.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	good, err := os.ReadFile(filepath.Join(sotwRun, "xds.log"))
	require.NoError(t, err)
	write("badmeta/xds.log", string(good))
	write("badmeta/run.json", `{"mode":"grpc"}`)
	write("mismatch/xds.log", string(good))
	write("mismatch/run.json", `{"mode":"delta"}`)
	write("badresult/xds.log", string(good))
	write("badresult/envoy.result", "maybe\nlater")
	write("nolog/other.txt", "")
	mixed := strings.Replace(string(good), `"mode":"sotw"`, `"mode":"delta"`, 1)
	for path, want := range map[string]string{
		filepath.Join(dir, "missing"):                                  "no such file or directory",
		filepath.Join(dir, "nolog"):                                    "directory has no xds.log",
		write("empty.log", ""):                                         "xds.log is empty",
		write("half.log", `{"ts":"2026-01-01T00:00:00Z","event":"pub`): "no valid event (1 lines skipped; first: line 1: unexpected end of JSON input)",
		write("grpc.log", `{"ts":"2026-01-01T00:00:00Z","event":"publish","mode":"grpc","step":"initial"}`): `unknown mode "grpc"`,
		write("mixed.log", mixed):       `xds.log mixes modes "delta" and "sotw"`,
		filepath.Join(dir, "badmeta"):   `run.json: unknown mode "grpc" (want sotw or delta)`,
		filepath.Join(dir, "mismatch"):  `run.json says mode "delta" but xds.log was recorded in "sotw"`,
		filepath.Join(dir, "badresult"): `envoy.result: want PASS, FAIL: reason or NOT_RUN, got "maybe\nlater"`,
	} {
		_, err := Load("B", path)
		require.Error(t, err, path)
		assert.Contains(t, err.Error(), want)
		assert.True(t, strings.HasPrefix(err.Error(), "run B ("+path+"): "), err.Error())
		assert.NotContains(t, err.Error(), "\n")
	}
}

// TestRenderUnknownFormat names the accepted formats.
func TestRenderUnknownFormat(t *testing.T) {
	err := Render(&bytes.Buffer{}, &Report{}, "pdf")
	require.EqualError(t, err, `unknown format "pdf" (want text, markdown, json, html)`)
}

// TestCapMessages counts what the note hides.
func TestCapMessages(t *testing.T) {
	var msgs []Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, Message{Kind: KindSend}, Message{Kind: KindNack})
	}
	shown, note := capMessages(msgs, 5)
	assert.Len(t, shown, 5)
	assert.Equal(t, "... 15 more (8 nacks, 7 sends)", note) // the hidden tail starts with a NACK
	shown, note = capMessages(msgs, 20)
	assert.Len(t, shown, 20)
	assert.Empty(t, note)
	assert.True(t, slices.Equal(msgs, shown))
}
