package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// logCounts is, per step, how many responses were sent and how many ACKs came, as one
// xds log recorded them.
func logCounts(t *testing.T, path string) (sends, acks map[string]int) {
	t.Helper()
	ev, _, err := xdslog.ReadFile(path)
	require.NoError(t, err, path)
	sends, acks = map[string]int{}, map[string]int{}
	for _, e := range ev {
		switch e.Event {
		case xdslog.EventSend:
			sends[e.Step]++
		case xdslog.EventAck:
			acks[e.Step]++
		}
	}
	return sends, acks
}

// checkThroughTap: every series ran directly and through the tap, the "+tap" one has
// its figures and a tap log that saw the sends and ACKs its control plane's log did,
// step by step, and the report sets the two side by side.
func checkThroughTap(t *testing.T, rep *Report, dir string, series int) {
	t.Helper()
	require.Len(t, rep.Configs, 2*series)
	for i := 0; i < len(rep.Configs); i += 2 {
		d, c := rep.Configs[i], rep.Configs[i+1]
		require.Empty(t, d.Error, d.Series)
		require.Empty(t, c.Error, c.Series)
		// Interleaved: each series, then its twin through the tap, at the same N.
		assert.Equal(t, d.Series+"+tap", c.Series)
		assert.Equal(t, d.N, c.N)
		assert.Empty(t, d.Through)
		assert.Empty(t, d.TapLog)
		assert.Equal(t, benchcore.ThroughTap, c.Through)
		require.NotEmpty(t, c.TapLog)
		assert.Equal(t, "xds-"+strings.ReplaceAll(c.Series, "/", "-")+"-N"+itoa(c.N)+".tap.log", c.TapLog)
		require.Len(t, c.Updates, rep.Options.Repeat, c.Series)
		assert.Contains(t, c.Summary, "ack_ms", c.Series)
		for _, s := range c.Updates {
			assert.Positive(t, s.AckMS, "%s %s", c.Series, s.Step)
			assert.Positive(t, s.Acks, "%s %s", c.Series, s.Step)
		}
		cpSends, cpAcks := logCounts(t, filepath.Join(dir, c.Log))
		tapSends, tapAcks := logCounts(t, filepath.Join(dir, c.TapLog))
		assert.Positive(t, cpSends["initial"], c.Series)
		assert.Equal(t, cpSends, tapSends, "%s: sends per step, control plane's log vs the tap's", c.Series)
		assert.Equal(t, cpAcks, tapAcks, "%s: ACKs per step, control plane's log vs the tap's", c.Series)
		// The tap's log says it is a tap's.
		ev, _, err := xdslog.ReadFile(filepath.Join(dir, c.TapLog))
		require.NoError(t, err)
		require.NotEmpty(t, ev)
		assert.Equal(t, xdslog.EventSession, ev[0].Event)
	}
	require.Len(t, rep.TapRatios, series)
	for _, x := range rep.TapRatios {
		assert.True(t, strings.HasSuffix(x.Series, "+tap"), x.Series)
		assert.Contains(t, x.Ratios, "ack_ms", x.Series)
	}
	md, err := os.ReadFile(filepath.Join(dir, "bench.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "Through the tap ÷ direct")
	got, err := ReadReport(filepath.Join(dir, "bench.json"))
	require.NoError(t, err)
	assert.Len(t, got.TapRatios, series)
	assert.Equal(t, []string{benchcore.ThroughDirect, benchcore.ThroughTap}, got.Options.Through)
}

func TestThroughTapSim(t *testing.T) {
	rep, dir, _ := sweep(t, benchcore.Options{
		Clusters: []int{10}, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes, SotWVersions: []publish.VersionStrategy{publish.PerType},
		Through: []string{benchcore.ThroughDirect, benchcore.ThroughTap}, Repeat: 2,
	})
	checkThroughTap(t, rep, dir, 2)
	checkStructure(t, rep, 1)
	for _, c := range rep.Configs {
		if c.Through == benchcore.ThroughTap {
			assert.Equal(t, "in-process: inside cp_cpu_ms", c.TapCPU)
			assert.Nil(t, c.Updates[0].TapCPUMS)
		}
	}
}

func TestThroughTapEnvoy(t *testing.T) {
	envoytest.Require(t)
	rep, dir, progress := sweep(t, benchcore.Options{
		Clusters: []int{10}, Client: benchcore.ClientEnvoy, Modes: benchcore.DefaultModes, SotWVersions: []publish.VersionStrategy{publish.PerType},
		Through: []string{benchcore.ThroughDirect, benchcore.ThroughTap}, Repeat: 2,
	})
	t.Log(progress)
	checkThroughTap(t, rep, dir, 2)
	for _, c := range rep.Configs {
		for _, s := range c.Updates {
			require.NotNil(t, s.DataPlaneMS, "%s %s", c.Series, s.Step)
		}
	}
}

// TestThroughTapSubprocess runs the tap as the CLI does, a `lab tap` subprocess (built
// here), and reads its CPU from its process clock.
func TestThroughTapSubprocess(t *testing.T) {
	testenv.SkipIfShort(t, testenv.NeedsLabBinary)
	bin := filepath.Join(t.TempDir(), "lab")
	build := exec.Command("go", "build", "-o", bin, "github.com/xds-workbench/lab/cmd/lab")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	rep, dir, _ := sweep(t, benchcore.Options{
		Clusters: []int{10}, Client: benchcore.ClientSim, Modes: []protocol.Mode{protocol.Delta},
		Through: []string{benchcore.ThroughDirect, benchcore.ThroughTap}, TapCommand: []string{bin}, Repeat: 2,
	})
	checkThroughTap(t, rep, dir, 1)
	c := rep.Configs[1]
	assert.Equal(t, "subprocess: tap_cpu_ms", c.TapCPU)
	for _, s := range c.Updates {
		require.NotNil(t, s.TapCPUMS, s.Step)
		assert.GreaterOrEqual(t, *s.TapCPUMS, 0.0)
	}
	assert.FileExists(t, filepath.Join(dir, strings.TrimSuffix(c.TapLog, ".tap.log")+".tap.out"))
}
