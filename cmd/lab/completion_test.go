package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/compare/render"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/sotw"
)

// complete runs cobra's hidden __complete command, what the shell scripts call, and
// returns the values it offers and its directive.
func complete(t *testing.T, args ...string) ([]string, cobra.ShellCompDirective) {
	t.Helper()
	code, stdout, stderr := execLab(append([]string{cobra.ShellCompRequestCmd}, args...)...)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.NotEmpty(t, lines)
	last := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(last, ":"), "the directive line: %q", last)
	var d int
	for _, c := range last[1:] {
		d = d*10 + int(c-'0')
	}
	return lines[:len(lines)-1], cobra.ShellCompDirective(d)
}

// Every flag with a fixed set of values completes them, on every command that has it.
func TestCompleteFlagValues(t *testing.T) {
	modes := []string{"sotw", "delta"}
	caches := []string{"snapshot", "snapshot-noads", "linear", "indexed"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--mode", ""}, modes},
		{[]string{"serve", "--mode", ""}, modes},
		{[]string{"bootstrap", "--mode", ""}, modes},
		{[]string{"sweep", "--mode", ""}, modes},
		{[]string{"run", "--cache", ""}, caches},
		{[]string{"serve", "--cache", ""}, caches},
		{[]string{"sweep", "--cache", ""}, caches},
		{[]string{"bench", "--cache", ""}, caches},
		{[]string{"bench", "--modes", ""}, modes},
		// A comma list: the next item, among those not listed yet.
		{[]string{"bench", "--modes", "sotw,"}, []string{"sotw,delta"}},
		{[]string{"compare", "--format", ""}, render.Formats},
		{[]string{"run", "--sotw-versions", ""}, []string{"uniform", "per-type"}},
		{[]string{"serve", "--nack-policy", ""}, sotw.PolicyNames()},
		{[]string{"run", "--client", ""}, []string{"envoy", "grpc", "sim", "auto"}},
		{[]string{"serve", "--client", ""}, []string{"envoy", "grpc"}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			got, d := complete(t, c.args...)
			assert.Equal(t, c.want, got)
			assert.NotZero(t, d&cobra.ShellCompDirectiveNoFileComp, "no file names among the values")
		})
	}
}

// --scenario completes the built-in pack (and all, for lab run) and the scenario files
// and directories under what is typed; lab scenarios completes its argument alike.
func TestCompleteScenario(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte("name: mine\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "more"), 0o755))
	t.Chdir(dir)
	pack := scenario.PackNames()
	require.Contains(t, pack, "teaching")

	got, d := complete(t, "run", "--scenario", "")
	assert.Equal(t, append(append(pack, "all"), "mine.yaml", "more/"), got)
	assert.NotZero(t, d&cobra.ShellCompDirectiveNoSpace, "a directory is completed further")

	got, _ = complete(t, "sweep", "--scenario", "")
	assert.Equal(t, append(pack, "mine.yaml", "more/"), got)

	got, _ = complete(t, "scenarios", "")
	assert.Equal(t, append(pack, "mine.yaml", "more/"), got)
	got, _ = complete(t, "scenarios", "teaching", "")
	assert.Empty(t, got, "one argument only")
}

// lab run --steps completes the steps of the --scenario given, as a comma list.
func TestCompleteRunSteps(t *testing.T) {
	got, _ := complete(t, "run", "--steps", "")
	assert.Equal(t, []string{"initial", "port-change", "invalid-route", "recover", "envoy-restart", "control-plane-restart", "remove-cluster", "restore"}, got)
	sc, err := scenario.Builtin("warming-order")
	require.NoError(t, err)
	got, _ = complete(t, "run", "--scenario", "warming-order", "--steps", sc.Steps[0].Name+",")
	require.Len(t, got, len(sc.Steps)-1)
	assert.Equal(t, sc.Steps[0].Name+","+sc.Steps[1].Name, got[0])
	got, _ = complete(t, "run", "--scenario", "all", "--steps", "")
	assert.Empty(t, got)
}

// lab compare --step completes the steps the runs given share, read from their xds.log.
func TestCompleteCompareStep(t *testing.T) {
	delta := filepath.Join("..", "..", "experiments", "compare", "testdata", "delta")
	sotw := filepath.Join("..", "..", "experiments", "compare", "testdata", "sotw")
	loadDelta := filepath.Join("..", "..", "experiments", "compare", "testdata", "load-delta")
	teaching := []string{"initial", "port-change", "invalid-route", "recover", "envoy-restart", "control-plane-restart", "remove-cluster", "restore"}

	got, d := complete(t, "compare", sotw, delta, "--step", "")
	assert.Equal(t, teaching, got)
	assert.NotZero(t, d&cobra.ShellCompDirectiveNoFileComp)

	// The load fixture ran the first three steps only: those are the shared ones.
	got, _ = complete(t, "compare", delta, filepath.Join(loadDelta, "xds.log"), "--step", "")
	assert.Equal(t, []string{"initial", "port-change", "invalid-route"}, got)

	// A run that cannot be read is left out; no run, no steps.
	got, _ = complete(t, "compare", delta, "/nonexistent", "--step", "")
	assert.Equal(t, teaching, got)
	got, _ = complete(t, "compare", "--step", "")
	assert.Empty(t, got)
}

// lab completion writes each shell's script.
func TestCompletionScripts(t *testing.T) {
	for shell, first := range map[string]string{"bash": "# bash completion V2 for lab", "zsh": "#compdef lab", "fish": "# fish completion for lab", "powershell": "# powershell completion for lab"} {
		t.Run(shell, func(t *testing.T) {
			code, stdout, stderr := execLab("completion", shell)
			require.Equal(t, 0, code, stderr)
			assert.True(t, strings.HasPrefix(stdout, first), "%s script starts %q: %.80q", shell, first, stdout)
		})
	}
}
