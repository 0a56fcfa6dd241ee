package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/syncbuf"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// processesUnder lists the pids whose command line names dir: the Envoys a sweep
// started there (each runs with -c dir/bootstrap-....yaml).
func processesUnder(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc to look for Envoys in: %v", err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		if bytes.Contains(b, []byte(dir)) {
			out = append(out, pid)
		}
	}
	return out
}

// TestSweepEnvoyFleet: three real Envoys at N = 10, each its own node with its own
// listener, under both caches and both protocols (every series). Every change reaches
// every Envoy: its own stream ACKs the awaited types at its own publisher's versions,
// and a request through its own listener is answered by the new backend; the version
// distribution ends with all three on the new version; what was sent is three times
// what one client is sent; and no Envoy outlives the sweep. Required under CI=true.
func TestSweepEnvoyFleet(t *testing.T) {
	envoytest.Require(t)
	const k = 3
	out := &syncbuf.Buffer{}
	o := benchcore.Options{
		Clusters: []int{10}, Client: benchcore.ClientEnvoy, Envoys: k, Modes: benchcore.DefaultModes, SotWVersions: benchcore.DefaultVersions,
		Caches: []publish.Cache{publish.SnapshotCache, publish.LinearCache}, Repeat: 2,
		Out: t.TempDir(), Progress: out, Timeout: 2 * time.Minute,
	}
	// Whatever happens, no Envoy is left behind: the sweep stops each configuration's
	// Envoys before the next starts, and Pdeathsig would end them with the test binary.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for len(processesUnder(t, o.Out)) > 0 && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		assert.Empty(t, processesUnder(t, o.Out), "Envoys still running after the sweep")
	})
	rep, err := Run(context.Background(), o)
	require.NoError(t, err, "progress:\n%s", out.String())
	assert.Empty(t, processesUnder(t, o.Out), "every Envoy is reaped when Run returns")

	require.Len(t, rep.Configs, 5, "3 snapshot series + 2 linear")
	assert.Equal(t, k, rep.Options.Envoys)
	checkStructure(t, rep, k)
	checkFiles(t, rep, o.Out)
	for _, c := range rep.Configs {
		name := c.Series + " N=" + itoa(c.N)
		assert.Equal(t, k, c.Envoys, name)
		assert.Equal(t, k, c.Clients, name)
		assert.Equal(t, k, c.StreamsOpened, "%s: one stream per Envoy, none reconnected", name)
		require.Len(t, c.Proxies, k, name)
		ports := map[int]bool{}
		for i, p := range c.Proxies {
			assert.Equal(t, FleetNodeID(i), p.Node, name)
			assert.NotZero(t, p.ListenerPort, name)
			ports[p.ListenerPort] = true
			assert.FileExists(t, filepath.Join(o.Out, p.Bootstrap))
			assert.FileExists(t, filepath.Join(o.Out, p.EnvoyLog))
			bs, err := os.ReadFile(filepath.Join(o.Out, p.Bootstrap))
			require.NoError(t, err)
			assert.Contains(t, string(bs), p.Node, "%s: the bootstrap names its node", p.Bootstrap)
		}
		assert.Len(t, ports, k, "%s: every Envoy has its own listener port", name)

		forEachFleetSample(t, o.Out, c, k, FleetNodeID, func(i int, s Sample, what string) {
			backend := []string{"endpoint-a", "endpoint-b"}[i%2]
			for _, p := range s.Proxies {
				who := what + " " + p.Node
				assert.Positive(t, p.AckMS, who)
				assert.Positive(t, p.PublishedMS, who)
				assert.LessOrEqual(t, p.PublishedMS, s.PublishMS, "%s: published within the step's publish", who)
				assert.LessOrEqual(t, p.AckMS, s.AckMS, "%s: the sample's ACK is the last Envoy's", who)
				// The data plane: the new backend answered through its own listener.
				require.NotNil(t, p.DataPlaneMS, "%s: the change never showed through its listener", who)
				require.NotNil(t, p.Answer, who)
				assert.Equal(t, benchcore.Answer{Status: 200, Backend: backend, Server: "envoy"}, *p.Answer, who)
				assert.Positive(t, p.Polls, who)
				assert.LessOrEqual(t, *p.DataPlaneMS, *s.DataPlaneMS, "%s: the sample's data-plane time is the last Envoy's", who)
				require.NotNil(t, p.EnvoyRSS, who)
				assert.Positive(t, *p.EnvoyRSS, who)
				require.NotNil(t, p.EnvoyCPUMS, who)
			}
			// The version distribution ends with all K on the new version, by ACK and by
			// the data plane, and starts with none.
			d := s.Distribution
			require.NotNil(t, d, what)
			assert.Equal(t, s.Version, d.To, what)
			if i > 0 {
				assert.Equal(t, prevVersion(c, i), d.From, what)
			}
			require.Len(t, d.AckedMS, k, what)
			require.Len(t, d.AnsweringMS, k, what)
			acked, _ := d.At(d.AckedMS[k-1])
			assert.Equal(t, k, acked, what)
			_, answering := d.At(d.AnsweringMS[k-1])
			assert.Equal(t, k, answering, what)
			acked, answering = d.At(0)
			assert.Zero(t, acked+answering, "%s: no Envoy ran the change at the publish", what)
			// The sums: RSS and CPU over the Envoys.
			var rss int64
			for _, p := range s.Proxies {
				rss += *p.EnvoyRSS
			}
			require.NotNil(t, s.EnvoyRSS, what)
			assert.Equal(t, rss, *s.EnvoyRSS, "%s: the sample's RSS is the sum", what)
		})
		for _, key := range []string{"ack_ms", "data_plane_ms", "ack_own_ms", "data_plane_own_ms", "envoy_rss", "envoy_cpu_ms"} {
			p, ok := c.PerProxy[key]
			require.True(t, ok, "%s: per_proxy has %s", name, key)
			assert.Equal(t, k*rep.Options.Repeat, p.Count, "%s %s: over the Envoys x the repeats", name, key)
			assert.LessOrEqual(t, p.P50, p.P99)
			assert.LessOrEqual(t, p.P99, p.Max)
		}
	}

	md, err := os.ReadFile(filepath.Join(o.Out, "bench.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "### Per proxy: 3 Envoys")
	assert.Contains(t, string(md), "| endpoint | snapshot | 10 | delta | update-1 | 1→2 | data plane |")
	assert.Contains(t, out.String(), "Version distribution")
	svg, err := os.ReadFile(filepath.Join(o.Out, versionsSVG))
	require.NoError(t, err)
	groups := svgSeries(t, svg)
	for _, c := range rep.Configs {
		for _, by := range []string{"ack", "data-plane"} {
			assert.Contains(t, groups, "versions-endpoint-N10-"+SeriesID(c.Series)+"-"+by)
		}
	}
}

// forEachFleetSample checks what every fleet sample of c must show, whatever the client
// kind: K proxies in node order (nodeID), each on its own stream (named by its own node
// in xds.log), which ACKed every awaited type at its own publisher's version in that
// step; then it calls check with the sample's index and a label for the kind's own
// assertions.
func forEachFleetSample(t *testing.T, dir string, c *Config, k int, nodeID func(int) string, check func(i int, s Sample, what string)) {
	t.Helper()
	name := c.Series + " N=" + itoa(c.N)
	ev, _, err := xdslog.ReadFile(filepath.Join(dir, c.Log))
	require.NoError(t, err)
	nodeOf := map[int64]string{}
	for _, e := range ev {
		if e.Event == xdslog.EventRequest && e.Node != "" {
			nodeOf[e.Stream] = e.Node
		}
	}
	for i, s := range append([]Sample{c.Initial}, c.Updates...) {
		what := fmt.Sprintf("%s %s", name, s.Step)
		require.Len(t, s.Proxies, k, what)
		for j, p := range s.Proxies {
			who := what + " " + p.Node
			assert.Equal(t, nodeID(j), p.Node, what)
			assert.Equal(t, p.Node, nodeOf[p.Stream], "%s: the stream it ACKed on is its own", who)
			require.NotEmpty(t, s.Expected, who)
			for _, typ := range s.Expected {
				v := p.Versions[typ]
				require.NotEmpty(t, v, "%s: no version for %s", who, typ)
				assert.True(t, ackedIn(ev, s.Step, p.Stream, typ, v), "%s: no ACK of %s@%s on stream %d in the log", who, typ, v, p.Stream)
			}
		}
		check(i, s, what)
	}
}

// prevVersion is the version published before update i of c.
func prevVersion(c *Config, i int) string {
	if i == 1 {
		return c.Initial.Version
	}
	return c.Updates[i-2].Version
}

// ackedIn reports whether the log has an ACK of typ at version on stream in step.
func ackedIn(ev []xdslog.Event, step string, stream int64, typ, version string) bool {
	for _, e := range ev {
		if e.Event == xdslog.EventAck && e.Step == step && e.Stream == stream && e.Type == typ && e.SentVersion == version {
			return true
		}
	}
	return false
}

func TestDistribution(t *testing.T) {
	dp := func(v float64) *float64 { return &v }
	d := distributionOf([]ProxySample{{AckMS: 3, DataPlaneMS: dp(5)}, {AckMS: 1, DataPlaneMS: dp(2)}, {AckMS: 2, DataPlaneMS: dp(8)}}, "4", "5")
	assert.Equal(t, &Distribution{From: "4", To: "5", AckedMS: []float64{1, 2, 3}, AnsweringMS: []float64{2, 5, 8}}, d)
	for _, tc := range []struct {
		t                float64
		acked, answering int
	}{{0, 0, 0}, {1, 1, 0}, {2, 2, 1}, {4, 3, 1}, {5, 3, 2}, {100, 3, 3}} {
		a, b := d.At(tc.t)
		assert.Equal(t, [2]int{tc.acked, tc.answering}, [2]int{a, b}, "at %v ms", tc.t)
	}
	s, ok := spread(d.AckedMS)
	assert.True(t, ok)
	assert.Equal(t, 2.0, s)
	_, ok = spread(nil)
	assert.False(t, ok)
}

// TestFleetReportRenders: a report of 3 Envoys renders its per-proxy table, its version
// distribution and versions.svg (well-formed, one group per series and line), and reads
// back.
func TestFleetReportRenders(t *testing.T) {
	dp := func(v float64) *float64 { return &v }
	rss := func(v int64) *int64 { return &v }
	sample := func(step, from, to string, base float64) Sample {
		s := Sample{Step: step, Version: to}
		for i := 0; i < 3; i++ {
			s.Proxies = append(s.Proxies, ProxySample{Node: FleetNodeID(i), AckMS: base + float64(i), DataPlaneMS: dp(base + 2 + float64(i)), EnvoyRSS: rss(int64(60e6 + i*1e6))})
		}
		s.AckMS, s.DataPlaneMS = base+2, dp(base+4)
		s.Distribution = distributionOf(s.Proxies, from, to)
		return s
	}
	c := &Config{Series: "delta", Cache: "snapshot", Workload: benchcore.WorkloadEndpoint, Mode: "delta", N: 10, Clients: 3, Client: benchcore.ClientEnvoy, Envoys: 3,
		PollIntervalMS: 6, PollIntervalAckedMS: 2,
		Initial: sample("initial", "", "1", 20), Updates: []Sample{sample("update-1", "1", "2", 1), sample("update-2", "2", "3", 3)}}
	c.Summary, c.PerProxy = summarize(c.Updates), perProxySummary(c.Updates)
	rep := &Report{Options: RunOptions{Clusters: []int{10}, Clients: 1, Envoys: 3, Client: benchcore.ClientEnvoy, Repeat: 2}, Configs: []*Config{c}}
	md := rep.Markdown()
	assert.Contains(t, md, "### Per proxy: 3 Envoys")
	// ACK p50 over 1,2,3,3,4,5 = 3; p99 = max = 5; spread 2 in both repeats.
	assert.Contains(t, md, "| endpoint | snapshot | 10 | delta | 3 | 3.00 | 5.00 | 5.00 | 2.00 |")
	assert.Contains(t, md, "| endpoint | snapshot | 10 | delta | update-1 | 1→2 | ACK | 1.00 | 2.00 | 3.00 |")
	assert.Contains(t, md, "| endpoint | snapshot | 10 | delta | initial | 1 | data plane | 22.0 | 23.0 | 24.0 |")
	assert.Contains(t, md, "60.00 MB–62.00 MB")
	assert.Contains(t, md, "]("+versionsSVG+")")
	var text bytes.Buffer
	rep.WriteTable(&text)
	assert.Contains(t, text.String(), "Version distribution")
	assert.Contains(t, text.String(), "3 Envoys")
	groups := svgSeries(t, rep.VersionsSVG())
	assert.Equal(t, []string{"versions-endpoint-N10-delta-ack", "versions-endpoint-N10-delta-data-plane"}, groups)
	assert.Equal(t, []float64{2, 3, 4}, medianCurve(c, false), "median over the repeats of the k-th Envoy's ACK")

	dir := t.TempDir()
	require.NoError(t, rep.WriteFiles(dir))
	assert.FileExists(t, filepath.Join(dir, versionsSVG))
	back, err := ReadReport(filepath.Join(dir, "bench.json"))
	require.NoError(t, err)
	assert.Equal(t, c.PerProxy, back.Configs[0].PerProxy)
	assert.Equal(t, c.Updates[1].Distribution, back.Configs[0].Updates[1].Distribution)

	// One Envoy: no fleet tables, no versions.svg.
	c.Envoys, rep.Options.Envoys = 0, 0
	assert.NotContains(t, rep.Markdown(), "Per proxy")
	assert.NotContains(t, rep.Markdown(), versionsSVG)
	dir = t.TempDir()
	require.NoError(t, rep.WriteFiles(dir))
	assert.NoFileExists(t, filepath.Join(dir, versionsSVG))
}

func TestValidateEnvoys(t *testing.T) {
	for name, tc := range map[string]struct {
		o            benchcore.Options
		option, want string
		rule         error
	}{
		"too many":     {benchcore.Options{Envoys: benchcore.MaxEnvoys + 1}, benchcore.OptionEnvoys, "envoys 11: outside 1-10", nil},
		"negative":     {benchcore.Options{Envoys: -1}, benchcore.OptionEnvoys, "envoys -1: outside 1-10", nil},
		"with clients": {benchcore.Options{Envoys: 3, Clients: 2, Client: benchcore.ClientSim}, benchcore.OptionEnvoys, "envoys 3: several Envoys and fan-out clients cannot be combined (clients 2)", benchcore.ErrFleetWithFanOut},
		"with sim":     {benchcore.Options{Envoys: 2, Client: benchcore.ClientSim}, benchcore.OptionEnvoys, "envoys 2: more than one Envoy needs the envoy client (got sim)", benchcore.ErrFleetNeedsEnvoy},
	} {
		t.Run(name, func(t *testing.T) {
			o := tc.o
			o.Clusters, o.Modes, o.Repeat = []int{10}, []protocol.Mode{"delta"}, 1
			err := o.Validate()
			var oe *benchcore.OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.option, oe.Option)
			assert.Equal(t, tc.want, err.Error())
			if tc.rule != nil {
				assert.ErrorIs(t, err, tc.rule)
			}
		})
	}
	o := benchcore.Options{Clusters: []int{10}, Modes: []protocol.Mode{"delta"}, Repeat: 1, Client: benchcore.ClientEnvoy}
	require.NoError(t, o.Validate())
	assert.Equal(t, 1, o.Envoys, "one Envoy by default")
	o.Envoys = benchcore.MaxEnvoys
	require.NoError(t, o.Validate())
	assert.True(t, strings.HasPrefix(FleetNodeID(9), "bench-envoy-"))
}

func TestPercentiles(t *testing.T) {
	// Nearest rank: p50 of 1..10 is 5 (half the values do not exceed it), p99 of ten
	// values the max.
	p, ok := benchcore.PercentilesOf([]float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1})
	require.True(t, ok)
	assert.Equal(t, benchcore.Percentiles{P50: 5, P99: 10, Max: 10, Count: 10}, p)
	// 200 values 1..200: p50 = 100, p99 = 198.
	var v []float64
	for i := 200; i >= 1; i-- {
		v = append(v, float64(i))
	}
	p, _ = benchcore.PercentilesOf(v)
	assert.Equal(t, benchcore.Percentiles{P50: 100, P99: 198, Max: 200, Count: 200}, p)
	// Odd count and repeated values: always one of the values, never an interpolation.
	p, _ = benchcore.PercentilesOf([]float64{3.5, 1.25, 3.5})
	assert.Equal(t, benchcore.Percentiles{P50: 3.5, P99: 3.5, Max: 3.5, Count: 3}, p)
	p, _ = benchcore.PercentilesOf([]float64{7})
	assert.Equal(t, benchcore.Percentiles{P50: 7, P99: 7, Max: 7, Count: 1}, p)
	_, ok = benchcore.PercentilesOf(nil)
	assert.False(t, ok, "no values, no percentiles")

	// Over the Envoys x the repeats: 3 Envoys, 2 updates.
	dp := func(v float64) *float64 { return &v }
	updates := []Sample{
		{Proxies: []ProxySample{{AckMS: 1, DataPlaneMS: dp(4)}, {AckMS: 2, DataPlaneMS: dp(5), PublishedMS: 1}, {AckMS: 9, DataPlaneMS: dp(12), PublishedMS: 2}}},
		{Proxies: []ProxySample{{AckMS: 3}, {AckMS: 4, DataPlaneMS: dp(6), PublishedMS: 1}, {AckMS: 5, DataPlaneMS: dp(7), PublishedMS: 2}}},
	}
	sum := perProxySummary(updates)
	assert.Equal(t, benchcore.Percentiles{P50: 3, P99: 9, Max: 9, Count: 6}, sum["ack_ms"])
	assert.Equal(t, benchcore.Percentiles{P50: 6, P99: 12, Max: 12, Count: 5}, sum["data_plane_ms"], "a missing time is left out, not counted as 0")
	// From each one's own publish: 1, 1, 7, 3, 3, 3 and 4, 4, 10, 5, 5.
	assert.Equal(t, benchcore.Percentiles{P50: 3, P99: 7, Max: 7, Count: 6}, sum["ack_own_ms"])
	assert.Equal(t, benchcore.Percentiles{P50: 5, P99: 10, Max: 10, Count: 5}, sum["data_plane_own_ms"])
	_, ok = sum["envoy_rss"]
	assert.False(t, ok)
}
