package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/grpcclient/grpcclienttest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/syncbuf"
)

// TestSweepGRPCFleet: three grpc-go client processes (this test binary re-executed as
// `lab grpc-client`) at N = 10, SotW under both version strategies, behind the fleet
// seam the Envoys use. Every change reaches every client: its own stream (named by its
// own node) ACKs the awaited types at its own publisher's versions, an RPC through its
// front door is answered by the new backend, its RSS is read; and no client outlives
// the sweep. Once with the unprobed clusters on the dead port (both version strategies),
// once with no endpoint at all (--unprobed no-endpoints: grpc-go accepts the empty
// assignments, or the step would fail on its NACK).
func TestSweepGRPCFleet(t *testing.T) {
	for _, tc := range []struct {
		unprobed string
		versions []publish.VersionStrategy
	}{{benchcore.UnprobedDeadPort, benchcore.DefaultVersions}, {benchcore.UnprobedNoEndpoints, []publish.VersionStrategy{publish.PerType}}} {
		t.Run(tc.unprobed, func(t *testing.T) { sweepGRPCFleet(t, tc.unprobed, tc.versions) })
	}
}

func sweepGRPCFleet(t *testing.T, unprobed string, versions []publish.VersionStrategy) {
	const k = 3
	out := &syncbuf.Buffer{}
	o := benchcore.Options{
		Clusters: []int{10}, Client: benchcore.ClientGRPC, Envoys: k, GRPCCommand: grpcclienttest.Command(t),
		Modes: []protocol.Mode{protocol.SotW}, SotWVersions: versions, Caches: []publish.Cache{publish.SnapshotCache},
		Workloads: []string{benchcore.WorkloadEndpoint}, Repeat: 2, Out: t.TempDir(), Progress: out, Timeout: 2 * time.Minute,
		Unprobed: unprobed,
	}
	rep, err := Run(context.Background(), o)
	require.NoError(t, err, "progress:\n%s", out.String())
	assert.Empty(t, processesUnder(t, o.Out), "every grpc client is reaped when Run returns")
	assert.Contains(t, out.String(), "client: 3 grpc-go clients (lab grpc-client), each its own node, state and front door", "the header names the clients")
	if unprobed == benchcore.UnprobedDeadPort {
		assert.Empty(t, rep.Options.Unprobed, "the default is not written")
	} else {
		assert.Equal(t, unprobed, rep.Options.Unprobed)
	}

	require.Len(t, rep.Configs, len(versions), "one configuration per version strategy")
	for _, c := range rep.Configs {
		name := c.Series + " N=" + itoa(c.N)
		require.Empty(t, c.Error, name)
		assert.Equal(t, benchcore.ClientGRPC, c.Client, name)
		assert.Equal(t, k, c.Envoys, name)
		assert.Equal(t, k, c.StreamsOpened, "%s: one stream per client, none reconnected", name)
		require.Len(t, c.Proxies, k, name)
		for i, p := range c.Proxies {
			assert.Equal(t, GRPCNodeID(i), p.Node, name)
			assert.FileExists(t, filepath.Join(o.Out, p.EnvoyLog), "%s: the client's own log", name)
		}
		forEachFleetSample(t, o.Out, c, k, GRPCNodeID, func(i int, s Sample, what string) {
			backend := []string{"endpoint-a", "endpoint-b"}[i%2]
			for _, p := range s.Proxies {
				who := what + " " + p.Node
				// The data plane: the new backend answered the RPC through its front door.
				require.NotNil(t, p.DataPlaneMS, "%s: the change never showed through its front door", who)
				require.NotNil(t, p.Answer, who)
				assert.Equal(t, benchcore.Answer{Status: 200, Backend: backend}, *p.Answer, who)
				require.NotNil(t, p.EnvoyRSS, who)
				assert.Positive(t, *p.EnvoyRSS, "%s: the client process's RSS", who)
				assert.Nil(t, p.EnvoyRxBytes, "%s: grpc-go exposes no wire byte counters", who)
			}
			if i > 0 {
				require.NotNil(t, s.Distribution, what)
				acked, answering := s.Distribution.At(1e12)
				assert.Equal(t, k, acked, what)
				assert.Equal(t, k, answering, what)
			}
		})
		assert.Equal(t, k*o.Repeat, c.PerProxy["ack_ms"].Count, "%s: ACK percentiles over the clients x the repeats", name)
	}
}
