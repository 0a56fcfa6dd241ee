package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// TestTeachingUnderLoad runs the teaching scenario with 200 requests/s over 4 HTTP/2
// connections through real Envoy: every response is counted in the step it was sent in;
// no request fails while the control plane is down (last known good); after the
// cluster's removal every answer is Envoy's 503 NC; and each step's summary is in
// xds.log.
func TestTeachingUnderLoad(t *testing.T) {
	envoy.RequireOrSkip(t)
	sc, err := scenario.Builtin("teaching")
	require.NoError(t, err)
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			dir, err := scenarioRun(t, sc, Options{Mode: mode, Client: ClientEnvoy,
				Load: Load{Rate: 200, Connections: 4, Protocol: load.HTTP2}})
			require.NoError(t, err)
			cps := passedSteps(t, dir, sc)
			for name, cp := range cps {
				require.NotNil(t, cp.Traffic, name)
				sum := cp.Traffic.OK
				for _, n := range cp.Traffic.Failures {
					sum += n
				}
				assert.Equal(t, cp.Traffic.Requests, sum, "%s: every request is an answer or a failure", name)
				assert.Equal(t, "http2", cp.Traffic.Protocol)
				assert.Zero(t, cp.Traffic.Unlogged, "%s: every answer is in its backend's own log", name)
				assert.Zero(t, cp.Traffic.Misattributed, "%s: and in the log of the backend its body names", name)
				require.NotNil(t, cp.Traffic.Timeline, name)
				inTimeline := 0
				for _, s := range cp.Traffic.Timeline.Series {
					for _, n := range s {
						inTimeline += n
					}
				}
				assert.Equal(t, cp.Traffic.Requests, inTimeline, "%s: the timeline holds every request", name)
			}
			mv := cps["port-change"].Traffic.Move
			require.NotNil(t, mv, "port-change moves the load from v1 to v2")
			require.NotNil(t, mv.AllNewMS, "every answer after some point is v2")
			assert.GreaterOrEqual(t, *mv.AllNewMS, 0.0)
			cpr := cps["control-plane-restart"].Traffic
			assert.Positive(t, cpr.Requests)
			assert.Empty(t, cpr.Failures, "no failure during the outage")
			assert.Equal(t, cpr.Requests, cpr.ByBackend["v1"])
			rm := cps["remove-cluster"].Traffic
			for k := range rm.Failures {
				assert.Equal(t, "503 NC", k, "after the removal only Envoy's 503 NC")
			}
			// Requests sent in restore before the cluster is back still get 503 NC.
			for k := range cps["restore"].Traffic.Failures {
				assert.Equal(t, "503 NC", k)
			}
			assert.Positive(t, cps["restore"].Traffic.ByBackend["v1"], "then v1 answers")
			var summaries int
			for _, e := range logEvents(t, dir) {
				if e.Event == xdslog.EventTraffic {
					summaries++
					require.NotNil(t, e.Traffic)
				}
			}
			assert.Equal(t, len(sc.Steps), summaries, "one traffic summary per step")
		})
	}
}

// TestLoadIsRefusedWithoutEnvoy: a load needs a listener; the simulated client has none.
func TestLoadIsRefusedWithoutEnvoy(t *testing.T) {
	_, err := Execute(t.Context(), Options{Mode: xdslog.ModeSotW, Client: ClientSim, Out: t.TempDir(), Load: Load{Rate: 10}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--load needs real Envoy")
	_, err = Execute(t.Context(), Options{Mode: xdslog.ModeSotW, Client: ClientEnvoy, Out: t.TempDir(), Load: Load{Rate: 1e6}})
	require.Error(t, err)
}
