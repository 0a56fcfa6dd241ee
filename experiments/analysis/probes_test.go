package analysis

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// probesFixture is a hand-written log: initial sends two request probes (one without a
// probe field, as older logs have), port-change a traffic window whose successes are
// sampled (represents 50) around a 503 NC burst and one probe nothing answered, and
// control-plane-restart (no step event) outage probes.
const probesFixture = "testdata/probes/xds.log"

func TestProbesOfAWindow(t *testing.T) {
	ev, st, err := xdslog.ReadFile(probesFixture)
	require.NoError(t, err)
	require.Zero(t, st.Skipped)
	s := Summarize(ev)

	p := s.Step("port-change").Probes
	require.NotNil(t, p)
	// Four sampled successes of 50 each, six failures one line each, one request.
	assert.Equal(t, 4*50+6+1, p.Probes)
	assert.Equal(t, 4*50+1, p.OK)
	assert.Equal(t, 6, p.Failed)
	assert.Equal(t, ProbeKinds{Request: 1, Window: 4*50 + 6}, p.Kinds)
	assert.Equal(t, map[string]int{"503 NC": 5, "0 no-response": 1}, p.Failures)
	assert.Equal(t, map[string]int{"v1": 100, "v2": 101}, p.Backends)
	assert.Equal(t, map[string]int{"envoy": 207}, p.Clients)
	assert.False(t, p.Simulated)
	// From the step event (10:00:01.000) to the first failure (.120) and the last (.140).
	require.NotNil(t, p.FirstFailureMS)
	assert.InDelta(t, 120.0, *p.FirstFailureMS, 1e-9)
	assert.InDelta(t, 140.0, *p.LastFailureMS, 1e-9)
	assert.InDelta(t, 20.0, *p.ErrorWindowMS, 1e-9)
	// The latest event is the last sampled success at .300.
	assert.InDelta(t, 300.0, p.StepMS, 1e-9)
	// The step's last observation is its request probe (logged after the window, answered
	// inside it), not the window's last sample.
	require.NotNil(t, s.Step("port-change").DataPlane)
	assert.Equal(t, "r-port-change-1", s.Step("port-change").DataPlane.RequestID)

	// No step event: the window is measured from the step's first event (.010).
	o := s.Step("control-plane-restart").Probes
	require.NotNil(t, o)
	assert.Equal(t, 50+3+50, o.Probes)
	assert.Equal(t, ProbeKinds{Outage: 103}, o.Kinds)
	assert.Equal(t, map[string]int{"503 UF": 1, "404 NR": 1, "503": 1}, o.Failures)
	assert.InDelta(t, 40.0, *o.FirstFailureMS, 1e-9)
	assert.InDelta(t, 60.0, *o.LastFailureMS, 1e-9)
	assert.InDelta(t, 20.0, *o.ErrorWindowMS, 1e-9)
	// Outage probes stand in for the last observation when a step sent no request.
	assert.Equal(t, "o-5", s.Step("control-plane-restart").DataPlane.RequestID)

	i := s.Step("initial").Probes
	require.NotNil(t, i)
	assert.Equal(t, Probes{Probes: 2, OK: 2, Kinds: ProbeKinds{Request: 2}, Backends: map[string]int{"v1": 2},
		Clients: map[string]int{"envoy": 2}, StepMS: 12}, *i)
}

// TestProbesOfAnOldLog: data-plane events written before the probe field (the committed
// compare testdata) are requests, one probe each.
func TestProbesOfAnOldLog(t *testing.T) {
	log := `{"ts":"2026-12-01T09:18:28.863407756Z","event":"step","mode":"sotw","step":"initial","server":1}
{"ts":"2026-12-01T09:18:28.868432349Z","event":"dataplane","mode":"sotw","step":"initial","server":1,"request_id":"sotw-initial-1-1","status":200,"backend":"v1","upstream":"127.0.0.1:28971","client":"simulated","expected":"200 from v1","correct":true}
{"ts":"2026-12-01T09:18:28.870099314Z","event":"step","mode":"sotw","step":"remove-cluster","server":1}
{"ts":"2026-12-01T09:18:28.871257874Z","event":"dataplane","mode":"sotw","step":"remove-cluster","server":1,"request_id":"sotw-remove-cluster-1-1","status":503,"flags":"NC","client":"simulated","expected":"503 NC","correct":true}
`
	ev, _, err := xdslog.Read(strings.NewReader(log))
	require.NoError(t, err)
	s := Summarize(ev)
	p := s.Step("initial").Probes
	require.NotNil(t, p)
	assert.Equal(t, ProbeKinds{Request: 1}, p.Kinds)
	assert.Equal(t, 1, p.Probes)
	assert.True(t, p.Simulated, "client simulated")
	assert.Nil(t, p.FirstFailureMS, "nothing failed")

	r := s.Step("remove-cluster").Probes
	require.NotNil(t, r)
	assert.Equal(t, ProbeKinds{Request: 1}, r.Kinds)
	assert.Equal(t, map[string]int{"503 NC": 1}, r.Failures)
	assert.InDelta(t, 1.158, *r.FirstFailureMS, 1e-9)
	assert.InDelta(t, 0.0, *r.ErrorWindowMS, 1e-9)
	// An expected 503 is still a failed probe: Probes counts answers, not expectations.
	assert.Equal(t, 0, r.OK)
}

// TestProbeOddInput: nonsense weights count once, huge ones are capped, and a step's
// failure keys and backends stay bounded however many distinct ones a log names.
func TestProbeOddInput(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"ts":"2026-12-01T10:00:00Z","event":"dataplane","mode":"sotw","step":"s","status":200,"represents":-7}` + "\n")
	b.WriteString(`{"ts":"2026-12-01T10:00:00Z","event":"dataplane","mode":"sotw","step":"s","status":200,"represents":9000000000000000000}` + "\n")
	b.WriteString(`{"ts":"2026-12-01T10:00:00Z","event":"dataplane","mode":"sotw","step":"s","status":200,"represents":9000000000000000000}` + "\n")
	for i := range 40 {
		b.WriteString(`{"ts":"2026-12-01T10:00:00Z","event":"dataplane","mode":"sotw","step":"s","status":500,"probe":"weird","flags":"F` + strings.Repeat("x", i) + `"}` + "\n")
	}
	ev, _, err := xdslog.Read(strings.NewReader(b.String()))
	require.NoError(t, err)
	p := Summarize(ev).Step("s").Probes
	require.NotNil(t, p)
	assert.Equal(t, 1+2*maxRepresents+40, p.Probes)
	assert.Equal(t, 40, p.Kinds.Other)
	assert.Len(t, p.Failures, maxProbeKeys)
	assert.Equal(t, 40-(maxProbeKeys-1), p.Failures[OtherKey])
	assert.Equal(t, map[string]int{"unknown": 1 + 2*maxRepresents}, p.Backends)
	assert.Equal(t, map[string]int{"unnamed": p.Probes}, p.Clients)
}
