package protocol

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// newFleetHarness is newHarness with a snapshot cache that serves every node ID from one
// snapshot (frontend.NewFleetSnapshotCache); the LinearCache variants serve every node
// anyway and are left as they are.
func newFleetHarness(t *testing.T, v variant) *harness {
	h := newHarness(t, v)
	if v.linear() {
		return h
	}
	sc := frontend.NewFleetSnapshotCache(nil)
	sp, err := frontend.NewPublisher(frontend.PublisherConfig{Cache: sc, NodeID: frontend.FleetKey, Recorder: h.rec, Strategy: v.versions})
	require.NoError(t, err)
	h.cache, h.pub = sc, sp
	h.fe = newTransport(t, h.ctx, v, h.cache, h.pub, h.rec)
	h.lis = serve(t, h.fe)
	return h
}

// TestFleetServesEveryNode: three clients with their own node IDs all reach the published
// state and the next one, under either cache, and the first request event of each stream
// names its node, so a reader can tell the proxies apart (lab bench --envoys).
func TestFleetServesEveryNode(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			h := newFleetHarness(t, v)
			set1 := h.publish("initial", resources.State{Version: "1", InventoryPort: portV1, Clusters: 2})
			var clients []*simclient.Client
			for i := range 3 {
				c, err := simclient.New(v.mode, fmt.Sprintf("proxy-%d", i))
				require.NoError(t, err)
				clients = append(clients, c)
				defer h.connect(c)()
			}
			for i, c := range clients {
				h.waitClient(c, fmt.Sprintf("proxy-%d initial", i), func(s simclient.State) bool { return acceptedHashes(s, set1) })
			}
			set2 := h.publish("update", resources.State{Version: "2", InventoryPort: portV1, Clusters: 2, EndpointPorts: map[int]int{1: portV2}})
			for i, c := range clients {
				h.waitClient(c, fmt.Sprintf("proxy-%d update", i), func(s simclient.State) bool { return acceptedHashes(s, set2) })
			}

			ev := h.log.events(t)
			nodes, server := map[int64][]string{}, 0
			for _, e := range ev {
				if e.Event == xdslog.EventRequest && e.Node != "" {
					nodes[e.Stream] = append(nodes[e.Stream], e.Node)
					server = e.Server
				}
			}
			require.Len(t, nodes, 3, "three streams, each naming its node")
			seen := map[string]bool{}
			for stream, ns := range nodes {
				require.Len(t, ns, 1, "stream %d names its node once: %v", stream, ns)
				seen[ns[0]] = true
			}
			assert.Equal(t, map[string]bool{"proxy-0": true, "proxy-1": true, "proxy-2": true}, seen)
			m := xdslog.NewModel(nil)
			for _, e := range ev {
				m.Observe(e)
			}
			for stream, ns := range nodes {
				assert.Equal(t, ns[0], m.Node(server, stream), "a reader maps stream %d to its node", stream)
			}
		})
	}
}

// A snapshot cache keyed on node ID (the default) serves only the node published to: a
// proxy with another ID waits for ever. This is why --envoys needs the fleet cache.
func TestSnapshotCacheKeyedOnNodeServesOnlyThatNode(t *testing.T) {
	v := variants[0]
	h := newHarness(t, v)
	h.publish("initial", resources.State{Version: "1", InventoryPort: portV1})
	other, err := simclient.New(v.mode, "another-proxy")
	require.NoError(t, err)
	defer h.connect(other)()
	h.waitLog("the other proxy's CDS request", func(ev []xdslog.Event) bool {
		return len(filter(ev, ofType("initial", xdslog.EventRequest, "CDS"))) == 1
	})
	ctx, cancel := context.WithTimeout(h.ctx, 300*time.Millisecond)
	defer cancel()
	_, err = other.WaitFor(ctx, func(s simclient.State) bool { return len(s.Accepted[resources.CDS]) > 0 })
	assert.Error(t, err, "nothing is sent to a node with no snapshot")
	assert.Empty(t, filter(h.log.events(t), of("initial", xdslog.EventSend)))
}
