package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{[]string{"compare"}, "want two runs (usage: lab compare RUN_A RUN_B [flags])"},
		{[]string{"compare", sotwRunDir}, "want two runs, got 1 (usage: lab compare RUN_A RUN_B [flags])"},
		{[]string{"compare", sotwRunDir, deltaRunDir, deltaRunDir}, "want two runs, got 3 (usage: lab compare RUN_A RUN_B [flags])"},
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
