package bench

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/shared/publish"
)

func TestStabilityOf(t *testing.T) {
	st := stabilityOf(map[string]float64{"ack_ms": 1, "cp_cpu_ms": 2}, map[string]float64{"ack_ms": 1.04, "cp_cpu_ms": 1.92}, 12)
	assert.True(t, st.Stable, "4 %% moves hold")
	assert.Equal(t, 12, st.Changes)
	assert.InDelta(t, 0.04, st.Drift["ack_ms"], 1e-9)
	st = stabilityOf(map[string]float64{"ack_ms": 1, "cp_cpu_ms": 2}, map[string]float64{"ack_ms": 1.08, "cp_cpu_ms": 2}, 15)
	assert.False(t, st.Stable, "an 8 %% move does not")
	assert.Equal(t, "15 not stable (ack 8 %)", stabilityCell(&Config{Updates: make([]Sample, 15), Stability: &st}))
	assert.Equal(t, "9", stabilityCell(&Config{Updates: make([]Sample, 9)}), "no check: the count alone")
}

func TestRatioSpread(t *testing.T) {
	a := benchcore.Stat{Median: 2, P25: 1.8, P75: 2.4}
	b := benchcore.Stat{Median: 1, P25: 0.9, P75: 1.2}
	sp := ratioSpread(a, b)
	assert.InDelta(t, 1.5, sp[0], 1e-9, "a's p25 ÷ b's p75")
	assert.InDelta(t, 2.4/0.9, sp[1], 1e-9, "a's p75 ÷ b's p25")
	ratios, spreads := divide(map[string]benchcore.Stat{"ack_ms": a, "resources": {Median: 3, P25: 3, P75: 3}},
		map[string]benchcore.Stat{"ack_ms": b, "resources": {Median: 1, P25: 1, P75: 1}})
	assert.Equal(t, 2.0, ratios["ack_ms"])
	cells := ratioCells(ratios, spreads, []string{"resources", "ack_ms"})
	assert.Equal(t, []string{"3.00x", "2.00x [1.50–2.67x]"}, cells, "a time shows its spread, a count does not")
}

func TestLoadCell(t *testing.T) {
	c := &Config{Updates: []Sample{{LoadAvg: "0.31 0.2 0.1"}, {LoadAvg: "1.25 0.9 0.5"}, {LoadAvg: ""}}}
	assert.Equal(t, "≤ 1.25", loadCell(c))
	assert.Equal(t, "-", loadCell(&Config{Updates: []Sample{{}}}))
}

// TestUntilStable: with UntilStable each sample carries the load it ran in, the
// configuration says whether its medians held, and it measured between Repeat and
// four times Repeat changes; a workload that changes N is measured Repeat times and
// says why.
func TestUntilStable(t *testing.T) {
	rep, _, progress := sweep(t, benchcore.Options{
		Clusters: []int{10}, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes, SotWVersions: []publish.VersionStrategy{publish.PerType},
		Workloads: []string{benchcore.WorkloadEndpoint, benchcore.WorkloadClusterAdd}, Repeat: 3, UntilStable: true,
	})
	for _, c := range rep.Configs {
		require.NotNil(t, c.Stability, c.Series)
		for _, s := range c.Updates {
			assert.Len(t, strings.Fields(s.LoadAvg), 3, "%s: the load average with each change", c.Series)
		}
		if c.Workload == benchcore.WorkloadClusterAdd {
			assert.False(t, c.Stability.Checked)
			assert.Contains(t, c.Stability.Reason, "changes N with every change")
			assert.Len(t, c.Updates, 3)
			continue
		}
		assert.True(t, c.Stability.Checked, c.Series)
		assert.GreaterOrEqual(t, len(c.Updates), 6, "%s: Repeat, then at least one batch", c.Series)
		assert.LessOrEqual(t, len(c.Updates), 12, c.Series)
		assert.Equal(t, len(c.Updates), c.Stability.Changes)
		if !c.Stability.Stable {
			assert.Len(t, c.Updates, 12, "%s: not stable only at the cap", c.Series)
			assert.Contains(t, progress, "medians not stable after 12 changes")
		}
	}
	assert.Contains(t, rep.Markdown(), "| changes | load 1m |")
}
