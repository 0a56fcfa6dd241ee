package render

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The committed runs (TestGenerateTestdata) as lab compare is given them.
var (
	sotwRunDir        = filepath.Join("testdata", "sotw")
	deltaRunDir       = filepath.Join("testdata", "delta")
	sotwLinearRunDir  = filepath.Join("testdata", "sotw-linear")
	deltaLinearRunDir = filepath.Join("testdata", "delta-linear")
	sotwHoldRunDir    = filepath.Join("testdata", "sotw-per-type-hold")
)

// compareRun calls Write as lab compare does, with stdout and stderr captured.
func compareRun(t *testing.T, o Request) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	o.Stdout, o.Stderr = &out, &errOut
	if o.Format == "" {
		o.Format = "text"
	}
	o.Usage = "compare (RUN_A RUN_B [RUN...] | FOLDER)"
	o.FolderOrder = []string{"sotw", "delta", "sotw-per-type-hold", "sotw-linear", "delta-linear"} // mainjob's
	err := Write(o)
	return out.String(), errOut.String(), err
}

// TestWriteMatrix: four runs, SotW and delta with each cache, give a column per run
// and findings labelled across the pairs: the removal is the protocol (the same with both
// caches), the port-change re-sends an implementation naming both caches' code.
func TestWriteMatrix(t *testing.T) {
	runs := []string{sotwRunDir, deltaRunDir, sotwLinearRunDir, deltaLinearRunDir}
	out, errOut, err := compareRun(t, Request{Runs: runs})
	require.NoError(t, err)
	assert.Empty(t, errOut)
	for _, s := range []string{
		"lab compare: A: sotw · snapshot · uniform · nack resend, B: delta · snapshot, C: sotw · linear ·\n  per-type · nack hold, D: delta · linear\n",
		"| A: sotw · snapshot · uniform · nack resend",
		"| D: delta · linear",
		"SotW and delta pairs with the same cache: A vs B (snapshot), C vs D",
		"remove-cluster, removal. Every pair, A vs B (snapshot), C vs D (linear): sotw",
		"     protocol: the same in every pair, with the SnapshotCache (A vs B) and the LinearCache (C vs D),\n",
		"port-change, redundant pushes. A vs B (snapshot): sotw re-sent unchanged LDS, RDS, CDS, delta",
		"     implementation: the cache, --sotw-versions and --nack-policy differ between A vs B (snapshot)",
		"pkg/cache/v3/linear.go",
		"pkg/cache/v3/simple.go",
	} {
		assert.Contains(t, out, s)
	}

	// Only one cache: the labels cannot be decided, and every format says so.
	out, _, err = compareRun(t, Request{Runs: []string{sotwRunDir, deltaRunDir, sotwHoldRunDir}})
	require.NoError(t, err)
	assert.Contains(t, out, "\n     unattributed: only snapshot runs given\n")
	assert.NotContains(t, out, "\n     protocol: ")

	// HTML to a file, JSON to stdout.
	file := filepath.Join(t.TempDir(), "report.html")
	out, errOut, err = compareRun(t, Request{Runs: runs, Format: "html", Out: file})
	require.NoError(t, err)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "wrote "+file+" (html, ")
	html, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(html), "<!DOCTYPE html>"))
	assert.Equal(t, 4, strings.Count(string(html), `<th class="group" colspan="12">`), "a step-table column group per run")
	assert.Contains(t, string(html), `<span class="attr attr-protocol">protocol</span>`)
	assert.Contains(t, string(html), `<span class="attr attr-implementation">implementation</span>`)

	out, _, err = compareRun(t, Request{Runs: runs, Format: "json"})
	require.NoError(t, err)
	var m struct {
		Runs []struct {
			Label, Axes string
		} `json:"runs"`
		Findings []struct {
			Step, Kind, Attribution, Basis string
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	require.Len(t, m.Runs, 4)
	assert.Equal(t, "delta · linear", m.Runs[3].Axes)
	labels := map[string]int{}
	for _, f := range m.Findings {
		labels[f.Attribution]++
	}
	assert.Positive(t, labels["protocol"])
	assert.Positive(t, labels["implementation"])
}

// TestWriteTwoRunsUnchanged: with two runs, Write prints the two-run report,
// byte for byte the committed goldens (the paths, and so the column widths, are the ones
// the goldens were rendered with).
func TestWriteTwoRunsUnchanged(t *testing.T) {
	for _, c := range []struct {
		golden, format, step string
	}{
		{"golden.txt", "text", ""},
		{"golden.md", "markdown", ""},
		{"golden.json", "json", ""},
		{"golden-invalid-route.txt", "text", "invalid-route"},
	} {
		// Width 0: --wide, as the goldens are rendered.
		out, _, err := compareRun(t, Request{Runs: []string{"testdata/sotw", "testdata/delta"}, Format: c.format, Step: c.step})
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join("testdata", c.golden))
		require.NoError(t, err)
		assert.Equal(t, string(want), out, c.golden)
	}
	// And the matrix golden, for four runs.
	out, _, err := compareRun(t, Request{Runs: []string{"testdata/sotw", "testdata/delta", "testdata/sotw-linear", "testdata/delta-linear"}})
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "golden-matrix.txt"))
	require.NoError(t, err)
	assert.Equal(t, string(want), out, "golden-matrix.txt")

	// And narrowed to 100 columns, what a pipe gets by default.
	out, _, err = compareRun(t, Request{Runs: []string{"testdata/sotw", "testdata/delta"}, Width: 100})
	require.NoError(t, err)
	want, err = os.ReadFile(filepath.Join("testdata", "golden-narrow.txt"))
	require.NoError(t, err)
	assert.Equal(t, string(want), out, "golden-narrow.txt")
}

// TestWriteBadInput: one run, a missing directory, a run given twice: one error line
// naming the run, nothing printed.
func TestWriteBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-run")
	for _, c := range []struct {
		name string
		runs []string
		want string
	}{
		{"one run", []string{sotwRunDir}, "want two or more runs, got 1 (usage: lab compare (RUN_A RUN_B [RUN...] | FOLDER))"},
		{"missing directory", []string{sotwRunDir, deltaRunDir, missing}, "run C (" + missing + "): no such file or directory"},
		{"a run twice", []string{sotwRunDir, deltaRunDir, sotwRunDir}, "run C (" + sotwRunDir + ") is run A (" + sotwRunDir + ") again: give each run once"},
		{"a run and its xds.log in a matrix", []string{sotwRunDir, deltaRunDir, filepath.Join(sotwRunDir, "xds.log")},
			"run C (" + filepath.Join(sotwRunDir, "xds.log") + ") is run A (" + sotwRunDir + ") again: give each run once"},
		{"too many", slices.Repeat([]string{sotwRunDir}, 27), "want at most 26 runs, got 27"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, err := compareRun(t, Request{Runs: c.runs})
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			assert.Empty(t, out)
			assert.Empty(t, errOut)
		})
	}
}

// TestWriteFolderOfRuns: a folder whose subdirectories are runs (as make lab writes)
// stands for those runs in make lab's order (then by name), and stderr says which it took; the report is the
// one for the runs given one by one. A folder with no run in it is one clear line.
func TestWriteFolderOfRuns(t *testing.T) {
	folder := t.TempDir()
	for name, run := range map[string]string{"sotw": sotwRunDir, "delta": deltaRunDir} {
		abs, err := filepath.Abs(run)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(abs, filepath.Join(folder, name)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(folder, "report.html"), nil, 0o644)) // not a run
	require.NoError(t, os.Mkdir(filepath.Join(folder, "not-applicable"), 0o755))       // no xds.log

	out, errOut, err := compareRun(t, Request{Runs: []string{folder}})
	require.NoError(t, err)
	assert.Equal(t, "lab compare: "+folder+": 2 runs, in make lab's order, then by name: A sotw, B delta\n", errOut)
	want, _, err := compareRun(t, Request{Runs: []string{filepath.Join(folder, "sotw"), filepath.Join(folder, "delta")}})
	require.NoError(t, err)
	assert.Equal(t, want, out)

	// Beside another run, the folder's runs take the next labels.
	_, errOut, err = compareRun(t, Request{Runs: []string{filepath.Join(sotwRunDir, "..", "sotw-linear"), folder}})
	require.NoError(t, err)
	assert.Equal(t, "lab compare: "+folder+": 2 runs, in make lab's order, then by name: B sotw, C delta\n", errOut)

	// A scale.json in the folder is its scale sweep, shown without --scale.
	assert.Equal(t, "", (&Request{Runs: []string{folder}}).folderScale())
	require.NoError(t, os.WriteFile(filepath.Join(folder, "scale.json"), nil, 0o644))
	assert.Equal(t, filepath.Join(folder, "scale.json"), (&Request{Runs: []string{folder}}).folderScale())
	require.NoError(t, os.Remove(filepath.Join(folder, "scale.json")))

	empty := t.TempDir()
	_, _, err = compareRun(t, Request{Runs: []string{empty}})
	assert.EqualError(t, err, empty+": no xds.log, and no subdirectory with one (want a run directory, an xds.log, or a folder of runs)")
}

// TestWriteSameRunWarns: two runs that are one (the same directory, or a directory and
// its xds.log) are compared, with one warning line on stderr that every difference will
// be zero; the report is the one of two distinct copies.
func TestWriteSameRunWarns(t *testing.T) {
	log := filepath.Join(sotwRunDir, "xds.log")
	want := "lab compare: warning: A and B are the same run (" + log + "): every difference will be zero\n"
	for _, runs := range [][]string{{sotwRunDir, sotwRunDir}, {sotwRunDir, log}} {
		out, errOut, err := compareRun(t, Request{Runs: runs})
		require.NoError(t, err)
		assert.Equal(t, want, errOut, "%v", runs)
		assert.Contains(t, out, "lab compare: A sotw vs B sotw\n")
		assert.Contains(t, out, "No total differs")
	}
	// A comparison that fails says nothing of it.
	_, errOut, err := compareRun(t, Request{Runs: []string{sotwRunDir, sotwRunDir}, Step: "warp"})
	require.Error(t, err)
	assert.Empty(t, errOut)
}
