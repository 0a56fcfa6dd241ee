package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/shared/protocol"
)

// TestStopGraceCoversSotWQuadraticTeardown: the SotW grace grows with N² and leaves 3x
// the teardown measured at N = 30,000 (12.3 s) up to there; delta keeps the linear grace.
func TestStopGraceCoversSotWQuadraticTeardown(t *testing.T) {
	assert.Equal(t, 20*time.Second, benchcore.StopGrace(protocol.Delta, 10000))
	assert.Equal(t, 110*time.Second, benchcore.StopGrace(protocol.Delta, 100000))
	measured := func(n int) time.Duration {
		return time.Duration(12.3 * float64(n) * float64(n) / (30000 * 30000) * float64(time.Second))
	}
	for _, n := range []int{10, 1000, 30000} {
		g := benchcore.StopGrace(protocol.SotW, n)
		assert.GreaterOrEqual(t, g, benchcore.StopGrace(protocol.Delta, n), "N=%d", n)
		assert.GreaterOrEqual(t, g, 3*measured(n), "N=%d: grace %s", n, g)
	}
	assert.Equal(t, 310*time.Second, benchcore.StopGrace(protocol.SotW, 100000))
}

// TestReportListsEnvoyExitTimes: bench.md names each configuration's exit times.
func TestReportListsEnvoyExitTimes(t *testing.T) {
	r := &Report{Configs: []*Config{
		{Workload: benchcore.WorkloadEndpoint, Series: "sotw-per-type/indexed", N: 30000, EnvoyExits: []benchcore.EnvoyExit{{MS: 12334.5}}},
		{Workload: benchcore.WorkloadEndpoint, Series: "sotw-per-type/linear", N: 100000, EnvoyExits: []benchcore.EnvoyExit{{MS: 315000, KilledInTeardown: true}}},
		{Workload: benchcore.WorkloadEndpoint, Series: "delta/indexed", N: 30000, EnvoyExits: []benchcore.EnvoyExit{{MS: 560}, {MS: 1200}}},
		{Workload: benchcore.WorkloadEndpoint, Series: "delta/linear", N: 10},
	}}
	require.Equal(t, []string{
		"endpoint sotw-per-type/indexed N=30000: gone 12.3 s after /quitquitquit",
		"endpoint sotw-per-type/linear N=100000: killed after 315.0 s, still in its SotW teardown",
		"endpoint delta/indexed N=30000: gone 0.6 s after /quitquitquit, gone 1.2 s after /quitquitquit",
	}, r.exits())
	assert.True(t, strings.Contains(r.Markdown(), "### Envoy exit"), "bench.md has the section")
}
