package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xds-workbench/lab/experiments/compare"
)

// clientViewLog is one step whose checkpoint compared the client's own view with the
// log's model: line is the client_view event's own fields.
func clientViewLog(t *testing.T, label, mode, line string) *compare.Run {
	t.Helper()
	log := `{"ts":"2026-01-01T00:00:00Z","event":"step","mode":"` + mode + `","step":"initial","server":1}
{"ts":"2026-01-01T00:00:00.001Z","event":"publish","mode":"` + mode + `","step":"initial","server":1,"version":"1","resources":[{"type":"CDS","name":"inventory","hash":"h"}]}
{"ts":"2026-01-01T00:00:01Z","event":"client_view","mode":"` + mode + `","step":"initial","server":1,"stream":1,"client":"envoy",` + line + `}
`
	r, err := compare.FromLog(label, []byte(log))
	require.NoError(t, err)
	return r
}

// The versions table shows each checkpoint's client-view check, its legend the
// findings; every format, and the JSON's client_view.
func TestClientViewInVersions(t *testing.T) {
	a := clientViewLog(t, "A", "sotw", `"checked":4`)
	b := clientViewLog(t, "B", "delta", `"checked":4,"findings":["CDS/inventory: xds.log says ACKed version 2; the client says ACKED version 7"]`)
	rep, err := compare.Compare(a, b, compare.Options{})
	require.NoError(t, err)
	require.NotNil(t, rep.Versions[0].Runs[1].ClientView)
	assert.Len(t, rep.Versions[0].Runs[1].ClientView.Findings, 1)
	for _, format := range []string{"text", "markdown", "html"} {
		out := strings.Join(strings.Fields(string(render(t, rep, format))), " ") // text wraps its legends
		assert.Contains(t, out, "own view", format)
		assert.Contains(t, out, "agrees", format)
		assert.Contains(t, out, "1 finding", format)
		assert.Contains(t, out, "B initial: CDS/inventory: xds.log says ACKed version 2", format)
	}
	var back compare.Report
	require.NoError(t, json.Unmarshal(render(t, rep, "json"), &back))
	assert.Equal(t, 4, back.Versions[0].Runs[0].ClientView.Checked)

	// Runs without client views render as before: no column, the plain legend.
	plain := clientViewLog(t, "A", "sotw", `"checked":0`)
	plain.Events = plain.Events[:2]
	plain.Summary.Steps[0].ClientView = nil
	rep, err = compare.Compare(plain, plain, compare.Options{})
	require.NoError(t, err)
	out := strings.Join(strings.Fields(string(render(t, rep, "text"))), " ")
	assert.NotContains(t, out, "own view")
	assert.Contains(t, out, versionLegend)

	// A matrix shows them too.
	m, err := compare.CompareMatrix([]*compare.Run{a, b, clientViewLog(t, "C", "sotw", `"error":"read the client's view: refused"`)}, compare.Options{})
	require.NoError(t, err)
	var sb strings.Builder
	require.NoError(t, Matrix(&sb, m, "text", 0))
	mout := strings.Join(strings.Fields(sb.String()), " ")
	assert.Contains(t, mout, "not checked")
	assert.Contains(t, mout, "B initial: CDS/inventory")
}
