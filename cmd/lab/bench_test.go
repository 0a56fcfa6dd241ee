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

func runBench(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"bench"}, args...))
	err := root.Execute()
	return out.String(), err
}

// TestBenchFlagsRefused: every bad count, duration and name is refused before anything
// starts, in one line "--flag VALUE: what is wrong", and nothing is written.
func TestBenchFlagsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"zero clusters":        {[]string{"--clusters", "0"}, "--clusters 0: outside 1-100000 (want a comma list of cluster counts >= 1, e.g. 10,100)"},
		"negative clusters":    {[]string{"--clusters", "10,-1"}, "--clusters 10,-1: -1 is outside 1-100000 (want a comma list of cluster counts >= 1, e.g. 10,100)"},
		"clusters not numbers": {[]string{"--clusters", "abc"}, "--clusters abc: not a whole number (want a comma list of cluster counts >= 1, e.g. 10,100)"},
		"one cluster word":     {[]string{"--clusters", "10,ten"}, "--clusters 10,ten: ten is not a whole number (want a comma list of cluster counts >= 1, e.g. 10,100)"},
		"clusters twice":       {[]string{"--clusters", "10,10"}, "--clusters 10,10: 10 is listed twice (want a comma list of cluster counts >= 1, e.g. 10,100)"},
		"clusters empty":       {[]string{"--clusters", ""}, `--clusters "": not a whole number (want a comma list of cluster counts >= 1, e.g. 10,100)`},
		"zero repeat":          {[]string{"--repeat", "0"}, "--repeat 0: outside 1-1000"},
		"repeat word":          {[]string{"--repeat", "many"}, "--repeat many: not a whole number (want 1-1000)"},
		"too many clients":     {[]string{"--client", "sim", "--clients", "1001"}, "--clients 1001: outside 1-1000"},
		"zero clients":         {[]string{"--client", "sim", "--clients", "0"}, "--clients 0: outside 1-1000"},
		"fan-out with envoy":   {[]string{"--client", "envoy", "--clients", "2"}, "--clients 2: more than one client needs --client sim (the bench runs one Envoy)"},
		"unknown client":       {[]string{"--client", "nginx"}, "--client nginx: unknown data plane (want envoy or sim)"},
		"unknown mode":         {[]string{"--modes", "sotw,incremental"}, "--modes sotw,incremental: incremental: unknown protocol (want sotw or delta)"},
		"mode twice":           {[]string{"--modes", "delta,delta"}, "--modes delta,delta: delta is listed twice"},
		"unknown strategy":     {[]string{"--sotw-versions", "lazy"}, "--sotw-versions lazy: unknown version strategy (want uniform or per-type)"},
		"strategy w/o sotw":    {[]string{"--modes", "delta", "--sotw-versions", "uniform"}, "--sotw-versions uniform: SotW only (want sotw in --modes, or no --sotw-versions)"},
		"timeout zero":         {[]string{"--timeout", "0s"}, "--timeout 0s: outside 1s-1h"},
		"timeout negative":     {[]string{"--timeout", "-1m"}, "--timeout -1m: outside 1s-1h"},
		"timeout word":         {[]string{"--timeout", "later"}, "--timeout later: not a duration (want 1s-1h, e.g. 45s or 2m)"},
		"positional argument":  {[]string{"extra"}, "extra: unexpected argument (usage: lab bench [flags])"},
	} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			stdout, err := runBench(t, append(tc.args, "--out", out)...)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.Empty(t, stdout, "nothing started")
			entries, _ := os.ReadDir(out)
			assert.Empty(t, entries, "a refused command writes nothing")
		})
	}
}

// TestBenchRefusesUsedOut: an --out that already holds files (an earlier bench) is
// refused like lab run's, and nothing is added to it.
func TestBenchRefusesUsedOut(t *testing.T) {
	out := t.TempDir()
	old := filepath.Join(out, "xds-delta-N5.log")
	require.NoError(t, os.WriteFile(old, []byte("from an earlier bench\n"), 0o644))
	stdout, err := runBench(t, "--client", "sim", "--clusters", "5", "--repeat", "1", "--modes", "delta", "--out", out)
	require.Error(t, err)
	assert.Equal(t, "--out "+out+": already holds a file (xds-delta-N5.log) (want a new or empty directory)", err.Error())
	assert.Empty(t, stdout, "nothing started")
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing written beside the earlier bench's file")

	file := filepath.Join(t.TempDir(), "bench.json")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = runBench(t, "--client", "sim", "--out", file)
	assert.EqualError(t, err, "--out "+file+": not a directory (want a new or empty directory)")
}

func TestBenchSimulatedRun(t *testing.T) {
	out := t.TempDir()
	stdout, err := runBench(t, "--client", "sim", "--clusters", "5", "--repeat", "1", "--modes", "delta,sotw", "--sotw-versions", "per-type", "--out", out)
	require.NoError(t, err, stdout)
	for _, want := range []string{"[N=5 delta] initial:", "[N=5 sotw-per-type] repeat 1/1:", "What one single-endpoint change sends", "SotW ÷ delta"} {
		assert.Contains(t, stdout, want)
	}
	for _, f := range []string{"bench.json", "bench.md", "bench.svg", "xds-delta-N5.log", "xds-sotw-per-type-N5.log"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	b, err := os.ReadFile(filepath.Join(out, "bench.json"))
	require.NoError(t, err)
	var rep struct {
		Configs []struct {
			Series string `json:"series"`
		} `json:"configs"`
	}
	require.NoError(t, json.Unmarshal(b, &rep))
	var series []string
	for _, c := range rep.Configs {
		series = append(series, c.Series)
	}
	assert.Equal(t, "delta sotw-per-type", strings.Join(series, " "), "series follow --modes order")
}

func TestBenchHelpHasExample(t *testing.T) {
	cmd := newBenchCmd()
	assert.Contains(t, cmd.Example, "lab bench --client envoy --clusters 10,100,1000,10000 --repeat 5")
}
