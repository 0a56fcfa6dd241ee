package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/compare"
)

// probesRun is analysis's hand-written probe fixture (its TestProbesOfAWindow asserts the
// counts): Envoy answered a traffic window with sampled successes (represents 50) and a
// 503 NC burst in port-change, and outage probes in control-plane-restart.
const probesRun = "../analysis/testdata/probes"

// probePair is the fixture as run A (Envoy's answers) and, as run B, the same log with
// every answer the simulated client's.
func probePair(t *testing.T) (*compare.Run, *compare.Run) {
	t.Helper()
	a, err := compare.Load("A", probesRun)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(probesRun, "xds.log"))
	require.NoError(t, err)
	b, err := compare.FromLog("B", bytes.ReplaceAll(data, []byte(`"client":"envoy"`), []byte(`"client":"simulated"`)))
	require.NoError(t, err)
	return a, b
}

func probeRow(t *testing.T, rows []compare.Row, step string) compare.Row {
	t.Helper()
	for _, r := range rows {
		if r.Step == step {
			return r
		}
	}
	t.Fatalf("no row %q", step)
	return compare.Row{}
}

// TestProbesOfCommittedRuns: the committed runs predate the probe field; each of their
// data-plane events counts as one request probe, and they are the simulated client's.
func TestProbesOfCommittedRuns(t *testing.T) {
	rep := report(t, sotwRun, deltaRun, compare.Options{})
	for _, r := range rep.Rows {
		for i, f := range r.Runs {
			p := f.Probes
			require.NotNil(t, p, "%s run %d", r.Step, i)
			assert.Equal(t, analysis.ProbeKinds{Request: p.Probes}, p.Kinds, r.Step)
			assert.True(t, p.Simulated, r.Step)
		}
	}
	rc := probeRow(t, rep.Rows, "remove-cluster").Runs[0].Probes
	assert.Equal(t, map[string]int{"503 NC": 1}, rc.Failures)
}

// TestDiagramFoldsWindowProbes: a run of window probes with the same answer is one
// message counting them (weights included); request probes stay one message each.
func TestDiagramFoldsWindowProbes(t *testing.T) {
	r, err := compare.Load("A", probesRun)
	require.NoError(t, err)
	d := compare.BuildDiagram(r, "port-change")
	var window, requests int
	total := 0
	for _, m := range d.Messages {
		if m.Kind != compare.KindDataPlane {
			continue
		}
		if strings.HasPrefix(m.Label, "window probes x") {
			window++
			var n int
			_, err := fmt.Sscanf(strings.TrimPrefix(m.Label, "window probes x"), "%d", &n)
			require.NoError(t, err)
			total += n
		} else {
			requests++
		}
	}
	assert.Positive(t, window)
	assert.Less(t, window, 10, "folded: %d window messages", window)
	assert.Equal(t, 207, total+requests, "every probe of the step is counted once (as analysis counts them: TestProbesOfAWindow)")
}

// section returns the lines of a text report from the heading to the next blank line.
func section(t *testing.T, text, heading string) string {
	t.Helper()
	i := strings.Index(text, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "no %s section", heading)
	rest := text[i+len(heading)+2:]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestProbesSection: every format shows each step's weighted probes, failures by kind and
// error window, and labels the simulated run's SIMULATED and Envoy's envoy.
func TestProbesSection(t *testing.T) {
	a, b := probePair(t)
	rep, err := compare.Compare(a, b, compare.Options{})
	require.NoError(t, err)

	pc := probeRow(t, rep.Rows, "port-change")
	for i, p := range []*analysis.Probes{pc.Runs[0].Probes, pc.Runs[1].Probes} {
		require.NotNil(t, p)
		assert.Equal(t, 207, p.Probes, "four sampled successes of 50, six failures, one request")
		assert.Equal(t, map[string]int{"503 NC": 5, "0 no-response": 1}, p.Failures)
		assert.InDelta(t, 20.0, *p.ErrorWindowMS, 1e-9)
		assert.Equal(t, i == 1, p.Simulated, "run %s", rep.Runs[i].Label)
	}

	text := string(render(t, rep, "text"))
	dp := section(t, text, "DATA PLANE")
	var line string
	for _, l := range strings.Split(dp, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "port-change ") {
			line = l
		}
	}
	require.NotEmpty(t, line, dp)
	sides := strings.Split(line, " | ")
	require.Len(t, sides, 3, line)
	for _, want := range []string{"207", "r1 w206", "201", "503 NC ×5, 0 no-response ×1", "120.0", "140.0", "20.0", "v1 ×100, v2 ×101"} {
		assert.Contains(t, sides[1], want)
		assert.Contains(t, sides[2], want)
	}
	assert.True(t, strings.HasSuffix(strings.TrimSpace(sides[1]), " envoy"), sides[1])
	assert.NotContains(t, sides[1], "SIMULATED")
	assert.True(t, strings.HasSuffix(sides[2], "SIMULATED"), sides[2])
	assert.NotContains(t, sides[2], "envoy")
	assert.Contains(t, dp, "o103", "outage probes")

	md := string(render(t, rep, "markdown"))
	assert.Contains(t, md, "## Data plane")
	assert.Contains(t, md, "| port-change | 207 | r1 w206 | 201 | 6 | 503 NC ×5, 0 no-response ×1 | 120.0 | 140.0 | 20.0 | v1 ×100, v2 ×101 | envoy | 207 |")
	assert.Contains(t, md, "| v1 ×100, v2 ×101 | SIMULATED |")

	var out struct {
		Rows []struct {
			Step string `json:"step"`
			Runs []struct {
				Probes *analysis.Probes `json:"probes"`
			} `json:"runs"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal(render(t, rep, "json"), &out))
	for _, r := range out.Rows {
		require.Len(t, r.Runs, 2)
		require.NotNil(t, r.Runs[0].Probes, r.Step)
		assert.False(t, r.Runs[0].Probes.Simulated, r.Step)
		assert.True(t, r.Runs[1].Probes.Simulated, r.Step)
	}

	html := string(render(t, rep, "html"))
	assert.Contains(t, html, `<section id="dataplane">`)
	assert.Contains(t, html, `class="banner"`, "a simulated run gets the banner")
	// The window bar: 120 to 140 ms of a 300 ms step on a 120 px axis is x 48, width 8.
	assert.Contains(t, html, `<rect class="fail" x="48.0" y="0" width="8.0" height="10"></rect>`)
	assert.Contains(t, html, "failures from 120.0 to 140.0 ms of a 300.0 ms step")
	assert.Contains(t, html, `<td class="sim">SIMULATED</td>`)
}

// TestProbesMatrix: a matrix has a column group per run in the data-plane section, each
// run labelled by its own answers.
func TestProbesMatrix(t *testing.T) {
	a, b := probePair(t)
	c, err := compare.Load("C", sotwRun)
	require.NoError(t, err)
	m, err := compare.CompareMatrix([]*compare.Run{a, b, c}, compare.Options{})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Matrix(&buf, m, "text", 0))
	dp := section(t, buf.String(), "DATA PLANE")
	lines := strings.Split(dp, "\n")
	require.GreaterOrEqual(t, len(lines), 3)
	assert.Len(t, strings.Split(lines[0], " | "), 4, "a group per run: %s", lines[0])
	found := false
	for _, l := range lines[2:] {
		if !strings.HasPrefix(strings.TrimSpace(l), "initial ") {
			continue
		}
		found = true
		sides := strings.Split(l, " | ")
		require.Len(t, sides, 4, l)
		assert.True(t, strings.HasSuffix(strings.TrimSpace(sides[1]), " envoy"), sides[1])
		assert.True(t, strings.HasSuffix(strings.TrimSpace(sides[2]), "SIMULATED"), sides[2])
		assert.True(t, strings.HasSuffix(strings.TrimSpace(sides[3]), "SIMULATED"), sides[3])
	}
	assert.True(t, found, "no initial row: %s", dp)
	for _, format := range []string{"markdown", "html", "json"} {
		buf.Reset()
		require.NoError(t, Matrix(&buf, m, format, 0))
		assert.Contains(t, buf.String(), "SIMULATED", format)
	}
}

// TestProbesOfUnknownOrigin: probes that name no client, in a run without run.json, are
// not called Envoy's.
func TestProbesOfUnknownOrigin(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(probesRun, "xds.log"))
	require.NoError(t, err)
	r, err := compare.FromLog("A", bytes.ReplaceAll(data, []byte(`,"client":"envoy"`), nil))
	require.NoError(t, err)
	for _, st := range r.Summary.Steps {
		if st.Probes != nil {
			assert.Equal(t, map[string]int{analysis.UnnamedClient: st.Probes.Probes}, st.Probes.Clients)
			assert.False(t, st.Probes.Simulated, "analysis knows only what the log says")
		}
	}
	rep, err := compare.Compare(r, r, compare.Options{})
	require.NoError(t, err)
	assert.True(t, probeRow(t, rep.Rows, "port-change").Runs[0].Probes.Simulated)
	table, _, ok := strings.Cut(section(t, string(render(t, rep, "text")), "DATA PLANE"), "every data-plane probe")
	require.True(t, ok)
	assert.NotContains(t, table, "envoy")
	assert.Contains(t, table, "SIMULATED")
}

// TestProbesNone: runs without a data-plane event say so instead of a table of dashes.
func TestProbesNone(t *testing.T) {
	log := `{"ts":"2026-12-01T10:00:00Z","event":"publish","mode":"delta","step":"s","version":"1"}` + "\n"
	r, err := compare.FromLog("A", []byte(log))
	require.NoError(t, err)
	rep, err := compare.Compare(r, r, compare.Options{})
	require.NoError(t, err)
	assert.Nil(t, rep.Rows[0].Runs[0].Probes)
	assert.Contains(t, string(render(t, rep, "text")), "DATA PLANE\n  "+probeNone+"\n")
	assert.Contains(t, string(render(t, rep, "html")), "<p>None: no data-plane probe recorded in the compared steps.</p>")
}
