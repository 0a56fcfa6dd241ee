package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/xds-workbench/lab/experiments/cite"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// The committed runs of the teaching scenario (see generate_test.go): SotW with uniform
// versions and the library's NACK behaviour, delta, and SotW with per-type versions and
// the hold NACK policy.
const (
	sotwRun     = "testdata/sotw"
	deltaRun    = "testdata/delta"
	sotwHoldRun = "testdata/sotw-per-type-hold"
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

// render renders rep as --wide does: tables as wide as their content, one line per row,
// which the tests that read the text tables rely on.
func render(t *testing.T, rep *Report, format string) []byte {
	t.Helper()
	return renderWidth(t, rep, format, 0)
}

func renderWidth(t *testing.T, rep *Report, format string, width int) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Render(&buf, rep, format, width))
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
	opt          Options
	width        int // text only: 0 is --wide
}{
	{"golden.txt", "text", Options{}, 0},
	// The same as lab compare prints it into a pipe: tables split to fit 100 columns.
	{"golden-narrow.txt", "text", Options{}, narrowWidth},
	{"golden.md", "markdown", Options{}, 0},
	{"golden.json", "json", Options{}, 0},
	// One step with its side-by-side text diagrams, including the capped NACK storm.
	{"golden-invalid-route.txt", "text", Options{Step: "invalid-route"}, 0},
}

// writeGoldens renders the committed pair into the golden files.
func writeGoldens(t *testing.T) {
	t.Helper()
	for _, c := range goldens {
		got := renderWidth(t, report(t, sotwRun, deltaRun, c.opt), c.format, c.width)
		require.NoError(t, os.WriteFile(filepath.Join("testdata", c.file), got, 0o644))
	}
	for _, c := range matrixGoldens {
		got := renderMatrixWidth(t, matrix(t, c.runs, c.opt), c.format, c.width)
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

// finding returns the text of the first finding of kind in step ("" when none).
func finding(rep *Report, step, kind string) Finding {
	for _, f := range rep.Findings {
		if f.Step == step && f.Kind == kind {
			return f
		}
	}
	return Finding{}
}

func row(t *testing.T, rep *Report, step string) Row {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Step == step {
			return r
		}
	}
	t.Fatalf("no row %s", step)
	return Row{}
}

// TestFindings: the findings of the committed pair state what the data shows, with the
// figures from the rows.
func TestFindings(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{})

	pc := row(t, rep, "port-change")
	assert.Equal(t, map[string]int{"EDS": 1}, pc.Runs[1].Responses, "delta sends only the changed type")
	assert.Equal(t, 3, pc.Runs[0].Redundant, "uniform SotW re-sends the three unchanged types")
	assert.Equal(t, fmt.Sprintf("port-change: A sotw re-sent 3 unchanged resources (%d bytes) among 4 resources in 4 responses (%d bytes); B delta sent 1 resource in 1 response (%d bytes), none unchanged",
		pc.Runs[0].RedundantBytes, pc.Runs[0].Bytes, pc.Runs[1].Bytes), finding(rep, "port-change", "redundant").Text)
	assert.Equal(t, "port-change: A sotw moved 4 of 4 tracked versions (LDS, RDS, CDS, EDS); B delta moved 1 of 4 tracked versions (EDS)",
		finding(rep, "port-change", "versions").Text)

	ir := row(t, rep, "invalid-route")
	require.GreaterOrEqual(t, ir.Runs[0].RejectedResends, 2)
	nack := finding(rep, "invalid-route", "nack").Text
	assert.Contains(t, nack, fmt.Sprintf("A sotw re-sent the rejected RDS content %d times (NACK storm: %d NACKs, %.0f NACKs/s)",
		ir.Runs[0].RejectedResends, ir.Runs[0].Nacks, ir.Runs[0].NackRate))
	assert.Contains(t, nack, "B delta got 1 NACK (RDS) and re-sent the rejected content 0 times")

	// recover publishes the valid route again, and the endpoint back on v1 (as lab run
	// does): delta re-sends the route the client never stopped running.
	rc := row(t, rep, "recover")
	assert.Equal(t, map[string]int{"RDS": 1, "EDS": 1}, rc.Runs[1].Responses)
	assert.Equal(t, 1, rc.Runs[1].Redundant, "delta took the rejected route as delivered")
	assert.Equal(t, "200 v1 SIMULATED", rc.Runs[1].DataPlane.Text)

	assert.Equal(t, "remove-cluster: A sotw removed `inventory` by absence (CDS); B delta removed `inventory` explicitly (CDS, EDS)",
		finding(rep, "remove-cluster", "removal").Text)
	assert.Empty(t, finding(rep, "initial", "versions").Text, "both runs move every version at the start: nothing to state")
	assert.Empty(t, finding(rep, "port-change", "dataplane").Text, "both data planes agree")

	total := rep.Findings[len(rep.Findings)-1]
	assert.Equal(t, "total", total.Kind)
	assert.Contains(t, total.Text, "bytes A/B = "+ratioText(rep.Total[0].Bytes, rep.Total[1].Bytes))
	assert.Contains(t, total.Text, fmt.Sprintf("the largest difference is in invalid-route (A %d bytes, B %d bytes), see its nack finding",
		ir.Runs[0].Bytes, ir.Runs[1].Bytes))

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

// TestRestartFindings: the reconnect findings say what each control plane sent on the
// new stream and what the client declared.
func TestRestartFindings(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{})
	cp := finding(rep, "control-plane-restart", "reconnect").Text
	assert.Contains(t, cp, "control-plane-restart: after the control plane restarted (server 2), A sotw sent 4 responses with 4 resources")
	assert.Contains(t, cp, "4 of them what the client already ran (the client resumed from version_info 4)")
	assert.Contains(t, cp, "B delta sent 2 responses without resources")
	assert.Contains(t, cp, "(the client sent 4 initial_resource_versions)")
	// The simulated client keeps what it accepted across the runner's restart of it, so
	// envoy-restart is a reconnect with state, like the control-plane restart.
	assert.Contains(t, finding(rep, "envoy-restart", "reconnect").Text, "envoy-restart: after the client reconnected, A sotw sent 4 responses with 4 resources")
}

// TestFindingAttribution: every finding the teaching scenario produces, in both committed
// comparisons, says protocol or implementation and where; the known ones say the right
// one, in every format.
func TestFindingAttribution(t *testing.T) {
	reps := map[string]*Report{
		"sotw vs delta":               report(t, sotwRun, deltaRun, Options{}),
		"sotw per-type hold vs delta": report(t, sotwHoldRun, deltaRun, Options{}),
	}
	for name, rep := range reps {
		require.NotEmpty(t, rep.Findings, name)
		for _, f := range rep.Findings {
			assert.Contains(t, []string{AttrProtocol, AttrImplementation}, f.Attribution, "%s: %s", name, f.Text)
			assert.NotEmpty(t, f.Source, "%s: %s", name, f.Text)
			assert.NoError(t, checkSources(f.verdict.srcs, f.Attribution == AttrProtocol), "%s: %s", name, f.Text)
			assert.Empty(t, cite.CheckText(f.Source), "%s: %s", name, f.Source)
			if f.Attribution == AttrProtocol {
				assert.True(t, strings.HasPrefix(f.Source, `xDS protocol, "`), "%s: a protocol finding cites the protocol: %s", name, f.Source)
				assert.Equal(t, "A sotw, snapshot cache, the simulated client; B delta, snapshot cache, the simulated client", f.ObservedWith)
			}
		}
	}
	known := []struct {
		rep, step, kind, attr string
		source                []string
	}{
		// 1. Whole-type responses: uniform labels re-send unchanged types (not the protocol).
		{"sotw vs delta", "port-change", "redundant", AttrImplementation, []string{"--sotw-versions uniform", "respondSOTWWatches"}},
		{"sotw vs delta", "port-change", "versions", AttrImplementation, []string{"--sotw-versions uniform", "ConstructVersionMap"}},
		// 2. The restart re-send is the SnapshotCache answering a new stream.
		{"sotw vs delta", "control-plane-restart", "reconnect", AttrImplementation, []string{"pkg/cache/v3/simple.go, CreateWatch) answers every new stream", "initial_resource_versions"}},
		{"sotw vs delta", "control-plane-restart", "redundant", AttrImplementation, []string{"answers every new stream"}},
		// 3. Delta's "never re-sends rejected content" is its server; its cost is at recover.
		{"sotw vs delta", "recover", "redundant", AttrImplementation, []string{"pkg/server/delta/v3/server.go, processDelta) records versions when it sends and never reads error_detail"}},
		// 7. The NACK loop: the SnapshotCache answering a NACK's version_info at once, and
		// Envoy's rate limit (unset) would throttle it.
		{"sotw vs delta", "invalid-route", "nack", AttrImplementation, []string{"pkg/cache/v3/simple.go, CreateWatch) answers a NACK's version_info", "rate_limit_settings", "never reads error_detail"}},
		{"sotw per-type hold vs delta", "invalid-route", "nack", AttrImplementation, []string{"--nack-policy hold", "never reads error_detail"}},
		{"sotw per-type hold vs delta", "control-plane-restart", "versions", AttrImplementation, []string{"--sotw-versions per-type"}},
		// Removal by absence vs removed_resources is the protocol.
		{"sotw vs delta", "remove-cluster", "removal", AttrProtocol, []string{`xDS protocol, "Deleting Resources"`}},
		{"sotw per-type hold vs delta", "remove-cluster", "removal", AttrProtocol, []string{`xDS protocol, "Deleting Resources"`}},
		// The SotW server skips a stale request, subscription change and all.
		{"sotw vs delta", "remove-cluster", "stale", AttrImplementation, []string{"pkg/server/sotw/v3/ads.go, processADS", `xDS protocol, "Resource updates"`}},
		// The total is as much protocol as the step that makes most of it: the storm.
		{"sotw vs delta", "", "total", AttrImplementation, []string{"answers a NACK's version_info"}},
	}
	for _, k := range known {
		f := finding(reps[k.rep], k.step, k.kind)
		require.NotEmpty(t, f.Text, "%s: no %s finding in %s", k.rep, k.kind, k.step)
		assert.Equal(t, k.attr, f.Attribution, "%s: %s", k.rep, f.Text)
		for _, src := range k.source {
			assert.Contains(t, f.Source, src, "%s: %s %s", k.rep, k.step, k.kind)
		}
	}

	// Every format shows it.
	rep := reps["sotw vs delta"]
	removal := finding(rep, "remove-cluster", "removal")
	text := string(render(t, rep, "text"))
	assert.Contains(t, text, "     protocol: xDS protocol, \"Deleting Resources\"")
	assert.Contains(t, text, "     implementation: go-control-plane SnapshotCache (pkg/cache/v3/simple.go, CreateWatch)")
	md := string(render(t, rep, "markdown"))
	assert.Contains(t, md, "   - *protocol*: "+mdEscape(removal.cited())+"\n")
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
	assert.Contains(t, html, `<span class="attr attr-protocol">protocol</span>`+template.HTMLEscapeString(removal.extra())+` <a class="ref" href="#note-`)
	assert.Contains(t, html, `<span class="kind">protocol</span> `+template.HTMLEscapeString(cite.SpecDeleting.String()), "the removal's source is a numbered note")
	assert.Equal(t, len(rep.Findings), strings.Count(html, `<span class="attr attr-`))
}

// TestHeadline: the report opens with what differed most, computed from the totals, and
// whose behaviour that is.
func TestHeadline(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{})
	h := rep.Headline
	// The storm: NACKs are the largest ratio (delta got exactly one).
	assert.Equal(t, metricNacks, h.Metric)
	assert.Equal(t, [2]int{rep.Total[0].Nacks, rep.Total[1].Nacks}, h.Values)
	require.NotNil(t, h.Ratio)
	assert.InDelta(t, float64(rep.Total[0].Nacks)/float64(rep.Total[1].Nacks), *h.Ratio, 1e-9)
	for _, other := range []float64{
		float64(rep.Total[0].Bytes) / float64(rep.Total[1].Bytes),
		float64(sumMap(rep.Total[0].Responses)) / float64(sumMap(rep.Total[1].Responses)),
	} {
		assert.Greater(t, *h.Ratio, other, "the headline's ratio is the largest")
	}
	assert.Equal(t, "invalid-route", h.Step)
	assert.Equal(t, AttrImplementation, h.Attribution)
	assert.Equal(t, cite.SnapshotNack.String()+"; "+cite.EnvoyRateLimit.String(), h.Source, "the headline cites the side that made the difference")
	assert.True(t, strings.HasPrefix(h.Text, fmt.Sprintf("NACKs differed most: A sotw got %d, B delta 1 (%s×). Most of the difference is in invalid-route",
		rep.Total[0].Nacks, ratioText(rep.Total[0].Nacks, 1))), h.Text)

	// Per-type labels and hold leave the control-plane restart, where the SnapshotCache
	// answers the new stream with all four resources and delta with none.
	holdRep := report(t, sotwHoldRun, deltaRun, Options{})
	hold := holdRep.Headline
	require.NotNil(t, hold.Ratio)
	for _, other := range []float64{
		float64(holdRep.Total[0].Bytes) / float64(holdRep.Total[1].Bytes),
		float64(holdRep.Total[1].Bytes) / float64(holdRep.Total[0].Bytes),
		float64(sumMap(holdRep.Total[0].Responses)) / float64(sumMap(holdRep.Total[1].Responses)),
	} {
		assert.GreaterOrEqual(t, *hold.Ratio, other, "the headline's ratio is the largest")
	}
	assert.Equal(t, "control-plane-restart", hold.Step)
	assert.Equal(t, AttrImplementation, hold.Attribution)
	assert.Equal(t, cite.SnapshotNewStream.String(), hold.Source)

	// A run against itself: nothing differs, and the headline says so.
	a, err := Load("A", sotwRun)
	require.NoError(t, err)
	b, err := Load("B", sotwRun)
	require.NoError(t, err)
	same, err := Compare(a, b, Options{})
	require.NoError(t, err)
	assert.Empty(t, same.Headline.Metric)
	assert.Contains(t, same.Headline.Text, "No total differs")

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
	_, err = Compare(ra, rb, Options{Step: "invalid-route"})
	require.EqualError(t, err, `step "invalid-route" is not in both runs (shared steps: `+strings.Join(shared, ", ")+`)`)
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
	err := Render(&bytes.Buffer{}, &Report{}, "pdf", 0)
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
	assert.Equal(t, msgs, shown)
}

// messagesOf returns the labels of a diagram's messages of one kind.
func messagesOf(d Diagram, kind string) []string {
	var out []string
	for _, m := range d.Messages {
		if m.Kind == kind {
			out = append(out, m.Label)
		}
	}
	return out
}

// TestRequestLabels: a request is labelled by what it did to the subscription, in the
// committed runs and for every kind the recorder writes.
func TestRequestLabels(t *testing.T) {
	sotwR, deltaR := loadPair(t, sotwRun, deltaRun)
	assert.Equal(t, []string{"wildcard CDS", "wildcard LDS", "initial EDS [inventory]", "initial RDS [quote-route]"},
		messagesOf(BuildDiagram(sotwR, "initial"), KindRequest))
	assert.Equal(t, []string{"resume CDS v=4 (held 1 resource)", "resume LDS v=4 (held 1 resource)",
		"resume EDS [inventory] v=4 (held 1 resource)", "resume RDS [quote-route] v=4 (held 1 resource)"},
		messagesOf(BuildDiagram(sotwR, "control-plane-restart"), KindRequest))
	assert.Contains(t, messagesOf(BuildDiagram(deltaR, "control-plane-restart"), KindRequest), "resume EDS [inventory] initial_versions=1")
	assert.Equal(t, []string{"unsubscribe EDS -[inventory]"}, messagesOf(BuildDiagram(deltaR, "remove-cluster"), KindRequest))
	stale := messagesOf(BuildDiagram(sotwR, "remove-cluster"), KindStale)
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
	r, err := FromLog("A", []byte(log))
	require.NoError(t, err)
	d := BuildDiagram(r, "s")
	assert.Equal(t, []string{"wildcard CDS", "initial EDS [a] missing [a]", "subscribe EDS +[b] -[a]", "re-request EDS n=3",
		"unsubscribe EDS -[b]", "resume RDS [r] v=7 (held unknown)"}, messagesOf(d, KindRequest))
	assert.Equal(t, []string{"stale RDS n=5 (latest n=6) NACK: bad route"}, messagesOf(d, KindStale))
	md := string(render(t, &Report{Diagrams: []Diagram{d, d}}, "markdown"))
	assert.Contains(t, md, "    C--xCP: +7.0ms stale RDS n=5 (latest n=6) NACK: bad route\n", "a stale request is a dotted, crossed arrow")
}

// TestRequestLabelsOfOlderLogs: a log written before the recorder classified requests
// (no kind) is not reclassified here (the rules live in the recorder alone): its
// requests are labelled with what they hold.
func TestRequestLabelsOfOlderLogs(t *testing.T) {
	log := `{"ts":"2026-01-01T00:00:00Z","event":"publish","mode":"sotw","step":"s","server":1,"version":"1"}
{"ts":"2026-01-01T00:00:00.001Z","event":"request","mode":"sotw","step":"s","server":1,"stream":1,"type":"CDS","names":[]}
{"ts":"2026-01-01T00:00:00.002Z","event":"request","mode":"sotw","step":"s","server":1,"stream":1,"type":"EDS","names":["a"]}
`
	r, err := FromLog("A", []byte(log))
	require.NoError(t, err)
	assert.Equal(t, []string{"request CDS *", "request EDS [a]"}, messagesOf(BuildDiagram(r, "s"), KindRequest))
}

// TestRemovalMarker: a SotW LDS/CDS response that leaves out a name the previous
// response on the stream had is marked as a removal in every rendering, like delta's
// removed_resources.
func TestRemovalMarker(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{Step: "remove-cluster"})
	var marked [2][]Message
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
	for _, d := range report(t, sotwRun, deltaRun, Options{Step: "restore"}).Diagrams {
		for _, m := range d.Messages {
			assert.Empty(t, m.Removed, "%s %s", d.Run, m.Label)
		}
	}
}

// TestLabelsNotCutOff: no label is clipped in the text diagrams or the SVG, however long
// (data-plane answers end with the part that matters), and every SVG line fits the
// drawing.
func TestLabelsNotCutOff(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, Options{})
	long := Message{From: Client, To: DataPlane, Kind: KindDataPlane,
		Label: "request sotw-control-plane-restart-2-outage-17: 200 v1 SIMULATED (want 200 from v2 after the reconnect)"}
	diagrams := append(slices.Clone(rep.Diagrams), Diagram{Run: "A", Mode: "sotw", ClientName: "Envoy", Messages: []Message{long}})
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
	rep := report(t, sotwRun, deltaRun, Options{})
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
	assert.NotContains(t, string(render(t, &Report{Findings: []Finding{{Text: "`<b>x</b>`"}}}, "html")), "<b>x</b>", "code spans are escaped")
}
