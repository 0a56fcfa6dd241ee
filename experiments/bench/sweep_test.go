package bench

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/chart"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/syncbuf"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// assertOptionError asserts that err is an *OptionError naming option, whose cause
// contains want, in one line.
func assertOptionError(t *testing.T, err error, option, want string) {
	t.Helper()
	var oe *benchcore.OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, option, oe.Option)
	assert.Contains(t, oe.Err.Error(), want)
	assert.NotContains(t, err.Error(), "\n")
}

func sweep(t *testing.T, o benchcore.Options) (*Report, string, string) {
	t.Helper()
	out := &syncbuf.Buffer{} // progress output written while the sweep runs
	o.Out = t.TempDir()
	o.Progress = out
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	rep, err := Run(context.Background(), o)
	require.NoError(t, err, "progress:\n%s", out.String())
	return rep, o.Out, out.String()
}

// checkStructure asserts what every change must send in each series, from wantSent
// (the xDS rules and the caches' behaviour); these are facts of the protocols and the
// library, independent of timing.
func checkStructure(t *testing.T, rep *Report, clients int) {
	t.Helper()
	for _, c := range rep.Configs {
		name := c.Workload + " " + c.Series + " N=" + itoa(c.N)
		require.Empty(t, c.Error, name)
		require.Len(t, c.Updates, rep.Options.Repeat, name)
		// The initial state reaches every client in full in every protocol and cache.
		for typ, want := range map[string]int{"CDS": c.N, "EDS": c.N, "LDS": 1, "RDS": 1} {
			assert.Equal(t, clients*want, c.Initial.ByType[typ].Resources, "%s initial %s resources", name, typ)
		}
		assert.Zero(t, c.Initial.Nacks, name)
		for i, s := range c.Updates {
			what := name + " " + s.Step
			assert.Zero(t, s.Nacks, what)
			assert.Zero(t, s.Unmatched, what)
			checkSent(t, what, wantSent(c.Workload, c.Cache, c.Mode, c.Versions, c.N, i+1), s, clients)
		}
	}
}

// checkSent compares one step's tallies with what it must send, per type, times the
// number of clients.
func checkSent(t *testing.T, what string, want map[string]sent, s Sample, clients int) {
	t.Helper()
	var types []string
	total := benchcore.TypeTally{}
	for typ, w := range want {
		got, ok := s.ByType[typ]
		if w.maybe && !ok {
			continue // a removal the cache does not always owe, not sent this time
		}
		types = append(types, typ)
		n := clients
		if w.maybe && w.responses > 0 {
			// Owed or not per client: each client races the cache (it may have dropped the
			// cluster, and so its subscription, before the removal is sent), so any of the
			// clients, at least one as the type was sent, may have got it.
			n = got.Responses / w.responses
			assert.True(t, n >= 1 && n <= clients && got.Responses%w.responses == 0, "%s %s: %d responses for %d clients", what, typ, got.Responses, clients)
		}
		exp := benchcore.TypeTally{Responses: n * w.responses, Resources: n * w.resources, Redundant: n * w.redundant, Removed: n * w.removed, Bytes: got.Bytes}
		assert.Equal(t, exp, got, "%s %s", what, typ)
		total.Responses += exp.Responses
		total.Resources += exp.Resources
		total.Redundant += exp.Redundant
		total.Removed += exp.Removed
	}
	got := make([]string, 0, len(s.ByType))
	for typ := range s.ByType {
		got = append(got, typ)
	}
	assert.ElementsMatch(t, types, got, "%s: types sent", what)
	assert.Equal(t, total.Responses, s.Responses, what)
	assert.Equal(t, total.Resources, s.Resources, what)
	assert.Equal(t, total.Redundant, s.Redundant, what)
	assert.Equal(t, total.Removed, s.Removed, what)
}

func itoa(n int) string { return strings.TrimSpace(benchcore.FmtCount(float64(n))) }

// checkFiles asserts the outputs parse: bench.json, bench.svg (XML with one group per
// series and panel), bench.md, and every xds log, whose send events agree with the
// figures.
func checkFiles(t *testing.T, rep *Report, dir string) {
	t.Helper()
	got, err := ReadReport(filepath.Join(dir, "bench.json"))
	require.NoError(t, err)
	require.Len(t, got.Configs, len(rep.Configs))
	assert.Equal(t, rep.Options, got.Options)
	assert.NotEmpty(t, got.Ratios)

	svg, err := os.ReadFile(filepath.Join(dir, "bench.svg"))
	require.NoError(t, err)
	groups := svgSeries(t, svg)
	for _, c := range rep.Configs {
		for _, p := range []string{"bytes", "time"} {
			assert.Contains(t, groups, c.Workload+"-"+p+"-"+SeriesID(c.Series), "bench.svg has no %s line for %s %s", p, c.Workload, c.Series)
		}
	}
	assert.NotContains(t, string(svg), "<script")
	assert.NotContains(t, string(svg), "href")

	md, err := os.ReadFile(filepath.Join(dir, "bench.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "SotW ÷ delta")
	assert.Contains(t, string(md), "](bench.svg)")
	for _, c := range rep.Configs {
		// Every configuration's row names its workload, cache, N and series.
		assert.Contains(t, string(md), "| "+c.Workload+" | "+c.Cache+" | "+itoa(c.N)+" | "+c.Series+" |")
	}

	for _, c := range rep.Configs {
		ev, st, err := xdslog.ReadFile(filepath.Join(dir, c.Log))
		require.NoError(t, err, c.Log)
		assert.Zero(t, st.Skipped, "%s: %s", c.Log, st.FirstSkip)
		// The meter counted what the recorder wrote.
		for _, s := range c.Updates {
			sends, res := 0, 0
			for _, e := range ev {
				if e.Event == xdslog.EventSend && e.Step == s.Step {
					sends++
					res += len(e.Resources)
				}
			}
			assert.Equal(t, s.Responses, sends, "%s %s sends in the log", c.Log, s.Step)
			assert.Equal(t, s.Resources, res, "%s %s resources in the log", c.Log, s.Step)
		}
	}
}

// svgSeries parses the SVG as XML and returns the ids of its series groups.
func svgSeries(t *testing.T, svg []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var ids []string
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "bench.svg is not well-formed XML")
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
		}
		var id, class string
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "id":
				id = a.Value
			case "class":
				class = a.Value
			}
		}
		if se.Name.Local == "g" && class == "series" {
			ids = append(ids, id)
		}
	}
	require.Equal(t, "svg", root)
	return ids
}

func TestSweepSimulated(t *testing.T) {
	rep, dir, progress := sweep(t, benchcore.Options{
		Clusters: []int{100, 10}, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes, SotWVersions: benchcore.DefaultVersions, Repeat: 1,
	})
	require.Len(t, rep.Configs, 6)
	assert.Equal(t, []int{10, 100}, rep.Options.Clusters, "cluster counts are swept in ascending order")
	checkStructure(t, rep, 1)
	checkFiles(t, rep, dir)
	for _, c := range rep.Configs {
		assert.Equal(t, publish.SnapshotCache, publish.Cache(c.Cache), "the default cache")
		assert.Equal(t, benchcore.WorkloadEndpoint, c.Workload, "the default workload")
		for i, s := range c.Updates {
			assert.Equal(t, []string{"endpoint-b", "endpoint-a"}[i%2], s.Backend)
			assert.Contains(t, s.SimulatedEndpoint, ":", "the simulated client routes the changed path")
			assert.Nil(t, s.DataPlaneMS, "no data-plane time without Envoy")
		}
		assert.FileExists(t, filepath.Join(dir, "xds-"+c.Series+"-N"+itoa(c.N)+".log"), "the endpoint workload keeps its file names")
	}
	// A line per configuration as it starts, numbered, with the time left once one is done.
	var starts []string
	for _, l := range strings.Split(progress, "\n") {
		if strings.HasPrefix(l, "[") && strings.Contains(l, "/6] ") {
			starts = append(starts, regexp.MustCompile(` \(about [0-9hms]+ left\)$`).ReplaceAllString(l, " (about T left)"))
		}
	}
	assert.Equal(t, []string{
		"[1/6] endpoint N=10 sotw-uniform",
		"[2/6] endpoint N=10 sotw-per-type (about T left)",
		"[3/6] endpoint N=10 delta (about T left)",
		"[4/6] endpoint N=100 sotw-uniform (about T left)",
		"[5/6] endpoint N=100 sotw-per-type (about T left)",
		"[6/6] endpoint N=100 delta (about T left)",
	}, starts)
	assert.Contains(t, progress, "[endpoint N=10 delta] repeat 1/1:")
	assert.Contains(t, progress, "[endpoint N=100 sotw-per-type] initial:")
	assert.Contains(t, progress, "SotW ÷ delta")
	// SotW/delta ratios are computed from the same run at every N.
	require.Len(t, rep.Ratios, 4)
	for _, r := range rep.Ratios {
		assert.Greater(t, r.Ratios["resources"], 1.0, "%s N=%d", r.Series, r.N)
	}
}

func TestSweepFanOut(t *testing.T) {
	const k = 3
	rep, dir, _ := sweep(t, benchcore.Options{
		Clusters: []int{10}, Clients: k, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes, SotWVersions: []publish.VersionStrategy{publish.Uniform}, Repeat: 1,
	})
	require.Len(t, rep.Configs, 2)
	for _, c := range rep.Configs {
		assert.Equal(t, benchcore.ClientAckOnly, c.Client)
		assert.Equal(t, k, c.StreamsOpened, c.Series)
	}
	checkStructure(t, rep, k)
	checkFiles(t, rep, dir)
}

func TestSweepEnvoy(t *testing.T) {
	envoytest.Require(t)
	rep, dir, _ := sweep(t, benchcore.Options{
		Clusters: []int{100}, Client: benchcore.ClientEnvoy, Modes: benchcore.DefaultModes, SotWVersions: benchcore.DefaultVersions, Repeat: 1,
	})
	require.Len(t, rep.Configs, 3)
	assert.NotEmpty(t, rep.EnvoyVersion)
	checkStructure(t, rep, 1)
	checkFiles(t, rep, dir)
	for _, c := range rep.Configs {
		assert.Equal(t, "/quote/0", c.Path)
		for i, s := range c.Updates {
			require.NotNil(t, s.Answer, "%s %s", c.Series, s.Step)
			assert.Equal(t, benchcore.Answer{Status: 200, Backend: []string{"endpoint-b", "endpoint-a"}[i%2], Server: "envoy"}, *s.Answer, "%s %s", c.Series, s.Step)
		}
		// The new endpoint answered a real request through Envoy, every time.
		for _, s := range append([]Sample{c.Initial}, c.Updates...) {
			require.NotNil(t, s.DataPlaneMS, "%s %s: no request answered by %s", c.Series, s.Step, s.Backend)
			assert.Positive(t, s.Polls)
			require.NotNil(t, s.EnvoyCPUMS)
			require.NotNil(t, s.EnvoyRSS)
			assert.Positive(t, *s.EnvoyRSS)
			// What Envoy read off its xDS connection includes every recorded response
			// plus gRPC and HTTP/2 framing.
			require.NotNil(t, s.EnvoyRxBytes)
			assert.GreaterOrEqual(t, *s.EnvoyRxBytes, s.Bytes, "%s %s", c.Series, s.Step)
		}
		assert.FileExists(t, filepath.Join(dir, c.EnvoyLog))
	}
}

func TestValidate(t *testing.T) {
	good := func() benchcore.Options {
		return benchcore.Options{Clusters: []int{10}, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes, SotWVersions: benchcore.DefaultVersions, Repeat: 1}
	}
	for name, tc := range map[string]struct {
		edit         func(*benchcore.Options)
		option, want string
	}{
		"no clusters":       {func(o *benchcore.Options) { o.Clusters = nil }, benchcore.OptionClusters, "give at least one cluster count"},
		"zero clusters":     {func(o *benchcore.Options) { o.Clusters = []int{0} }, benchcore.OptionClusters, "0 is outside"},
		"negative clusters": {func(o *benchcore.Options) { o.Clusters = []int{-5} }, benchcore.OptionClusters, "-5 is outside 1-100000"},
		"huge clusters":     {func(o *benchcore.Options) { o.Clusters = []int{benchcore.MaxClusters + 1} }, benchcore.OptionClusters, "100001 is outside"},
		"duplicate N":       {func(o *benchcore.Options) { o.Clusters = []int{10, 10} }, benchcore.OptionClusters, "listed twice"},
		"zero repeat":       {func(o *benchcore.Options) { o.Repeat = 0 }, benchcore.OptionRepeat, "outside 1-1000"},
		"clients 1001":      {func(o *benchcore.Options) { o.Clients = 1001 }, benchcore.OptionClients, "outside 1-1000"},
		"negative clients":  {func(o *benchcore.Options) { o.Clients = -1 }, benchcore.OptionClients, "outside 1-1000"},
		"fan-out envoy":     {func(o *benchcore.Options) { o.Clients, o.Client = 2, benchcore.ClientEnvoy }, benchcore.OptionClients, "needs the simulated client"},
		"unknown client":    {func(o *benchcore.Options) { o.Client = "curl" }, benchcore.OptionClient, "unknown client"},
		"unknown mode":      {func(o *benchcore.Options) { o.Modes = []protocol.Mode{"incremental"} }, benchcore.OptionModes, "unknown mode"},
		"no modes":          {func(o *benchcore.Options) { o.Modes = nil }, benchcore.OptionModes, "give sotw, delta or both"},
		"duplicate mode":    {func(o *benchcore.Options) { o.Modes = []protocol.Mode{"delta", "delta"} }, benchcore.OptionModes, "listed twice"},
		"unknown strategy":  {func(o *benchcore.Options) { o.SotWVersions = []publish.VersionStrategy{"lazy"} }, benchcore.OptionSotWVersions, "unknown"},
		"no strategy":       {func(o *benchcore.Options) { o.SotWVersions = nil }, benchcore.OptionSotWVersions, "give uniform, per-type or both"},
		"negative timeout":  {func(o *benchcore.Options) { o.Timeout = -time.Second }, benchcore.OptionTimeout, "negative"},
		"unknown cache":     {func(o *benchcore.Options) { o.Caches = []publish.Cache{"lru"} }, benchcore.OptionCaches, `unknown cache "lru"`},
		"empty cache":       {func(o *benchcore.Options) { o.Caches = []publish.Cache{""} }, benchcore.OptionCaches, "empty"},
		"duplicate cache":   {func(o *benchcore.Options) { o.Caches = []publish.Cache{"linear", "linear"} }, benchcore.OptionCaches, "linear is listed twice"},
		"linear uniform": {func(o *benchcore.Options) {
			o.Caches, o.Modes, o.SotWVersions = []publish.Cache{publish.LinearCache}, []protocol.Mode{"sotw"}, []publish.VersionStrategy{publish.Uniform}
		}, benchcore.OptionSotWVersions, "uniform needs the snapshot cache"},
		"unknown workload": {func(o *benchcore.Options) { o.Workloads = []string{"cluster-move"} }, benchcore.OptionWorkloads, `unknown workload "cluster-move"`},
		"unknown unprobed": {func(o *benchcore.Options) { o.Unprobed = "live" }, benchcore.OptionUnprobed, "unknown setting (want dead-port or no-endpoints)"},
		"unprobed on demand": {func(o *benchcore.Options) {
			o.Unprobed, o.Client, o.Modes, o.OnDemand = benchcore.UnprobedNoEndpoints, benchcore.ClientEnvoy, []protocol.Mode{"delta"}, []resources.OnDemand{{VirtualHosts: true}}
		}, benchcore.OptionUnprobed, "the on-demand sequence has its own states"},
		"duplicate workload": {func(o *benchcore.Options) { o.Workloads = []string{"route", "endpoint", "route"} }, benchcore.OptionWorkloads, "route is listed twice"},
		"route needs two":    {func(o *benchcore.Options) { o.Clusters, o.Workloads = []int{1, 10}, []string{"route"} }, benchcore.OptionClusters, "the route workload"},
		"remove too many": {func(o *benchcore.Options) {
			o.Clusters, o.Repeat, o.Workloads = []int{3, 10}, 3, []string{"cluster-remove"}
		},
			benchcore.OptionRepeat, "the cluster-remove workload removes one cluster per repeat"},
	} {
		t.Run(name, func(t *testing.T) {
			o := good()
			tc.edit(&o)
			err := o.Validate()
			assertOptionError(t, err, tc.option, tc.want)
			assert.NotContains(t, err.Error(), "--", "the bench names options; the CLI names flags")
		})
	}
	// The rules between options are typed, so a caller can word them.
	o := good()
	o.Clusters, o.Workloads = []int{1, 10}, []string{"route"}
	require.ErrorIs(t, o.Validate(), benchcore.ErrRouteNeedsTwo)
	o = good()
	o.Caches, o.Modes, o.SotWVersions = []publish.Cache{publish.LinearCache}, []protocol.Mode{"sotw"}, []publish.VersionStrategy{publish.Uniform}
	require.ErrorIs(t, o.Validate(), benchcore.ErrUniformNeedsSnapshot)
	o = good()
	o.Modes = []protocol.Mode{"delta"}
	o.SotWVersions = nil // ignored without sotw
	require.NoError(t, o.Validate())
	assert.Equal(t, 1, o.Clients)
	assert.Equal(t, benchcore.DefaultTimeout, o.Timeout)
	assert.Contains(t, o.Out, filepath.Join("experiments", "evidence", "bench"))
	assert.Equal(t, []publish.Cache{publish.SnapshotCache}, o.Caches, "the default cache")
	assert.Equal(t, []string{benchcore.WorkloadEndpoint}, o.Workloads, "the default workload")
	assert.Equal(t, benchcore.UnprobedDeadPort, o.Unprobed, "the default: what every figure before --unprobed used")
	ser, notes := o.Series()
	assert.Equal(t, []string{"delta"}, namesOf(ser))
	assert.Empty(t, notes)
	o = good()
	require.NoError(t, o.Validate())
	ser, notes = o.Series()
	assert.Equal(t, []string{"sotw-uniform", "sotw-per-type", "delta"}, namesOf(ser))
	assert.Empty(t, notes)

	// Both caches: the snapshot series keep their names, uniform is skipped for linear
	// with one note.
	o = good()
	o.Caches = []publish.Cache{publish.SnapshotCache, publish.LinearCache}
	require.NoError(t, o.Validate())
	ser, notes = o.Series()
	assert.Equal(t, []string{"sotw-uniform", "sotw-per-type", "delta", "sotw-per-type/linear", "delta/linear"}, namesOf(ser))
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "sotw-uniform is not run with --cache linear")
	for _, s := range ser {
		assert.NotContains(t, s.File(), "/", "a series names files")
	}
	// Linear alone with both strategies: per-type runs, uniform is a note, not an error.
	o = good()
	o.Caches = []publish.Cache{publish.LinearCache}
	require.NoError(t, o.Validate())
	ser, notes = o.Series()
	assert.Equal(t, []string{"sotw-per-type/linear", "delta/linear"}, namesOf(ser))
	assert.Len(t, notes, 1)
}

func namesOf(s []benchcore.Series) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = x.Name
	}
	return out
}

func TestLogRange(t *testing.T) {
	lo, hi := chart.LogRange([]float64{12, 950})
	assert.Equal(t, 1.0, lo)
	assert.Equal(t, 3.0, hi)
	lo, hi = chart.LogRange([]float64{100})
	assert.Equal(t, 2.0, lo)
	assert.Equal(t, 3.0, hi, "a single decade still has a height")
	lo, hi = chart.LogRange([]float64{0, -1})
	assert.Less(t, lo, hi, "no positive value still gives a usable range")
}

// TestReadOldReport: a bench.json from before the cache and workload axes (the committed
// docs/bench run) reads as the snapshot cache and the endpoint workload, and renders.
func TestReadOldReport(t *testing.T) {
	rep, err := ReadReport(filepath.Join("..", "..", "docs", "bench", "bench.json"))
	require.NoError(t, err)
	require.NotEmpty(t, rep.Configs)
	for _, c := range rep.Configs {
		assert.Equal(t, string(publish.SnapshotCache), c.Cache)
		assert.Equal(t, benchcore.WorkloadEndpoint, c.Workload)
	}
	assert.Equal(t, []string{"snapshot"}, rep.Options.Caches)
	assert.Equal(t, []string{benchcore.WorkloadEndpoint}, rep.Options.Workloads)
	assert.Contains(t, rep.Markdown(), "| endpoint | snapshot | 10000 | delta |")
	assert.Contains(t, svgSeries(t, rep.SVG()), "endpoint-time-sotw-per-type")
}
