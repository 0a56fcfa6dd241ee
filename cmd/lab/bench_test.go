package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/bench"
	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
)

func execBench(t *testing.T, args ...string) (string, error) {
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
		"zero clusters":         {[]string{"--clusters", "0"}, "--clusters 0: outside 1-100000 (want a comma list of cluster counts >= 1, e.g. 10,100)"},
		"negative clusters":     {[]string{"--clusters", "10,-1"}, "--clusters 10,-1: -1 is outside 1-100000 (want a comma list of cluster counts >= 1, e.g. 10,100)"},
		"clusters not numbers":  {[]string{"--clusters", "abc"}, "--clusters abc: not a whole number (want a comma list of cluster counts >= 1, e.g. 10,100)"},
		"one cluster word":      {[]string{"--clusters", "10,ten"}, "--clusters 10,ten: ten is not a whole number (want a comma list of cluster counts >= 1, e.g. 10,100)"},
		"clusters twice":        {[]string{"--clusters", "10,10"}, "--clusters 10,10: 10 is listed twice (want a comma list of cluster counts >= 1, e.g. 10,100)"},
		"clusters empty":        {[]string{"--clusters", ""}, `--clusters "": not a whole number (want a comma list of cluster counts >= 1, e.g. 10,100)`},
		"zero repeat":           {[]string{"--repeat", "0"}, "--repeat 0: outside 1-1000"},
		"repeat word":           {[]string{"--repeat", "many"}, "--repeat many: not a whole number (want 1-1000)"},
		"too many clients":      {[]string{"--client", "sim", "--clients", "1001"}, "--clients 1001: outside 1-1000"},
		"zero clients":          {[]string{"--client", "sim", "--clients", "0"}, "--clients 0: outside 1-1000"},
		"fan-out with envoy":    {[]string{"--client", "envoy", "--clients", "2"}, "--clients 2: more than one client needs --client sim (the bench runs one Envoy)"},
		"zero envoys":           {[]string{"--envoys", "0"}, "--envoys 0: outside 1-100"},
		"unknown through":       {[]string{"--through", "proxy"}, "--through proxy: unknown way (want direct or tap)"},
		"through twice":         {[]string{"--through", "tap,tap"}, "--through tap,tap: tap is listed twice"},
		"too many envoys":       {[]string{"--envoys", "11"}, "--envoys 11: outside 1-10 (up to 100 with --client grpc)"},
		"too many grpc clients": {[]string{"--client", "grpc", "--envoys", "101"}, "--envoys 101: outside 1-100"},
		"grpc with delta":       {[]string{"--client", "grpc", "--modes", "sotw,delta"}, "--modes sotw,delta: with --client grpc: " + grpcclient.ErrNoDelta.Error() + "; want --modes sotw"},
		"grpc with route":       {[]string{"--client", "grpc", "--workload", "route"}, "--workload route: --client grpc runs the endpoint workload only (the others prove the change by Envoy's server header or 404)"},
		"grpc with clients":     {[]string{"--client", "grpc", "--clients", "3"}, "--clients 3: more than one client needs --client sim (the bench runs one Envoy)"},
		"envoys word":           {[]string{"--envoys", "ten"}, "--envoys ten: not a whole number (want 1-100)"},
		"envoys with clients":   {[]string{"--client", "sim", "--clients", "2", "--envoys", "3"}, "--envoys 3: cannot be combined with --clients 2 (want several Envoys, or fan-out clients with --client sim)"},
		"envoys with clients, envoy client": {[]string{"--clients", "2", "--envoys", "3"},
			"--envoys 3: cannot be combined with --clients 2 (want several Envoys, or fan-out clients with --client sim)"},
		"envoys with sim":      {[]string{"--client", "sim", "--envoys", "2"}, "--envoys 2: more than one Envoy needs --client envoy (got --client sim)"},
		"unknown envoy stats":  {[]string{"--envoy-stats", "none"}, "--envoy-stats none: unknown Envoy stats setting (want all or no-scaled-clusters)"},
		"envoy stats with sim": {[]string{"--client", "sim", "--envoy-stats", "no-scaled-clusters"}, "--envoy-stats no-scaled-clusters: needs --client envoy (got --client sim)"},
		"unknown unprobed":     {[]string{"--unprobed", "live"}, "--unprobed live: unknown unprobed setting (want dead-port or no-endpoints)"},
		"unknown client":       {[]string{"--client", "nginx"}, "--client nginx: unknown data plane (want envoy, grpc or sim)"},
		"unknown mode":         {[]string{"--modes", "sotw,incremental"}, "--modes sotw,incremental: incremental: unknown protocol (want sotw or delta)"},
		"mode twice":           {[]string{"--modes", "delta,delta"}, "--modes delta,delta: delta is listed twice"},
		"unknown strategy":     {[]string{"--sotw-versions", "lazy"}, "--sotw-versions lazy: unknown version strategy (want uniform or per-type)"},
		"strategy w/o sotw":    {[]string{"--modes", "delta", "--sotw-versions", "uniform"}, "--sotw-versions uniform: SotW only (want sotw in --modes, or no --sotw-versions)"},
		"timeout zero":         {[]string{"--timeout", "0s"}, "--timeout 0s: outside 1s-1h"},
		"timeout negative":     {[]string{"--timeout", "-1m"}, "--timeout -1m: outside 1s-1h"},
		"timeout word":         {[]string{"--timeout", "later"}, "--timeout later: not a duration (want 1s-1h, e.g. 45s or 2m)"},
		"positional argument":  {[]string{"extra"}, "extra: unexpected argument (usage: lab bench [flags])"},
		"unknown cache":        {[]string{"--cache", "lru"}, "--cache lru: unknown cache (want snapshot, snapshot-noads, linear or indexed)"},
		"one unknown cache":    {[]string{"--cache", "snapshot,lru"}, "--cache snapshot,lru: lru: unknown cache (want snapshot, snapshot-noads, linear or indexed)"},
		"cache twice":          {[]string{"--cache", "linear,linear"}, "--cache linear,linear: linear is listed twice"},
		"cache empty":          {[]string{"--cache", ""}, `--cache "": empty (want snapshot, snapshot-noads, linear or indexed)`},
		"unknown workload":     {[]string{"--workload", "cluster-move"}, "--workload cluster-move: unknown workload (want endpoint, cluster-add, cluster-remove, route or listener)"},
		"one unknown workload": {[]string{"--workload", "route,cluster-move"}, "--workload route,cluster-move: cluster-move: unknown workload (want endpoint, cluster-add, cluster-remove, route or listener)"},
		"workload twice":       {[]string{"--workload", "route,endpoint,route"}, "--workload route,endpoint,route: route is listed twice"},
		"linear uniform": {[]string{"--cache", "linear", "--modes", "sotw", "--sotw-versions", "uniform"},
			"--sotw-versions uniform: needs --cache snapshot: each LinearCache versions its own type (want per-type with --cache linear, or --cache snapshot,linear)"},
		"linear uniform with delta": {[]string{"--cache", "linear", "--sotw-versions", "uniform"},
			"--sotw-versions uniform: needs --cache snapshot: each LinearCache versions its own type (want per-type with --cache linear, or --cache snapshot,linear)"},
		"route on one cluster": {[]string{"--workload", "route", "--clusters", "1,10"}, "--clusters 1,10: the route workload points route 0 at cluster 1 (want every count at least 2)"},
		"remove them all": {[]string{"--workload", "endpoint,cluster-remove", "--clusters", "5,100", "--repeat", "5"},
			"--repeat 5: the cluster-remove workload removes one cluster per repeat and keeps one (want below every --clusters count, the smallest is 5)"},
	} {
		t.Run(name, func(t *testing.T) { assertBenchRefused(t, tc.args, tc.want) })
	}
}

// TestBenchRefusesUsedOut: an --out that already holds files (an earlier bench) is
// refused like lab run's, and nothing is added to it.
func TestBenchRefusesUsedOut(t *testing.T) {
	out := t.TempDir()
	old := filepath.Join(out, "xds-delta-N5.log")
	require.NoError(t, os.WriteFile(old, []byte("from an earlier bench\n"), 0o644))
	stdout, err := execBench(t, "--client", "sim", "--clusters", "5", "--repeat", "1", "--modes", "delta", "--out", out)
	require.Error(t, err)
	assert.Equal(t, "--out "+out+": already holds a file (xds-delta-N5.log) (want a new or empty directory)", err.Error())
	assert.Empty(t, stdout, "nothing started")
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing written beside the earlier bench's file")

	file := filepath.Join(t.TempDir(), "bench.json")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = execBench(t, "--client", "sim", "--out", file)
	assert.EqualError(t, err, "--out "+file+": not a directory (want a new or empty directory)")
}

func TestBenchSimulatedRun(t *testing.T) {
	out := t.TempDir()
	stdout, err := execBench(t, "--client", "sim", "--clusters", "5", "--repeat", "1", "--modes", "delta,sotw", "--sotw-versions", "per-type", "--out", out)
	require.NoError(t, err, stdout)
	for _, want := range []string{"[endpoint N=5 delta] initial:", "[endpoint N=5 sotw-per-type] repeat 1/1:", "What one change sends", "SotW ÷ delta"} {
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
	assert.Contains(t, cmd.Example, "--cache snapshot,linear")
}

// parseBench runs `lab bench args` up to the run function and returns the options it
// was given.
func parseBench(t *testing.T, args ...string) benchcore.Options {
	t.Helper()
	var got *benchcore.Options
	cmd := newBenchCmdWith(func(_ context.Context, o benchcore.Options, _ io.Writer) error {
		got = &o
		return nil
	})
	cmd.SetArgs(append(args, "--out", t.TempDir()))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	require.NoError(t, cmd.Execute())
	require.NotNil(t, got, "the run function was called")
	return *got
}

// TestBenchCacheAndWorkloadFlags: the defaults are today's bench (the snapshot cache,
// the endpoint change); lists keep their order.
func TestBenchCacheAndWorkloadFlags(t *testing.T) {
	o := parseBench(t)
	assert.Equal(t, []publish.Cache{publish.SnapshotCache}, o.Caches)
	assert.Equal(t, []string{benchcore.WorkloadEndpoint}, o.Workloads)

	o = parseBench(t, "--cache", "linear,snapshot", "--workload", "listener,cluster-add")
	assert.Equal(t, []publish.Cache{publish.LinearCache, publish.SnapshotCache}, o.Caches)
	assert.Equal(t, []string{benchcore.WorkloadListener, benchcore.WorkloadClusterAdd}, o.Workloads)

	// The SnapshotCache without the ADS rule is a cache of its own on the axis.
	o = parseBench(t, "--cache", "snapshot,snapshot-noads")
	assert.Equal(t, []publish.Cache{publish.SnapshotCache, publish.SnapshotCacheNoADS}, o.Caches)

	// Linear alone with the default strategies (both): accepted, uniform is skipped.
	o = parseBench(t, "--cache", "linear")
	assert.Equal(t, []publish.VersionStrategy{publish.Uniform, publish.PerType}, o.SotWVersions)
}

// TestBenchThroughFlag: direct by default with no tap command; with tap the CLI runs
// each tap as its own executable's `lab tap` subprocess.
func TestBenchThroughFlag(t *testing.T) {
	o := parseBench(t)
	assert.Equal(t, []string{benchcore.ThroughDirect}, o.Through)
	assert.Empty(t, o.TapCommand)

	o = parseBench(t, "--through", "direct,tap")
	assert.Equal(t, []string{benchcore.ThroughDirect, benchcore.ThroughTap}, o.Through)
	exe, err := os.Executable()
	require.NoError(t, err)
	assert.Equal(t, []string{exe}, o.TapCommand)
}

// TestRunBenchLinear calls the run function directly: the linear series run, the
// skipped uniform one is a note, and bench.json records cache and workload.
func TestRunBenchLinear(t *testing.T) {
	out := t.TempDir()
	var progress bytes.Buffer
	err := runBench(context.Background(), benchcore.Options{
		Clusters: []int{5}, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes, SotWVersions: benchcore.DefaultVersions,
		Caches: []publish.Cache{publish.LinearCache}, Workloads: []string{benchcore.WorkloadClusterRemove}, Repeat: 1, Out: out,
	}, &progress)
	require.NoError(t, err, progress.String())
	assert.Contains(t, progress.String(), "bench: note: sotw-uniform is not run with --cache linear")
	rep, err := bench.ReadReport(filepath.Join(out, "bench.json"))
	require.NoError(t, err)
	var got []string
	for _, c := range rep.Configs {
		got = append(got, c.Workload+" "+c.Cache+" "+c.Series)
	}
	assert.Equal(t, []string{"cluster-remove linear sotw-per-type/linear", "cluster-remove linear delta/linear"}, got)
	for _, f := range []string{"xds-cluster-remove-sotw-per-type-linear-N5.log", "xds-cluster-remove-delta-linear-N5.log"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
}

// makeTargetArgs reads the lab bench command line of a Makefile target, with its
// BENCH_* variables' defaults filled in and without --out (the evidence directory with a
// date; parseBench gives its own).
func makeTargetArgs(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	vars := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if name, value, ok := strings.Cut(line, "?="); ok && strings.HasPrefix(name, "BENCH_") {
			vars["$("+strings.TrimSpace(name)+")"] = strings.TrimSpace(value)
		}
	}
	_, target, ok := strings.Cut(string(b), "\n"+name+": ")
	require.True(t, ok, "Makefile has a %s target", name)
	target, _, _ = strings.Cut(target, "\n\n")
	target = strings.ReplaceAll(target, "\\\n", " ")
	var args []string
	for _, line := range strings.Split(target, "\n") {
		if _, cmd, ok := strings.Cut(line, "$(LAB) bench "); ok {
			cmd, _, _ = strings.Cut(cmd, " --out ")
			for _, f := range strings.Fields(cmd) {
				if v, ok := vars[f]; ok {
					f = v
				}
				args = append(args, f)
			}
		}
	}
	require.NotEmpty(t, args, "the %s target runs lab bench", name)
	return args
}

// TestMakeBench: `make bench` runs every cache, every series, the endpoint and
// cluster-add workloads up to N = 10,000, with flags lab bench accepts.
func TestMakeBench(t *testing.T) {
	o := parseBench(t, makeTargetArgs(t, "bench")...)
	assert.Equal(t, benchcore.ClientEnvoy, o.Client)
	assert.Equal(t, []publish.Cache{publish.SnapshotCache, publish.LinearCache, publish.IndexedCache}, o.Caches)
	assert.Equal(t, []string{benchcore.WorkloadEndpoint, benchcore.WorkloadClusterAdd}, o.Workloads)
	assert.Equal(t, benchcore.DefaultModes, o.Modes, "every protocol")
	assert.Equal(t, []publish.VersionStrategy{publish.Uniform, publish.PerType}, o.SotWVersions, "every SotW strategy")
	assert.Equal(t, 10_000, slices.Max(o.Clusters))
	assert.Equal(t, 1, o.Envoys)
}

// TestMakeBenchFanout: `make bench-fanout` runs ten Envoys at N = 1,000, both caches,
// the endpoint change, 5 repeats, with flags lab bench accepts.
func TestMakeBenchFanout(t *testing.T) {
	o := parseBench(t, makeTargetArgs(t, "bench-fanout")...)
	assert.Equal(t, benchcore.ClientEnvoy, o.Client)
	assert.Equal(t, 10, o.Envoys)
	assert.Equal(t, 1, o.Clients)
	assert.Equal(t, []int{1000}, o.Clusters)
	assert.Equal(t, []publish.Cache{publish.SnapshotCache, publish.LinearCache}, o.Caches)
	assert.Equal(t, []string{benchcore.WorkloadEndpoint}, o.Workloads)
	assert.Equal(t, 5, o.Repeat)
	assert.Equal(t, benchcore.DefaultModes, o.Modes, "every protocol")
}

// TestBenchEnvoysFlag: --envoys reaches the options; one Envoy is the default.
func TestBenchEnvoysFlag(t *testing.T) {
	assert.Equal(t, 1, parseBench(t).Envoys)
	o := parseBench(t, "--envoys", "10", "--clusters", "1000")
	assert.Equal(t, 10, o.Envoys)
	assert.Equal(t, benchcore.ClientEnvoy, o.Client)
	assert.Contains(t, newBenchCmd().Example, "--envoys 10")
}

// TestRunBenchRefusesFleetWithoutEnvoy calls the run function directly: the library
// refuses several Envoys without --client envoy, or beside fan-out clients, before it
// starts anything or writes a file.
func TestRunBenchRefusesFleetWithoutEnvoy(t *testing.T) {
	for _, tc := range []struct {
		o    benchcore.Options
		want string
	}{
		{benchcore.Options{Client: benchcore.ClientSim, Envoys: 3}, "--envoys 3: more than one Envoy needs --client envoy"},
		{benchcore.Options{Client: benchcore.ClientSim, Envoys: 3, Clients: 4}, "--envoys 3 with --clients 4"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		var progress bytes.Buffer
		o := tc.o
		o.Clusters, o.Modes, o.Repeat, o.Out = []int{5}, []protocol.Mode{"delta"}, 1, out
		err := runBench(context.Background(), o, &progress)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
		assert.Empty(t, progress.String(), "nothing started")
		assert.NoDirExists(t, out, "nothing written")
	}
}

// --cpuprofile writes one profile per configuration, over its changes: a gzipped pprof
// protobuf (what go tool pprof reads).
func TestBenchCPUProfile(t *testing.T) {
	out := t.TempDir()
	stdout, err := execBench(t, "--client", "sim", "--clusters", "200", "--repeat", "20", "--modes", "delta", "--cache", "linear", "--cpuprofile", "--out", out)
	require.NoError(t, err, stdout)
	path := filepath.Join(out, "cpu-delta-linear-N200.pprof")
	b, err := os.ReadFile(path)
	require.NoError(t, err, "files: %v", dirNames(t, out))
	require.Greater(t, len(b), 2)
	assert.Equal(t, []byte{0x1f, 0x8b}, b[:2], "gzip, as pprof writes it")
	var profiles []string
	for _, n := range dirNames(t, out) {
		if strings.HasSuffix(n, ".pprof") {
			profiles = append(profiles, n)
		}
	}
	assert.Equal(t, []string{"cpu-delta-linear-N200.pprof"}, profiles, "one per configuration")
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// assertBenchRefused: lab bench with args fails with want, prints nothing and writes
// nothing into its --out.
func assertBenchRefused(t *testing.T, args []string, want string) {
	t.Helper()
	out := t.TempDir()
	stdout, err := execBench(t, append(args, "--out", out)...)
	require.Error(t, err)
	assert.Equal(t, want, err.Error())
	assert.Empty(t, stdout, "nothing started")
	entries, _ := os.ReadDir(out)
	assert.Empty(t, entries, "a refused command writes nothing")
}

// TestMakeBench100k: `make bench-100k` runs every cache at N = 100,000 with a flag set
// lab bench accepts.
func TestMakeBench100k(t *testing.T) {
	o := parseBench(t, makeTargetArgs(t, "bench-100k")...)
	assert.Equal(t, []publish.Cache{publish.SnapshotCache, publish.LinearCache, publish.IndexedCache}, o.Caches)
	assert.Equal(t, []int{100_000}, o.Clusters)
	assert.Equal(t, "no-scaled-clusters", o.EnvoyStats, "the 100,000 clusters' stats left out (docs/performance.md)")
	assert.Equal(t, benchcore.DefaultModes, o.Modes, "every protocol")
}
