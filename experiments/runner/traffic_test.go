package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// assertUnderLoad checks the under-load scenario's counts beyond its own expectations
// (TestPackEnvoy runs it in both protocols and with both caches, 200 requests/s over 4
// HTTP/2 connections): every request of the run is counted in exactly one step, as an
// answer or a failure, and in the step's timeline; every answer is in its backend's own
// log; the port change moves the load with no failure; no request fails during the
// outage; after the removal only Envoy's 503 NC. The simulated client runs no load.
func assertUnderLoad(t *testing.T, cps map[string]Checkpoint, ev []xdslog.Event, real bool) {
	t.Helper()
	if !real {
		for name, cp := range cps {
			assert.Nil(t, cp.Traffic, "%s: the simulated client has no load", name)
			skipped := false
			for _, c := range cp.Checks {
				skipped = skipped || (c.What == "traffic" && c.Skipped)
			}
			assert.True(t, skipped, "%s: its traffic check is listed as skipped", name)
		}
		return
	}
	total := 0
	for name, cp := range cps {
		require.NotNil(t, cp.Traffic, name)
		tr := cp.Traffic
		sum := tr.OK
		for _, n := range tr.Failures {
			sum += n
		}
		assert.Equal(t, tr.Requests, sum, "%s: every request is an answer or a failure", name)
		assert.Equal(t, "http2", tr.Protocol)
		assert.Equal(t, 4, tr.Connections)
		assert.Zero(t, tr.Unlogged, "%s: every answer is in its backend's own log", name)
		assert.Zero(t, tr.Misattributed, "%s: and in the log of the backend its body names", name)
		require.NotNil(t, tr.Timeline, name)
		inTimeline := 0
		for _, s := range tr.Timeline.Series {
			for _, n := range s {
				inTimeline += n
			}
		}
		assert.Equal(t, tr.Requests, inTimeline, "%s: the timeline holds every request", name)
		total += tr.Requests
	}
	// The steps' counts are contiguous: together they are every request the load sent,
	// each with its own dataplane event (or a share of a folded one).
	probes := 0
	var summaries int
	for _, e := range ev {
		switch {
		case e.Event == xdslog.EventDataPlane && e.Probe == xdslog.ProbeLoad:
			probes += max(1, e.Represents)
		case e.Event == xdslog.EventTraffic:
			summaries++
		}
	}
	assert.Equal(t, total, probes, "every request of the load is in xds.log once")
	assert.Equal(t, len(cps), summaries, "one traffic summary per step")

	mv := cps["port-change"].Traffic.Move
	require.NotNil(t, mv, "port-change moves the load from v1 to v2")
	assert.Equal(t, "v1", mv.From)
	assert.Equal(t, "v2", mv.To)
	require.NotNil(t, mv.AllNewMS, "every answer after some point is v2")
	assert.Positive(t, cps["port-change"].Traffic.ByBackend["v2"])
	cpr := cps["control-plane-restart"].Traffic
	assert.Positive(t, cpr.Requests)
	assert.Empty(t, cpr.Failures, "no failure during the outage")
	assert.Equal(t, cpr.Requests, cpr.ByBackend["v1"])
	rm := cps["remove-cluster"].Traffic
	assert.Positive(t, rm.Failures["503 NC"], "Envoy answers 503 NC once the cluster is gone")
	for k := range rm.Failures {
		assert.Equal(t, "503 NC", k, "after the removal only Envoy's 503 NC")
	}
	require.NotNil(t, rm.Move, "remove-cluster moves the load from v1 to Envoy's 503 NC")
	assert.Equal(t, "503 NC", rm.Move.To)
	assert.NotNil(t, rm.Move.AllNewMS)
	assert.Less(t, rm.MaxMS, float64(load.DefaultTimeout.Milliseconds()), "no request hung until the timeout")
	assert.Positive(t, cps["restore"].Traffic.ByBackend["v1"], "then v1 answers")
}

// TestLoadIsRefusedWithoutEnvoy: a load needs a listener; the simulated client has none.
func TestLoadIsRefusedWithoutEnvoy(t *testing.T) {
	_, err := Execute(t.Context(), Options{Mode: protocol.SotW, Client: ClientSim, Out: t.TempDir(), Load: Load{Rate: 10}})
	require.Error(t, err)
	var oe *option.Error
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, OptionLoad, oe.Option)
	assert.Contains(t, err.Error(), "needs real Envoy")
	_, err = Execute(t.Context(), Options{Mode: protocol.SotW, Client: ClientEnvoy, Out: t.TempDir(), Load: Load{Rate: 1e6}})
	require.Error(t, err)
}

// TestNackStormUnderLoad runs the SotW NACK storm (nack-policies: an invalid route held
// for two seconds) under 200 requests/s over 4 HTTP/2 connections, with the resend
// policy and with hold: in both, no request fails during the storm (Envoy keeps its
// last good route) and every answer comes from v1; resend re-sends hundreds of times,
// hold never. The storm's p99 and Envoy's CPU are logged for docs/running.md (measured,
// never asserted).
func TestNackStormUnderLoad(t *testing.T) {
	envoytest.Require(t)
	sc, err := scenario.Builtin("nack-policies")
	require.NoError(t, err)
	nacks := map[sotw.NackPolicy]int{}
	for _, policy := range []sotw.NackPolicy{sotw.Resend, sotw.Hold} {
		t.Run(string(policy), func(t *testing.T) {
			dir, err := scenarioRun(t, sc, Options{Mode: protocol.SotW, Client: ClientEnvoy, NackPolicy: policy,
				Load: Load{Rate: 200, Connections: 4, Protocol: load.HTTP2}})
			require.NoError(t, err)
			cps := passedSteps(t, dir, sc)
			storm := cps["storm"]
			require.NotNil(t, storm.Traffic)
			assert.Positive(t, storm.Traffic.Requests)
			assert.Empty(t, storm.Traffic.Failures, "no request fails while the invalid route is NACKed")
			assert.Equal(t, storm.Traffic.Requests, storm.Traffic.ByBackend["v1"], "the last good route keeps serving v1")
			require.NotNil(t, storm.CPU)
			require.NotNil(t, storm.CPU.EnvoyMS)
			nacks[policy] = storm.NacksInStep
			t.Logf("%s storm under load: %d NACKs, %d requests, p50 %.2f ms, p99 %.2f ms, max %.2f ms, Envoy CPU %.0f ms, workbench CPU %.0f ms",
				policy, storm.NacksInStep, storm.Traffic.Requests, storm.Traffic.P50MS, storm.Traffic.P99MS, storm.Traffic.MaxMS,
				*storm.CPU.EnvoyMS, storm.CPU.WorkbenchMS)
		})
	}
	if len(nacks) == 2 {
		assert.Greater(t, nacks[sotw.Resend], 100, "resend: a storm")
		assert.Zero(t, nacks[sotw.Hold], "hold: silence until the next publish")
	}
}
