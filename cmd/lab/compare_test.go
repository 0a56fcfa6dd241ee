package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xds-workbench/lab/experiments/compare/render"
	"github.com/xds-workbench/lab/experiments/mainjob"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/runner"
)

// The committed pair of experiments/compare (the teaching scenario run with the simulated
// client: go test ./experiments/compare -run TestGenerateTestdata -update).
var (
	sotwRunDir  = filepath.Join("..", "..", "experiments", "compare", "testdata", "sotw")
	deltaRunDir = filepath.Join("..", "..", "experiments", "compare", "testdata", "delta")
)

// runLab executes the CLI as main does and returns stdout, stderr and the error.
func runLab(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

// TestCompareBadInput: each bad run gives exactly one clear error line and no output.
func TestCompareBadInput(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, content string) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "xds.log"), []byte(content), 0o644))
		return d
	}
	cases := map[string]struct {
		run  string
		want string
	}{
		"missing directory": {filepath.Join(dir, "no-such-run"), "run B (" + filepath.Join(dir, "no-such-run") + "): no such file or directory"},
		"empty xds.log":     {mk("empty", ""), "xds.log is empty"},
		"truncated xds.log": {mk("truncated", `{"ts":"2026-11-29T16:46:26.5Z","event":"publish","mo`),
			"xds.log has no valid event (1 lines skipped; first: line 1: unexpected end of JSON input)"},
		"unknown mode": {mk("grpc", `{"ts":"2026-11-29T16:46:26.5Z","event":"publish","mode":"grpc","step":"initial","version":"1"}`+"\n"),
			`xds.log has no valid event (1 lines skipped; first: line 1: unknown mode "grpc")`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out, _, err := runLab(t, "compare", sotwRunDir, c.run)
			require.Error(t, err)
			msg := err.Error()
			assert.Contains(t, msg, c.want)
			assert.True(t, strings.HasPrefix(msg, "run B ("+c.run+"): "), "the error names the run: %s", msg)
			assert.NotContains(t, msg, "\n", "one line")
			assert.Less(t, len(msg), 300, "one readable line")
			assert.Empty(t, out, "nothing is printed on error")
		})
	}
	// Run A is checked first and named as such.
	_, _, err := runLab(t, "compare", filepath.Join(dir, "nope"), deltaRunDir)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "run A ("), err.Error())
}

// TestCompareBadFlags: bad arguments and flags are one line each, and nothing is printed.
func TestCompareBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare"}, "want two or more runs, or a folder of runs (usage: lab compare (RUN_A RUN_B [RUN...] | FOLDER) [flags])"},
		{[]string{"compare", sotwRunDir}, "want two or more runs, got 1 (usage: lab compare (RUN_A RUN_B [RUN...] | FOLDER))"},
		{[]string{"compare", sotwRunDir, deltaRunDir, deltaRunDir}, "run C (" + deltaRunDir + ") is run B (" + deltaRunDir + ") again: give each run once"},
		{[]string{"compare", sotwRunDir, deltaRunDir, "--format", "pdf"}, `--format pdf: unknown format (want text, markdown, json or html)`},
		{[]string{"compare", sotwRunDir, deltaRunDir, "--format", ""}, `--format "": unknown format (want text, markdown, json or html)`},
		{[]string{"compare", sotwRunDir, deltaRunDir, "--format"}, `--format: needs a value (see lab compare --help)`},
		{[]string{"compare", sotwRunDir, deltaRunDir, "--step", "warp"}, `step "warp" is not in both runs (shared steps: initial, port-change, invalid-route, recover, envoy-restart, control-plane-restart, remove-cluster, restore)`},
	} {
		out, _, err := runLab(t, c.args...)
		require.Error(t, err, "%v", c.args)
		assert.Equal(t, c.want, err.Error())
		assert.Empty(t, out)
	}
}

// TestCompareFormats: each format through the CLI, and --out.
func TestCompareFormats(t *testing.T) {
	out, _, err := runLab(t, "compare", sotwRunDir, deltaRunDir)
	require.NoError(t, err)
	for _, s := range []string{"STEPS", "VERSIONS", "FINDINGS", "200 v2 SIMULATED", "remove-cluster: A sotw removed `inventory` by absence (CDS)"} {
		assert.Contains(t, out, s)
	}

	out, _, err = runLab(t, "compare", sotwRunDir, deltaRunDir, "--format", "markdown", "--step", "port-change")
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(out, "```mermaid"))

	out, _, err = runLab(t, "compare", sotwRunDir, deltaRunDir, "--format", "json")
	require.NoError(t, err)
	var rep struct {
		SharedSteps []string `json:"shared_steps"`
		Headline    struct {
			Text, Attribution string
		} `json:"headline"`
		Findings []struct {
			Step, Kind, Text, Attribution, Source string
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Len(t, rep.SharedSteps, 8, "the whole teaching scenario")
	assert.NotEmpty(t, rep.Headline.Text)
	assert.NotEmpty(t, rep.Findings)
	for _, f := range rep.Findings {
		assert.Contains(t, []string{"protocol", "implementation"}, f.Attribution, f.Text)
		assert.NotEmpty(t, f.Source, f.Text)
	}

	// A bare xds.log path works too.
	out, _, err = runLab(t, "compare", filepath.Join(sotwRunDir, "xds.log"), filepath.Join(deltaRunDir, "xds.log"), "--format", "json")
	require.NoError(t, err)
	assert.Contains(t, out, `"options_known": true`, "run.json beside a file named xds.log is read")

	file := filepath.Join(t.TempDir(), "report.html")
	out, errOut, err := runLab(t, "compare", sotwRunDir, deltaRunDir, "--format", "html", "--out", file)
	require.NoError(t, err)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "wrote "+file)
	html, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(html), "<!DOCTYPE html>"))
	assert.NotContains(t, string(html), "<script")
}

// TestCompareCmdParsesOnly: the command only turns the command line into options.
func TestCompareCmdParsesOnly(t *testing.T) {
	var got *render.Request
	cmd := newCompareCmdWith(func(r render.Request) error { got = &r; return nil })
	cmd.SetArgs([]string{"a", "b", "c", "--format", "html", "--out", "r.html", "--step", "recover", "--session-a", "2"})
	require.NoError(t, cmd.Execute())
	require.NotNil(t, got)
	assert.Equal(t, []string{"a", "b", "c"}, got.Runs)
	assert.Equal(t, "html", got.Format)
	assert.Equal(t, "r.html", got.Out)
	assert.Equal(t, "recover", got.Step)
	assert.Equal(t, 2, got.SessionA)
	assert.Zero(t, got.SessionB)
	assert.Equal(t, mainjob.ConfigNames(), got.FolderOrder, "a folder of runs in make lab's order")
}

// TestCompareExitCodes: through main's execute, a refused comparison is one line and
// exit code 1; a folder of runs is one argument; a run given twice warns on stderr and
// keeps stdout the report alone (render.Write's own cases are tested there).
func TestCompareExitCodes(t *testing.T) {
	code, stdout, stderr := execLab("compare", sotwRunDir)
	assert.Equal(t, 1, code)
	assert.Equal(t, "lab compare: want two or more runs, got 1 (usage: lab compare (RUN_A RUN_B [RUN...] | FOLDER))\n", stderr)
	assert.Empty(t, stdout)
	code, stdout, stderr = execLab("compare", sotwRunDir, deltaRunDir, sotwRunDir)
	assert.Equal(t, 1, code)
	assert.Equal(t, "lab compare: run C ("+sotwRunDir+") is run A ("+sotwRunDir+") again: give each run once\n", stderr)
	assert.Empty(t, stdout)

	folder := t.TempDir()
	for name, run := range map[string]string{"sotw": sotwRunDir, "delta": deltaRunDir} {
		abs, err := filepath.Abs(run)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(abs, filepath.Join(folder, name)))
	}
	code, stdout, stderr = execLab("compare", "--format", "json", folder)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"shared_steps"`)
	assert.Equal(t, "lab compare: "+folder+": 2 runs, in make lab's order, then by name: A sotw, B delta\n", stderr)

	out, errOut, err := runLab(t, "compare", "--format", "json", sotwRunDir, sotwRunDir)
	require.NoError(t, err)
	assert.Equal(t, "lab compare: warning: A and B are the same run ("+filepath.Join(sotwRunDir, "xds.log")+"): every difference will be zero\n", errOut)
	assert.True(t, json.Valid([]byte(out)), "stdout is the report alone")
}

// TestCompareNoStep: --step "(no step)" selects the events before the first step.
func TestCompareNoStep(t *testing.T) {
	dir := t.TempDir()
	var runs []string
	for _, src := range []string{sotwRunDir, deltaRunDir} {
		b, err := os.ReadFile(filepath.Join(src, "xds.log"))
		require.NoError(t, err)
		d := filepath.Join(dir, filepath.Base(src))
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "xds.log"), []byte(strings.ReplaceAll(string(b), `"step":"initial"`, `"step":""`)), 0o644))
		runs = append(runs, d)
	}
	out, _, err := runLab(t, append([]string{"compare", "--step", "(no step)"}, runs...)...)
	require.NoError(t, err)
	assert.Contains(t, out, "selected step: (no step)\n")
	assert.Contains(t, out, "\nSEQUENCE (no step)\n")
}

// TestCompareWidthFlags: --width and --wide reach the options; the default is COLUMNS
// or 100 when the output is no terminal; bad values are one line each.
func TestCompareWidthFlags(t *testing.T) {
	parse := func(t *testing.T, args ...string) (*render.Request, error) {
		var got *render.Request
		cmd := newCompareCmdWith(func(r render.Request) error { got = &r; return nil })
		cmd.SetArgs(append([]string{"a", "b"}, args...))
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		return got, cmd.Execute()
	}
	t.Setenv("COLUMNS", "")
	o, err := parse(t)
	require.NoError(t, err)
	assert.Equal(t, 100, o.Width, "no terminal, no COLUMNS")
	t.Setenv("COLUMNS", "132")
	o, err = parse(t)
	require.NoError(t, err)
	assert.Equal(t, 132, o.Width)
	o, err = parse(t, "--width", "80")
	require.NoError(t, err)
	assert.Equal(t, 80, o.Width)
	o, err = parse(t, "--wide")
	require.NoError(t, err)
	assert.Zero(t, o.Width, "--wide never splits")

	assert.Equal(t, 100, defaultWidth(&bytes.Buffer{}, "12"), "a COLUMNS no table reads in is ignored")
	assert.Equal(t, 100, defaultWidth(&bytes.Buffer{}, "wide"))

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--width", "10"}, "lab compare: --width 10: outside 40-10000\n"},
		{[]string{"--width", "many"}, "lab compare: --width many: not a whole number (want 40-10000)\n"},
		{[]string{"--width", "80", "--wide"}, "lab compare: --width 80: not with --wide (want one of them)\n"},
	} {
		code, stdout, stderr := execLab(append([]string{"compare", sotwRunDir, deltaRunDir}, c.args...)...)
		assert.Equal(t, 1, code, "%v", c.args)
		assert.Equal(t, c.want, stderr)
		assert.Empty(t, stdout)
	}
}

// TestCompareExamplesNameRealPaths: every path of the help's examples is one that exists
// here (the committed runs) or one that make lab, lab run or lab serve writes.
func TestCompareExamplesNameRealPaths(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	var labRuns []string
	for _, c := range mainjob.Configs {
		labRuns = append(labRuns, c.Name)
	}
	require.Contains(t, string(mk), "$(LAB) report --out $(LAB_DIR)", "make lab is lab report")
	require.Contains(t, string(mk), "LAB_DIR := $(EVIDENCE)/lab-$(shell date -u +%Y%m%dT%H%M%SZ)")
	require.Contains(t, string(mk), "EVIDENCE  := experiments/evidence")
	// lab run's default directory, as runner.DefaultOut makes it.
	labRun := regexp.MustCompile(`^experiments/evidence/(sotw|delta)/\d{8}T\d{6}Z-\d+$`)
	require.Regexp(t, labRun, filepath.ToSlash(runner.DefaultOut("sotw")))

	ex := newCompareCmd().Example
	run := regexp.MustCompile(`(?m)^\s*run=(\S+)$`).FindStringSubmatch(ex)
	require.NotNil(t, run)
	require.Regexp(t, `^experiments/evidence/lab-\d{8}T\d{6}Z$`, run[1])
	paths := 0
	for _, line := range strings.Split(ex, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "lab compare ") {
			continue
		}
		for _, w := range strings.Fields(strings.ReplaceAll(line, "$run", run[1])) {
			switch {
			case strings.HasPrefix(w, "experiments/compare/testdata/"):
				_, err := os.Stat(filepath.Join("..", "..", w))
				assert.NoError(t, err, "committed run %s", w)
			case w == run[1]:
				// make lab's folder of runs: one argument
			case strings.HasPrefix(w, run[1]+"/"):
				assert.Contains(t, labRuns, strings.TrimPrefix(w, run[1]+"/"), "a run of make lab: %s", w)
			case strings.HasPrefix(w, "experiments/"):
				assert.Regexp(t, labRun, strings.TrimSuffix(w, "/xds.log"), "a lab run directory: %s", w)
			case w == "xds.log":
				assert.Equal(t, "xds.log", newServeCmd().Flags().Lookup("log").DefValue, "lab serve's default log")
			default:
				continue
			}
			paths++
		}
	}
	assert.GreaterOrEqual(t, paths, 10)
}

// lab compare of an Envoy run against a grpc-go run (the compare package's fixtures, real
// runs trimmed) prints the Clients section; two runs of one client do not.
func TestCompareEnvoyAgainstGRPCShowsClients(t *testing.T) {
	fixtures := filepath.Join("..", "..", "experiments", "compare", "testdata", "clients")
	out, _, err := runLab(t, "compare", filepath.Join(fixtures, "envoy"), filepath.Join(fixtures, "grpc"))
	require.NoError(t, err)
	assert.Contains(t, out, "\nCLIENTS\n")
	assert.Contains(t, out, "LDS subscription: A (Envoy) wildcard (no names); B (grpc-go) names quote-listener")
	assert.Contains(t, out, "200 v2 grpc")
	out, _, err = runLab(t, "compare", filepath.Join(fixtures, "envoy"), filepath.Join(fixtures, "envoy"))
	require.NoError(t, err)
	assert.NotContains(t, out, "\nCLIENTS\n")
}
