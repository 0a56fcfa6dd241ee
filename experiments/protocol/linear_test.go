package protocol

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// startInitial publishes version 1 with clusters clusters (step "initial"), connects a
// new client and waits until it has accepted that state and ACKed every send.
func (h *harness) startInitial(clusters int) (client *simclient.Client, set *resources.Set, stop func()) {
	h.t.Helper()
	client, err := simclient.New(h.v.mode, "")
	require.NoError(h.t, err)
	set = h.publish("initial", resources.State{Version: "1", InventoryPort: portV1, Clusters: clusters})
	stop = h.connect(client)
	h.waitClient(client, "initial state", func(s simclient.State) bool { return acceptedHashes(s, set) })
	h.waitLog("initial ACKs", ackedAll("initial"))
	return client, set, stop
}

// TestOrderedADSWithTheMux: with the LinearCaches behind a MuxCache, SotW ADS still
// pushes in make-before-break order (CDS before EDS, LDS before RDS) when one publish
// changes all four types, as it does with the snapshot cache. The library's ordered ADS
// (sotwserver.WithOrderedADS) sends from one channel in the order the caches answer; the
// snapshot cache answers its watches in type order, and the LinearPublisher updates the
// caches in resources.Types order (CDS, EDS, LDS, RDS), so the pushes come out the same.
func TestOrderedADSWithTheMux(t *testing.T) {
	for _, v := range variants {
		if v.mode != protocol.SotW {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			h := newHarness(t, v)
			client, set1, stop := h.startInitial(2)
			defer stop()

			// One publish changing every type: a third cluster (CDS, its route: RDS), a new
			// endpoint for cluster 0 (EDS, pushed at once to the existing subscription) and
			// a new listener port (LDS).
			set2 := h.publish("all-change", resources.State{Version: "2", InventoryPort: portV1, Clusters: 3,
				ListenerPort: resources.DefaultListener + 1, EndpointPorts: map[int]int{0: portV2}})
			require.Len(t, set2.ChangedTypes(set1), 4)
			h.waitClient(client, "new state", func(s simclient.State) bool { return acceptedHashes(s, set2) })
			ev := h.waitLog("all-change ACKs", ackedAll("all-change"))
			var order []string
			for _, s := range filter(ev, of("all-change", xdslog.EventSend)) {
				order = append(order, s.Type)
			}
			first := func(typ string) int { return slices.Index(order, typ) }
			for _, typ := range []string{"CDS", "EDS", "LDS", "RDS"} {
				require.GreaterOrEqual(t, first(typ), 0, "%s pushed (sends %v)", typ, order)
			}
			assert.Less(t, first("CDS"), first("EDS"), "CDS before EDS (sends %v)", order)
			assert.Less(t, first("LDS"), first("RDS"), "LDS before RDS (sends %v)", order)
		})
	}
}

// TestOneOfNAssignments: N=3 clusters, one endpoint changes. With the LinearCache the EDS
// response holds only the changed assignment, in SotW as in delta (EDS is not a
// full-state type, so the library sends what changed); with the snapshot cache a SotW
// EDS response holds all three. Either way the client keeps the other two unchanged.
func TestOneOfNAssignments(t *testing.T) {
	for _, v := range variants {
		if v.name == "sotw-uniform-resend" {
			continue // re-sends every type at each label; the EDS response is the same as per-type
		}
		t.Run(v.name, func(t *testing.T) {
			h := newHarness(t, v)
			client, set1, stop := h.startInitial(3)
			defer stop()

			set2 := h.publish("one-endpoint", resources.State{Version: "2", InventoryPort: portV1, Clusters: 3, EndpointPorts: map[int]int{1: portV2}})
			changed := resources.ScaledClusterName(1)
			st := h.waitClient(client, "changed endpoint", func(s simclient.State) bool { return acceptedHashes(s, set2) })
			ev := h.waitLog("EDS ACK", func(ev []xdslog.Event) bool {
				return len(filter(ev, ofType("one-endpoint", xdslog.EventAck, "EDS"))) >= 1
			})
			sends := filter(ev, of("one-endpoint", xdslog.EventSend))
			require.Len(t, sends, 1, "only EDS is sent")
			require.Equal(t, "EDS", sends[0].Type)
			if v.linear() || v.mode == protocol.Delta {
				require.Len(t, sends[0].Resources, 1, "only the changed assignment")
				assert.Equal(t, changed, sends[0].Resources[0].Name)
			} else {
				assert.Len(t, sends[0].Resources, 3, "the snapshot cache sends the type's whole subscription")
			}
			require.Len(t, st.Accepted[resources.EDS], 3, "the client still holds all three assignments")
			for _, r := range set1.ByType[resources.EDS].All() {
				if r.Name != changed {
					assert.Equal(t, r.Hash, st.Accepted[resources.EDS][r.Name].Hash, "%s untouched", r.Name)
				}
			}
		})
	}
}
