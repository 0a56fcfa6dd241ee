package protocol

import (
	"context"
	"fmt"
	"testing"
	"time"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
)

var proxies = []string{"proxy-0", "proxy-1", "proxy-2"}

// TestOneStatePerNode: a control plane with a state per node (lab bench --envoys) serves
// each of three clients its own listener port and the same clusters, under either cache;
// a change published to every node reaches each; the first request event of each stream
// names its node and each publish event the node it was for.
func TestOneStatePerNode(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			h, cp := startControlPlaneHarness(t, v, proxies)
			ctx := h.ctx
			assert.Equal(t, proxies, cp.Nodes())

			publishAll := func(step string, s resources.State) map[string]*resources.Set {
				h.rec.SetStep(step)
				sets := map[string]*resources.Set{}
				for i, n := range proxies {
					st := s
					st.ListenerPort = 20100 + i
					set, err := resources.Rebuild(cp.PublisherFor(n).Current(), st)
					require.NoError(t, err)
					require.NoError(t, cp.PublisherFor(n).Publish(ctx, set))
					sets[n] = set
				}
				return sets
			}
			sets1 := publishAll("initial", resources.State{Version: "1", InventoryPort: portV1, Clusters: 2})
			clients := map[string]*simclient.Client{}
			for _, n := range proxies {
				c, err := simclient.New(v.mode, n)
				require.NoError(t, err)
				clients[n] = c
				defer h.connect(c)()
			}
			for i, n := range proxies {
				s := h.waitClient(clients[n], n+" initial", func(s simclient.State) bool { return acceptedHashes(s, sets1[n]) })
				l := s.Accepted[resources.LDS][resources.ListenerName].Resource.(*listener.Listener)
				assert.EqualValues(t, 20100+i, l.GetAddress().GetSocketAddress().GetPortValue(), "%s runs its own listener port", n)
			}
			sets2 := publishAll("update", resources.State{Version: "2", InventoryPort: portV1, Clusters: 2, EndpointPorts: map[int]int{1: portV2}})
			for _, n := range proxies {
				h.waitClient(clients[n], n+" update", func(s simclient.State) bool { return acceptedHashes(s, sets2[n]) })
			}

			ev := h.log.Events(t)
			nodes, server := map[int64][]string{}, 0
			published := map[string][]string{}
			for _, e := range ev {
				switch {
				case e.Event == xdslog.EventRequest && e.Node != "":
					nodes[e.Stream] = append(nodes[e.Stream], e.Node)
					server = e.Server
				case e.Event == xdslog.EventPublish:
					published[e.Step] = append(published[e.Step], e.Node)
				}
			}
			assert.Equal(t, map[string][]string{"initial": proxies, "update": proxies}, published, "a publish event per node")
			require.Len(t, nodes, 3, "three streams, each naming its node")
			seen := map[string]bool{}
			for stream, ns := range nodes {
				require.Len(t, ns, 1, "stream %d names its node once: %v", stream, ns)
				seen[ns[0]] = true
			}
			assert.Len(t, seen, 3)
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

// A proxy whose node ID has no state of its own is served nothing, under either cache:
// the SnapshotCache has no snapshot for it, and the MuxCache no cache.
func TestUnknownNodeIsServedNothing(t *testing.T) {
	for _, v := range []variant{variants[0], variants[3]} {
		t.Run(v.name, func(t *testing.T) {
			h, cp := startControlPlaneHarness(t, v, proxies[:1])
			ctx := h.ctx
			set, err := resources.Build(resources.State{Version: "1", InventoryPort: portV1})
			require.NoError(t, err)
			require.NoError(t, cp.PublisherFor(proxies[0]).Publish(ctx, set))
			assert.Nil(t, cp.PublisherFor("another-proxy"))

			other, err := simclient.New(v.mode, "another-proxy")
			require.NoError(t, err)
			defer h.connect(other)()
			h.waitLog("the other proxy's CDS request", func(ev []xdslog.Event) bool {
				return len(filter(ev, ofType("", xdslog.EventRequest, "CDS"))) == 1
			})
			// Nothing can arrive later either: no publish follows. The short wait only
			// gives a wrong send the chance to show.
			wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer wcancel()
			_, err = other.WaitFor(wctx, func(s simclient.State) bool { return len(s.Accepted[resources.CDS]) > 0 })
			assert.Error(t, err, "nothing is sent to a node with no state")
			assert.Empty(t, filter(h.log.Events(t), of("", xdslog.EventSend)))
		})
	}
}

func TestNodesRefused(t *testing.T) {
	for _, o := range []controlplane.Options{
		{Nodes: []string{"a", "a"}},
		{Nodes: []string{"a", ""}},
		{Nodes: []string{"a"}, NodeID: "b"},
	} {
		o.Mode, o.Addr, o.Recorder = protocol.Delta, "127.0.0.1:0", xdslog.NewRecorder(&xdslogtest.Log{}, protocol.Delta)
		_, err := controlplane.Start(context.Background(), o)
		assert.Error(t, err, fmt.Sprint(o.Nodes))
	}
}
