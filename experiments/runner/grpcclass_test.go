package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/scenario"
)

// An expected Envoy flag means its class for the grpc client, and the flag itself for Envoy.
func TestFlagMeansClassForGRPC(t *testing.T) {
	nc := scenario.RequestExpect{Request: scenario.Request{Path: "/quote/1"}, Status: 503, Flags: "NC"}
	removed := Observation{Client: ClientGRPC, Status: 503, Class: ClassConfigFailure}
	assert.True(t, matches(removed, nc, true))
	assert.False(t, matches(Observation{Client: ClientGRPC, Status: 503, Class: ClassUpstreamFailure}, nc, true))
	assert.False(t, matches(Observation{Client: ClientGRPC, Status: 503, Class: ClassOther}, nc, true))
	uh := nc
	uh.Flags = "UH"
	assert.True(t, matches(Observation{Client: ClientGRPC, Status: 503, Class: ClassUpstreamFailure}, uh, true))

	assert.False(t, matches(Observation{Client: ClientEnvoy, Status: 503, Flags: "NR", Class: ClassConfigFailure}, nc, true),
		"Envoy must carry the flag itself")
	assert.True(t, matches(Observation{Client: ClientEnvoy, Status: 503, Flags: "NC", Class: ClassConfigFailure}, nc, true))
}

// Attempts are spaced at least minAttemptGap apart (a lower bound: a busy machine only
// widens the gaps), and a cancelled context ends the wait.
func TestPacerSpacesAttempts(t *testing.T) {
	var p pacer
	ctx := context.Background()
	require.True(t, p.next(ctx))
	first := p.last
	require.True(t, p.next(ctx))
	assert.GreaterOrEqual(t, p.last.Sub(first), minAttemptGap)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.False(t, p.next(cancelled))
}
