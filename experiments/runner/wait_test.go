package runner

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/syncbuf"
)

// TestZeroWaitIsNotAnnounced: a "wait: 0s" step (the on-demand scenarios' steps of
// expectations only) prints no "waiting 0s"; a real wait is announced with its length.
func TestZeroWaitIsNotAnnounced(t *testing.T) {
	sc, err := scenario.Parse("waits.yaml", []byte(`name: waits
description: a zero wait and a real one
backends: [v1]
resources:
  l:
    listener: {route: r}
  r:
    route:
      routes: [{path: /quote, cluster: c}]
  c:
    cluster: {backends: [v1]}
steps:
  - name: initial
    publish: {upsert: [l, r, c]}
  - name: look
    wait: 0s
    expect:
      requests: [{path: /quote, status: 200, backend: v1}]
  - name: pause
    wait: 20ms
`))
	require.NoError(t, err)
	progress := &syncbuf.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = Execute(ctx, Options{Mode: protocol.Delta, Client: ClientSim, Scenario: sc, Out: t.TempDir(),
		StepTimeout: 20 * time.Second, Progress: progress})
	require.NoError(t, err, progress.String())
	out := progress.String()
	assert.Contains(t, out, "step 2/3 look\n")
	assert.Contains(t, out, "look ok (")
	assert.NotContains(t, out, "waiting 0s")
	assert.Contains(t, out, "  waiting 20ms\n")
}
