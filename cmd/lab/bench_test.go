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

func TestBenchFlagsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"zero clusters":        {[]string{"--clusters", "0"}, "--clusters: 0 is outside"},
		"negative clusters":    {[]string{"--clusters", "10,-1"}, "--clusters: -1 is outside"},
		"clusters not numbers": {[]string{"--clusters", "ten"}, "invalid argument"},
		"zero repeat":          {[]string{"--repeat", "0"}, "--repeat: 0"},
		"too many clients":     {[]string{"--client", "sim", "--clients", "1001"}, "--clients: 1001"},
		"zero clients":         {[]string{"--client", "sim", "--clients", "0"}, "--clients: 0"},
		"fan-out with envoy":   {[]string{"--client", "envoy", "--clients", "2"}, "needs --client sim"},
		"unknown client":       {[]string{"--client", "nginx"}, "--client: unknown"},
		"unknown mode":         {[]string{"--modes", "sotw,incremental"}, "--modes: unknown mode"},
		"unknown strategy":     {[]string{"--sotw-versions", "lazy"}, "--sotw-versions: unknown"},
		"strategy w/o sotw":    {[]string{"--modes", "delta", "--sotw-versions", "uniform"}, "--sotw-versions applies to --modes sotw only"},
		"positional argument":  {[]string{"extra"}, "unknown command"},
	} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			_, err := runBench(t, append(tc.args, "--out", out)...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
			entries, _ := os.ReadDir(out)
			assert.Empty(t, entries, "a refused command writes nothing")
		})
	}
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
